/**
 * Bulk import jobs of the Direct API: one row per `(workspace_id, id)`, whose counts and resume
 * point (`lines_committed`, `bytes_committed`) are updated in the transaction that writes each
 * batch of the job's events. `errors` holds the first refused lines (line number, code, path).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_imports (
    workspace_id text NOT NULL,
    id text NOT NULL,
    state text NOT NULL,
    lines_committed bigint NOT NULL DEFAULT 0,
    bytes_committed bigint NOT NULL DEFAULT 0,
    accepted bigint NOT NULL DEFAULT 0,
    duplicates bigint NOT NULL DEFAULT 0,
    refused bigint NOT NULL DEFAULT 0,
    errors jsonb NOT NULL DEFAULT '[]'::jsonb,
    failure text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
  )`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
