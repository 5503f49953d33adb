/**
 * Time-partitioned events (docs/decisions.md, "Event partitions", "Event retention"):
 *
 * - `accord_events` becomes partitioned by RANGE on `occurred_at`: a partition per UTC month that
 *   holds events (and the current month and `monthsAhead` after it), and a DEFAULT partition for
 *   anything else. Its primary key is `(workspace_id, id, occurred_at)`: a partitioned table's
 *   unique keys must hold the partition key.
 * - So `event_id` (and a usage rollup's bucket) can no longer be unique on `accord_events` itself:
 *   `accord_event_keys` is the narrow, unpartitioned table that holds them, one row per key, claimed
 *   in the statement that inserts the event; a key maps to its event's row (`event_row_id`,
 *   `occurred_at`).
 * - `accord_event_retention` holds the retention a workspace set (`days`, NULL for forever).
 *   Every workspace that exists now gets "forever": an upgrade deletes nothing nobody asked to
 *   delete; workspaces created later follow the server's default until they set their own.
 *
 * The existing rows are copied, then the old table dropped; indexes are built after the copy, and
 * the new tables analyzed.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { createMonth, monthOf, monthsFrom } from "../EventPartitions.ts"

const columns =
  "id, workspace_id, event_id, account_id, event_name, occurred_at, received_at, payload_hash, body, bucket_key"

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  yield* sql`CREATE TABLE accord_events_partitioned (
    id text NOT NULL,
    workspace_id text NOT NULL,
    event_id text,
    account_id text NOT NULL,
    event_name text NOT NULL,
    occurred_at bigint NOT NULL,
    received_at bigint NOT NULL,
    payload_hash text NOT NULL,
    body jsonb NOT NULL,
    bucket_key text
  ) PARTITION BY RANGE (occurred_at)`
  yield* sql`CREATE TABLE accord_events_default PARTITION OF accord_events_partitioned DEFAULT`
  const held = yield* sql<{ readonly start: unknown }>`SELECT DISTINCT
      (extract(epoch FROM date_trunc('month', to_timestamp(occurred_at / 1000.0) AT TIME ZONE 'UTC')) * 1000)::int8 AS start
    FROM accord_events`
  const months = new Map(monthsFrom(now).map((month) => [month.start, month]))
  for (const { start } of held) {
    const month = monthOf(Number(start))
    months.set(month.start, month)
  }
  for (const month of months.values()) yield* createMonth(sql, "accord_events_partitioned", month)
  yield* sql.unsafe(`INSERT INTO accord_events_partitioned (${columns}) SELECT ${columns} FROM accord_events`)

  yield* sql`CREATE TABLE accord_event_keys (
    workspace_id text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('event_id', 'bucket')),
    key text NOT NULL,
    event_row_id text NOT NULL,
    occurred_at bigint NOT NULL,
    PRIMARY KEY (workspace_id, kind, key)
  )`
  yield* sql`INSERT INTO accord_event_keys (workspace_id, kind, key, event_row_id, occurred_at)
    SELECT workspace_id, CASE WHEN event_id IS NOT NULL THEN 'event_id' ELSE 'bucket' END,
      COALESCE(event_id, bucket_key), id, occurred_at
    FROM accord_events WHERE event_id IS NOT NULL OR bucket_key IS NOT NULL`
  yield* sql`CREATE INDEX accord_event_keys_occurred ON accord_event_keys (workspace_id, occurred_at)`

  yield* sql`CREATE TABLE accord_event_retention (
    workspace_id text PRIMARY KEY,
    days integer CHECK (days IS NULL OR days > 0),
    updated_at bigint NOT NULL
  )`
  yield* sql`INSERT INTO accord_event_retention (workspace_id, days, updated_at)
    SELECT workspace_id, NULL::integer, ${now}::int8 FROM accord_workspaces
    UNION SELECT DISTINCT workspace_id, NULL::integer, ${now}::int8 FROM accord_events`

  yield* sql`DROP TABLE accord_events`
  yield* sql`ALTER TABLE accord_events_partitioned RENAME TO accord_events`
  yield* sql`ALTER TABLE accord_events ADD PRIMARY KEY (workspace_id, id, occurred_at)`
  yield* sql`CREATE INDEX accord_events_recent ON accord_events (workspace_id, occurred_at DESC, id DESC)`
  yield* sql`CREATE INDEX accord_events_account ON accord_events (workspace_id, account_id, occurred_at DESC, id DESC)`
  yield* sql`CREATE INDEX accord_events_name ON accord_events (workspace_id, event_name, occurred_at DESC, id DESC)`
  yield* sql`CREATE INDEX accord_events_access_evidence ON accord_events (workspace_id, account_id, occurred_at)
    WHERE event_name = 'entitlement_active'`
  // New tables have no statistics until autovacuum comes by: without them the planner reads an
  // account's events of one name through the name's index, across every row of that name.
  yield* sql`ANALYZE accord_events`
  yield* sql`ANALYZE accord_event_keys`
})
