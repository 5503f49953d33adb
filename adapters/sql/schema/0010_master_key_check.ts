/**
 * The master-key check: one row holding a known label sealed under the master key at the first
 * start (`adapters/sql/MasterKeyCheck.ts`). Never the key, nor anything it could be derived from
 * short of breaking AES-256-GCM. Every later start opens it, so a server started with another key
 * refuses to run instead of failing later on every stored connector secret.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_master_key_check (
    id smallint PRIMARY KEY CHECK (id = 1),
    sealed text NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now()
  )`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
