/**
 * Usage rollup buckets (DAI "Limits" 7: "counts are current values"): a usage rollup sent without
 * `event_id` is identified by its bucket (`UsageRollup.rollupBucketKey`: account, meter, period),
 * unique per workspace, so a resend of the same bucket replaces the stored value instead of adding
 * a second row that a reader would sum.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `ALTER TABLE accord_events ADD COLUMN bucket_key text`,
  `CREATE UNIQUE INDEX accord_events_bucket ON accord_events (workspace_id, bucket_key) WHERE bucket_key IS NOT NULL`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
