/**
 * The abuse limits of the runtime approval routes: each approval keeps the catalog action key it
 * was requested for (the per-action cap on open approvals counts by it) and how many wrong tokens
 * were presented for it (the lockout). The caps count an account's open approvals, so they are
 * indexed by account among the open ones.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `ALTER TABLE accord_approvals ADD COLUMN action_key text`,
  `ALTER TABLE accord_approvals ADD COLUMN wrong_tokens integer NOT NULL DEFAULT 0`,
  `CREATE INDEX accord_approvals_open ON accord_approvals (workspace_id, account_id, expires_at)
    WHERE state IN ('pending', 'approving')`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
