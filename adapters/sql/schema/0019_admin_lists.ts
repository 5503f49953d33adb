/**
 * Indexes for the admin list routes: `GET /action-requests` and `GET /feature-gates` read a
 * workspace's newest first (by creation time, then id), and `GET /accounts` reads a workspace's
 * profiled accounts by account id. Ids are ordered byte-wise (`COLLATE "C"`), as the memory stores
 * and the cursors do, whatever the database's collation, so the pages are read in index order.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE INDEX accord_actions_recent ON accord_actions (workspace_id, created_at DESC, action_request_id COLLATE "C" DESC)`,
  `CREATE INDEX accord_feature_gates_recent ON accord_feature_gates (workspace_id, created_at DESC, id COLLATE "C" DESC)`,
  `CREATE INDEX accord_profile_facts_accounts ON accord_profile_facts (workspace_id, account_id COLLATE "C")`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
