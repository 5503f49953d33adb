/**
 * Login activity per account user (spec "Account profile facts": "events `user_logged_in` or
 * `session_started` with `semantic_type` `login`, with `user_id` when a user caused it"): each
 * user's newest login, from which the profile counts the users active in the last 7 and 30 days.
 * Times are epoch milliseconds in `bigint`, as in 0002.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_account_logins (
    workspace_id text NOT NULL,
    account_id text NOT NULL,
    user_id text NOT NULL,
    last_login_at bigint NOT NULL,
    source_event_id text NOT NULL,
    PRIMARY KEY (workspace_id, account_id, user_id)
  )`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
