/**
 * Indexes for the account view and the feature-gate evidence search: every gate of one account,
 * and every `entitlement_active` event of one account from a time on (`EventStore.listAll`),
 * complete rather than a page. The evidence index is partial, so no other event pays for it on
 * insert.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE INDEX accord_events_access_evidence ON accord_events (workspace_id, account_id, occurred_at)
    WHERE event_name = 'entitlement_active'`,
  `CREATE INDEX accord_feature_gates_account ON accord_feature_gates (workspace_id, account_id, created_at)`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
