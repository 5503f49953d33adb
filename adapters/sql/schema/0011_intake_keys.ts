/**
 * Callers' intake idempotency keys: one row per `(workspace_id, idempotency_key)`,
 * inserted in the transaction that creates the action, so concurrent intakes under one key create
 * one action. `created_at` lets a claim past the retention (24 hours, `core/connector/IntakeKey.ts`)
 * expire: it is then ignored and replaced by the next intake under that key.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_intake_keys (
    workspace_id text NOT NULL,
    idempotency_key text NOT NULL,
    body_hash text NOT NULL,
    action_request_id text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (workspace_id, idempotency_key)
  )`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
