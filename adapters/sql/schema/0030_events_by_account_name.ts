/**
 * `GET /events?account_id=…&event_name=…` (an account's events of one name, the console's filter on
 * an account) on a large table (measured with `npm run bench:scale`): without this index
 * PostgreSQL reads the account's events newest first through `accord_events_account` and filters on
 * the name, one heap row per event of any name (at 10 M events, p50 8.6–13.9 ms and p99 up to
 * 54.7 ms, against 2–3 ms for the other views). With it, the page is read in index order directly.
 * Created on the partitioned table, so on every month's partition and every later one.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    Effect.asVoid(
      sql.unsafe(
        `CREATE INDEX accord_events_account_name ON accord_events (workspace_id, account_id, event_name, occurred_at DESC, id DESC)`
      )
    )
)
