/**
 * PostgreSQL for tests: the server named by `DATABASE_URL` (CI's `.ci/run` sets it), one fresh
 * schema per layer so runs never collide, dropped afterwards. Without `DATABASE_URL` the
 * PostgreSQL suites are skipped, and say so loudly.
 */
import { randomUUID } from "node:crypto"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as SqlClientTag from "@effect/sql/SqlClient"
import * as Database from "../../adapters/sql/Database.ts"

export const databaseUrl: string | undefined = process.env["DATABASE_URL"] || undefined

/** The line that says why the PostgreSQL suites are skipped. */
export const skippedNotice = "PostgreSQL suites SKIPPED: DATABASE_URL is not set"

/**
 * Set (to "1") by vitest's global setup once it printed `skippedNotice` for the whole run; the
 * test workers inherit it and say nothing more.
 */
export const noticeSaidVariable = "ACCORD_TEST_POSTGRES_SKIP_SAID"

/** Prints `skippedNotice` once for a run (vitest's global setup) when the PostgreSQL suites skip. */
export const noticeForRun = (): void => {
  if (databaseUrl !== undefined) return
  console.warn(skippedNotice)
  process.env[noticeSaidVariable] = "1"
}

const warned = new Set<string>()
/**
 * Prints why a PostgreSQL suite is skipped, once per suite and test file (while the file is
 * collected, so the quiet console lets it through), unless the run said so once already.
 */
export const warnIfSkipped = (suite: string): void => {
  if (databaseUrl === undefined && process.env[noticeSaidVariable] !== "1" && !warned.has(suite)) {
    warned.add(suite)
    console.warn(`PostgreSQL suites SKIPPED (${suite}): DATABASE_URL is not set`)
  }
}

/** `search_path` set through the startup `options` parameter. */
export const inSchema = (url: string, schema: string): Redacted.Redacted<string> => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-csearch_path=${schema}`)
  return Redacted.make(parsed.toString())
}

/**
 * A fresh schema on the PostgreSQL server at `url`, created now and dropped (with everything in it)
 * when the scope closes; the URL that puts a client into it, for code that opens its own clients.
 */
export const freshSchemaUrl = (url: string): Effect.Effect<Redacted.Redacted<string>, SqlError, Scope.Scope> => {
  const schema = `accord_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  return Effect.flatMap(Layer.build(Database.layerPg(Redacted.make(url))), (context) => {
    const sql = Context.get(context, SqlClientTag.SqlClient)
    return Effect.as(
      Effect.acquireRelease(sql`CREATE SCHEMA ${sql(schema)}`, () =>
        Effect.orDie(sql`DROP SCHEMA ${sql(schema)} CASCADE`)
      ),
      inSchema(url, schema)
    )
  })
}

/** A `SqlClient` on PostgreSQL in a schema of its own, created on build and dropped on release. */
export const layerFreshSchema = (url: string): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.unwrapScoped(Effect.map(freshSchemaUrl(url), Database.layerPg))

/**
 * The environment a spawned server inherits, without `DATABASE_URL`: a test that gives it a data
 * directory means the embedded database, never the shared CI database itself.
 */
export const envWithoutDatabase = (): NodeJS.ProcessEnv => {
  const { DATABASE_URL: _, ...env } = process.env
  return env
}

/** Runs `f` with the URL of a fresh schema on `DATABASE_URL` (dropped afterwards), or without one. */
export const withFreshSchema = <A>(f: (url: string | undefined) => Promise<A>): Promise<A> =>
  databaseUrl === undefined
    ? f(undefined)
    : Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(freshSchemaUrl(databaseUrl), (url) => Effect.promise(() => f(Redacted.value(url))))
        )
      )
