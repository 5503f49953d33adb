/**
 * Suppressions of erased subjects (accounts and users), each with its audit: who erased it first
 * and when, what every erasure of it removed in total (`removed`, the counts as JSON), and its last
 * erasure. One row per subject, so a repeated erasure finds the same record. Ordered by creation
 * for the admin list; `created_at` alone for the in-memory sets each process refreshes from it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_suppressions (
    workspace_id text NOT NULL,
    subject_kind text NOT NULL CHECK (subject_kind IN ('account', 'user')),
    subject_id text NOT NULL,
    created_at bigint NOT NULL,
    created_by text NOT NULL,
    removed jsonb NOT NULL,
    last_erased_at bigint NOT NULL,
    last_erased_by text NOT NULL,
    PRIMARY KEY (workspace_id, subject_kind, subject_id)
  )`,
  `CREATE INDEX accord_suppressions_recent ON accord_suppressions
    (workspace_id, created_at DESC, subject_kind COLLATE "C" DESC, subject_id COLLATE "C" DESC)`,
  `CREATE INDEX accord_suppressions_created ON accord_suppressions (created_at)`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
