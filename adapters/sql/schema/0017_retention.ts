/**
 * Retention sweeps: an index on the intake keys' creation time, so the sweep of
 * keys past their 24 hour retention (`adapters/sql/ActionLedger.ts` `sweepIntakeKeys`) reads only
 * the expired rows. The nonce sweep already has `accord_nonces_expiry` (0002).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [`CREATE INDEX accord_intake_keys_created ON accord_intake_keys (created_at)`]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
