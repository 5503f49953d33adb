/**
 * Versioned schema migrations, run at start on PostgreSQL and PGlite alike, with
 * `@effect/sql/Migrator` (not `PgMigrator`, whose schema dump shells out to `pg_dump`).
 *
 * What `Migrator` guarantees on `pg` (read in `@effect/sql/src/Migrator.ts`): in one transaction
 * it takes `LOCK TABLE <table> IN ACCESS EXCLUSIVE MODE`, reads the latest applied id, inserts
 * the pending ids and runs them. A second process blocks on that lock until the first commits,
 * then sees the new latest id and applies nothing; if its insert still collides, `Migrator` maps
 * the error to "locked" and returns `[]`. What it does not guarantee: the migrations table is
 * created beforehand, outside that transaction, with `SELECT '<table>'::regclass` falling back
 * to a plain `CREATE TABLE`, so two processes starting against an empty database race and the
 * loser fails. Hence `run` first takes a transaction-scoped advisory lock and creates the table
 * with `IF NOT EXISTS` under it; `Migrator`'s own transaction becomes a savepoint inside ours.
 *
 * The transaction is opened through the one SQL transaction boundary (`Transactor.sqlTransaction`):
 * a `COMMIT` that fails (the connection lost as the schema is committed) is a `SqlError` the start
 * reports in one line, like any other storage fault at start, not a defect.
 *
 * Rules for migrations: ids only grow (`Migrator` skips any id not above the latest applied);
 * everything runs in one transaction (no `CREATE INDEX CONCURRENTLY`); SQL must run on
 * PostgreSQL 15.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { unboundedTransaction } from "./SqlSupport.ts"
import { sqlTransaction } from "./Transactor.ts"

/**
 * Keyed `"<id>_<name>"`, e.g. `"0001_init"`; the numeric prefix orders them.
 */
export type Migrations = Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>>

/** A schema migration recorded as applied: its number, name and when. */
export interface AppliedMigration {
  readonly id: number
  readonly name: string
}

/**
 * Named for Accord so it is recognisable in a shared PostgreSQL database.
 */
export const table = "accord_migrations"

/** Advisory lock key: ASCII "ACCD". Advisory locks are per database, not per schema. */
const lockKey = 0x41434344

const migrate = Migrator.make({})

/**
 * Applies the pending migrations; returns the ones applied by this call (`[]` if none).
 */
export const run = (
  migrations: Migrations
): Effect.Effect<ReadonlyArray<AppliedMigration>, Migrator.MigrationError | SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const applied = yield* sqlTransaction(
      sql,
      Effect.gen(function* () {
        // A migration (and the wait for another process's) may take longer than a request's bound
        // on statements (`Database`'s statement timeout and answer deadline): it runs without one.
        yield* sql.unsafe(unboundedTransaction)
        yield* sql`SELECT pg_advisory_xact_lock(${lockKey})`
        // Same definition Migrator would create; it then finds the table and skips creating it.
        yield* sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
        migration_id integer primary key,
        created_at timestamp with time zone not null default now(),
        name text not null
      )`
        return yield* migrate({ loader: Migrator.fromRecord(migrations), table })
      })
    )
    return applied.map(([id, name]) => ({ id, name }))
  })

/**
 * Runs the migrations when the layer is built, before anything that needs the schema.
 */
export const layer = (
  migrations: Migrations
): Layer.Layer<never, Migrator.MigrationError | SqlError, SqlClient.SqlClient> => Layer.effectDiscard(run(migrations))

/**
 * The applied migrations, oldest first (`[]` before the first run), for readiness checks.
 */
export const appliedVersions: Effect.Effect<
  ReadonlyArray<AppliedMigration>,
  SqlError,
  SqlClient.SqlClient
> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [found] = yield* sql<{ readonly present: boolean }>`SELECT to_regclass(${table}) IS NOT NULL AS present`
  if (found?.present !== true) return []
  const rows = yield* sql<{ readonly migration_id: number; readonly name: string }>`
      SELECT migration_id, name FROM ${sql(table)} ORDER BY migration_id`.withoutTransform
  return rows.map((row) => ({ id: row.migration_id, name: row.name }))
})
