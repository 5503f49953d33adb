/**
 * Runtime sessions and approvals. A session is found by the SHA-256 of its token, so the
 * hash is `UNIQUE` (two sessions can never share a token). An approval is one row that every prepare
 * and resolve changes with a conditional `UPDATE … WHERE state … AND revision … RETURNING`, so
 * racing resolves serialise on the row and exactly one of them claims it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_runtime_sessions (
    session_id text PRIMARY KEY,
    workspace_id text NOT NULL,
    account_id text NOT NULL,
    subject text NOT NULL,
    role text NOT NULL,
    authorities jsonb NOT NULL,
    token_hash text NOT NULL UNIQUE,
    issued_by text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    revoked_at bigint
  )`,
  `CREATE TABLE accord_approvals (
    approval_id text PRIMARY KEY,
    workspace_id text NOT NULL,
    account_id text NOT NULL,
    token_hash text NOT NULL,
    requester jsonb NOT NULL,
    request jsonb NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'approving', 'approved', 'denied')),
    revision integer NOT NULL,
    expires_at bigint NOT NULL,
    created_at bigint NOT NULL,
    prepared jsonb,
    claimed_at bigint,
    resolved_by text,
    resolved_at bigint,
    action_request_id text
  )`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
