/**
 * `GET /events?event_name=…` (with or without a cursor) on a large table (measured with
 * `npm run bench:scale`): without this index PostgreSQL walks `accord_events_recent` newest first
 * and filters on the name, reading every newer event of other names (at 1 M events, a name on 0.1 %
 * of them removed 55,039 rows to return 50). With it, the page is read in index order directly.
 * The plans before and after are in docs/performance.md, "Scale".
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE INDEX accord_events_name ON accord_events (workspace_id, event_name, occurred_at DESC, id DESC)`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
