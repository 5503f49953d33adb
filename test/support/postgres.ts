/**
 * PostgreSQL for tests: the server named by `DATABASE_URL` (CI's `.ci/run` sets it), one schema per
 * layer so tests never see each other's rows: a fresh one dropped afterwards, or a migrated one from
 * this process's pool (`layerPooledSchema`, emptied between holders, see `databasePool.ts`). A run's
 * schemas share a prefix, and the global setup's teardown drops the pooled ones the run kept.
 * Without `DATABASE_URL` the PostgreSQL suites are skipped, and say so loudly.
 */
import { randomUUID } from "node:crypto"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { MigrationError } from "@effect/sql/Migrator"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as SqlClientTag from "@effect/sql/SqlClient"
import * as Database from "../../adapters/sql/Database.ts"
import * as Migrations from "../../adapters/sql/Migrations.ts"
import { migrations } from "../../adapters/sql/schema/Migrations.ts"
import * as Citus from "./citus.ts"
import * as DatabasePool from "./databasePool.ts"

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

/** Set by vitest's global setup to this run's id; the test workers inherit it. */
export const runVariable = "ACCORD_TEST_RUN"

/**
 * Connections a test's client opens at most. Every client of every worker shares one database
 * (and its `max_connections`, 100 by default) with the servers the tests start, so a test's client
 * holds few; a schema's creation and removal need one.
 */
export const testPoolSize = 4

/** The prefix of every schema this run creates (`accord_test_<run>_`). */
export const runSchemaPrefix = (): string => `accord_test_${process.env[runVariable] ?? "solo"}_`

/** Drops every schema of this run still on the server (the pools keep theirs to the end). */
export const dropRunSchemas = (): Promise<void> =>
  databaseUrl === undefined
    ? Promise.resolve()
    : Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(Layer.build(Database.layerPg(Redacted.make(databaseUrl), { poolSize: 1 })), (context) => {
            const sql = Context.get(context, SqlClientTag.SqlClient)
            return Effect.flatMap(
              sql<{ readonly name: string }>`
                SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, ${runSchemaPrefix()})`,
              Effect.forEach((row) => sql`DROP SCHEMA ${sql(row.name)} CASCADE`, { discard: true })
            )
          })
        )
      )

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
  const schema = `${runSchemaPrefix()}${randomUUID().replaceAll("-", "").slice(0, 16)}`
  return Effect.flatMap(Layer.build(Database.layerPg(Redacted.make(url), { poolSize: 1 })), (context) => {
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
  Layer.unwrapScoped(Effect.map(freshSchemaUrl(url), (schema) => Database.layerPg(schema, { poolSize: testPoolSize })))

const schemaPools = new Map<string, () => Layer.Layer<SqlClient.SqlClient, SqlError | MigrationError>>()

/**
 * A `SqlClient` on PostgreSQL in a migrated schema no other layer holds, with no rows but the
 * migrations': from this process's pool (a new schema, created and migrated, and on a Citus run its
 * tables distributed, when none is idle).
 */
export const layerPooledSchema = (url: string): Layer.Layer<SqlClient.SqlClient, SqlError | MigrationError> => {
  const pool =
    schemaPools.get(url) ??
    DatabasePool.make(() =>
      Layer.provideMerge(Citus.layerDistribute, Layer.provideMerge(Migrations.layer(migrations), layerFreshSchema(url)))
    )
  schemaPools.set(url, pool)
  return pool()
}

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
