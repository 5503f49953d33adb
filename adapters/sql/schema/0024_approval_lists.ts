/**
 * Indexes for the admin lists of runtime sessions and approvals: `GET /runtime-sessions` and
 * `GET /approvals` read a workspace's newest first (by creation time, then id). Ids are ordered
 * byte-wise (`COLLATE "C"`), as the memory stores and the cursors do, whatever the database's
 * collation, so the pages are read in index order.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE INDEX accord_runtime_sessions_recent ON accord_runtime_sessions (workspace_id, created_at DESC, session_id COLLATE "C" DESC)`,
  `CREATE INDEX accord_approvals_recent ON accord_approvals (workspace_id, created_at DESC, approval_id COLLATE "C" DESC)`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
