/**
 * Durable single-row claims per second (a `NonceStore` claim: one `INSERT … ON CONFLICT` under a
 * unique key, committed), sequential and 8-way concurrent, on PGlite (on disk) and PostgreSQL,
 * side by side with the limit measured on the same database in the same run: a raw client
 * inserting one row per statement (`pg` for PostgreSQL, the PGlite API for PGlite).
 *
 * PostgreSQL is used when DATABASE_URL is set (each run in a fresh schema, dropped afterwards).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import * as PgliteClient from "../adapters/pglite/PgliteClient.ts"
import * as Database from "../adapters/sql/Database.ts"
import * as Migrations from "../adapters/sql/Migrations.ts"
import * as SqlNonceStore from "../adapters/sql/NonceStore.ts"
import { migrations } from "../adapters/sql/schema/Migrations.ts"
import { NonceStore } from "../core/ports/NonceStore.ts"

const seconds = Number(process.env.BENCH_SECONDS ?? 3)
const databaseUrl = process.env.DATABASE_URL || undefined

interface Result {
  readonly label: string
  readonly sequential: number
  readonly concurrent8: number
}

/** Runs `op(i)` in `workers` loops for `seconds`; returns operations per second. */
const rate = async (workers: number, op: (i: number) => Promise<unknown>): Promise<number> => {
  let n = 0
  const deadline = performance.now() + seconds * 1000
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < deadline) await op(n++)
    })
  )
  return (n / (performance.now() - t0)) * 1000
}

/** Runs `op(i)` in `workers` fibers for `seconds`; returns operations per second. */
const rateEffect = <E>(workers: number, op: (i: number) => Effect.Effect<unknown, E>): Effect.Effect<number, E> =>
  Effect.gen(function* () {
    let n = 0
    const deadline = performance.now() + seconds * 1000
    const t0 = performance.now()
    yield* Effect.forEach(
      Array.from({ length: workers }),
      () => Effect.whileLoop({ while: () => performance.now() < deadline, body: () => op(n++), step: () => {} }),
      { concurrency: "unbounded", discard: true }
    )
    return (n / (performance.now() - t0)) * 1000
  })

/** Accord's SQL nonce store on a client layer, driven from fibers as a server would. */
const accord = async (
  label: string,
  client: Layer.Layer<import("@effect/sql/SqlClient").SqlClient, unknown>
): Promise<Result> => {
  const program = Effect.gen(function* () {
    yield* Migrations.run(migrations)
    const store = yield* NonceStore
    const claim = (scope: string) => (i: number) =>
      store.claim({ scope, nonce: `nonce-${i}-${scope}`, now: Date.now(), expiresAt: Date.now() + 600_000 })
    const sequential = yield* rateEffect(1, claim("seq"))
    const concurrent8 = yield* rateEffect(8, claim("c8"))
    return { label, sequential, concurrent8 }
  })
  return Effect.runPromise(
    Effect.scoped(
      program.pipe(Effect.provide(SqlNonceStore.layer.pipe(Layer.provideMerge(client))))
    ) as Effect.Effect<Result>
  )
}

const rawPg = async (url: string, schema: string): Promise<Result> => {
  const pool = new pg.Pool({ connectionString: url, max: 8 })
  await pool.query(`CREATE TABLE ${schema}.raw_claims (k text PRIMARY KEY)`)
  const insert = (prefix: string) => (i: number) =>
    pool.query(`INSERT INTO ${schema}.raw_claims (k) VALUES ($1)`, [`${prefix}${i}`])
  const sequential = await rate(1, insert("s"))
  const concurrent8 = await rate(8, insert("c"))
  await pool.end()
  return { label: "raw pg insert loop (limit)", sequential, concurrent8 }
}

const rawPglite = async (dir: string): Promise<Result> => {
  const db = new PGlite(dir)
  await db.query(`CREATE TABLE raw_claims (k text PRIMARY KEY)`)
  const insert = (prefix: string) => (i: number) =>
    db.query(`INSERT INTO raw_claims (k) VALUES ($1)`, [`${prefix}${i}`])
  const sequential = await rate(1, insert("s"))
  const concurrent8 = await rate(8, insert("c"))
  await db.close()
  return { label: "raw PGlite insert loop (limit)", sequential, concurrent8 }
}

const print = (title: string, rows: ReadonlyArray<Result>) => {
  console.log(`\n${title}`)
  const limit = rows[0]!
  for (const r of rows) {
    console.log(
      `  ${r.label.padEnd(34)} sequential ${Math.round(r.sequential).toString().padStart(6)}/s (${((r.sequential / limit.sequential) * 100).toFixed(0).padStart(3)}%)` +
        `   8-way ${Math.round(r.concurrent8).toString().padStart(6)}/s (${((r.concurrent8 / limit.concurrent8) * 100).toFixed(0).padStart(3)}%)`
    )
  }
}

const main = async () => {
  console.log(
    `durable single-row claims, ${seconds} s per figure, node ${process.version}, ${new Date().toISOString()}`
  )

  const base = mkdtempSync(join(tmpdir(), "accord-bench-"))
  try {
    const raw = await rawPglite(join(base, "raw"))
    const ours = await accord("Accord NonceStore on PGlite", PgliteClient.layer({ dataDir: join(base, "accord") }))
    print("PGlite (on disk, embedded default)", [raw, ours])
  } finally {
    rmSync(base, { recursive: true, force: true })
  }

  if (databaseUrl === undefined) {
    console.log("\nPostgreSQL: SKIPPED (set DATABASE_URL)")
    return
  }
  const schema = `accord_bench_${Date.now()}`
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  try {
    const raw = await rawPg(databaseUrl, schema)
    const url = new URL(databaseUrl)
    url.searchParams.set("options", `-csearch_path=${schema}`)
    const ours = await accord("Accord NonceStore on PostgreSQL", Database.layerPg(Redacted.make(url.toString())))
    print(`PostgreSQL (${Database.describeStorage({ _tag: "Postgres", url: Redacted.make(databaseUrl) })})`, [
      raw,
      ours
    ])
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    await admin.end()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
