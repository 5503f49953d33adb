/**
 * Direct API ingestion's tables: each usage meter's first unit (spec "Usage rollup event": `unit`
 * must keep a stable meaning over time) and feature-gate funnels awaiting access evidence. Times
 * are epoch milliseconds in `bigint`, as in 0002.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_usage_meters (
    workspace_id text NOT NULL,
    meter_key text NOT NULL,
    unit text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (workspace_id, meter_key)
  )`,

  // A gate is checking (no unlock recorded) or unlocked (both recorded); nothing in between.
  `CREATE TABLE accord_feature_gates (
    workspace_id text NOT NULL,
    id text NOT NULL,
    account_id text NOT NULL,
    journey_id text NOT NULL,
    version_id text NOT NULL,
    feature_key text NOT NULL,
    started_at bigint NOT NULL,
    created_at bigint NOT NULL,
    state text NOT NULL,
    unlocked_at bigint,
    unlock_event_id text,
    PRIMARY KEY (workspace_id, id),
    CHECK (
      (state = 'checking' AND unlocked_at IS NULL AND unlock_event_id IS NULL)
      OR (state = 'unlocked' AND unlocked_at IS NOT NULL AND unlock_event_id IS NOT NULL)
    )
  )`,
  `CREATE INDEX accord_feature_gates_checking ON accord_feature_gates (workspace_id, account_id)
    WHERE state = 'checking'`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
