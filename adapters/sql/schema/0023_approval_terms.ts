/**
 * Approvals that bind what runs: a runtime session may carry the account's trial its extend-trial
 * requests target (`trial_ref`, set by the host's server when it issues the session), and an
 * approval whose requester session was revoked is `cancelled` (found by its requester session).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  "ALTER TABLE accord_runtime_sessions ADD COLUMN trial_ref jsonb",
  "ALTER TABLE accord_approvals DROP CONSTRAINT accord_approvals_state_check",
  `ALTER TABLE accord_approvals ADD CONSTRAINT accord_approvals_state_check
    CHECK (state IN ('pending', 'approving', 'approved', 'denied', 'cancelled'))`,
  `CREATE INDEX accord_approvals_pending_by_requester ON accord_approvals ((requester->>'sessionId'))
    WHERE state = 'pending'`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
