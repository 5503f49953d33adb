/**
 * The storage ports' tables. Times are epoch milliseconds in `bigint` (read back as strings and
 * converted), so `Clock`-driven tests are exact; JSON is `jsonb`. Every uniqueness the protocol
 * depends on is a constraint here, not a check in code: nonces, idempotency keys, completion ids,
 * client event ids, outbox dedupe keys, API key hashes.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_nonces (
    scope text NOT NULL,
    nonce text NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (scope, nonce)
  )`,
  `CREATE INDEX accord_nonces_expiry ON accord_nonces (expires_at)`,

  `CREATE TABLE accord_workspaces (
    workspace_id text PRIMARY KEY,
    created_at bigint NOT NULL
  )`,
  `CREATE TABLE accord_api_keys (
    id text PRIMARY KEY,
    workspace_id text NOT NULL REFERENCES accord_workspaces (workspace_id),
    scope text NOT NULL,
    name text,
    secret_hash text NOT NULL UNIQUE,
    created_at bigint NOT NULL,
    revoked_at bigint
  )`,
  `CREATE INDEX accord_api_keys_workspace ON accord_api_keys (workspace_id, created_at)`,

  `CREATE TABLE accord_secrets (
    ref text PRIMARY KEY,
    sealed text NOT NULL,
    created_at bigint NOT NULL
  )`,

  `CREATE TABLE accord_connections (
    connection_id text PRIMARY KEY,
    workspace_id text NOT NULL UNIQUE,
    created_at bigint NOT NULL,
    last_check_revision integer,
    last_check_at bigint,
    last_check_outcome text,
    last_check_problem text
  )`,
  `CREATE TABLE accord_connection_revisions (
    connection_id text NOT NULL REFERENCES accord_connections (connection_id),
    revision integer NOT NULL,
    endpoint text NOT NULL,
    state text NOT NULL,
    created_at bigint NOT NULL,
    activated_at bigint,
    retired_at bigint,
    PRIMARY KEY (connection_id, revision)
  )`,

  `CREATE TABLE accord_capabilities (
    connection_id text PRIMARY KEY,
    revision integer NOT NULL,
    modes jsonb NOT NULL,
    livemode boolean NOT NULL,
    account_reference_hash text NOT NULL,
    response_fingerprint text NOT NULL,
    provider_connection_generation text NOT NULL,
    recorded_at bigint NOT NULL,
    expires_at bigint NOT NULL
  )`,

  `CREATE TABLE accord_outbox (
    id text PRIMARY KEY,
    kind text NOT NULL,
    dedupe_key text NOT NULL,
    payload jsonb NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at bigint NOT NULL,
    lease_owner text,
    lease_expires_at bigint,
    created_at bigint NOT NULL,
    completed_at bigint,
    last_error text,
    UNIQUE (kind, dedupe_key)
  )`,
  `CREATE INDEX accord_outbox_due ON accord_outbox (next_attempt_at) WHERE completed_at IS NULL`,

  `CREATE TABLE accord_actions (
    action_request_id text PRIMARY KEY,
    workspace_id text NOT NULL,
    account_id text NOT NULL,
    connection_id text NOT NULL,
    revision integer NOT NULL,
    provider_idempotency_key text NOT NULL UNIQUE,
    state text NOT NULL,
    request jsonb NOT NULL,
    acknowledgement jsonb,
    sealed_continuation text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    version integer NOT NULL
  )`,
  `CREATE INDEX accord_actions_revision ON accord_actions (connection_id, revision, updated_at)`,
  `CREATE TABLE accord_action_history (
    action_request_id text NOT NULL REFERENCES accord_actions (action_request_id),
    seq integer NOT NULL,
    at bigint NOT NULL,
    trigger text NOT NULL,
    from_state text,
    to_state text NOT NULL,
    detail jsonb NOT NULL,
    PRIMARY KEY (action_request_id, seq)
  )`,
  `CREATE TABLE accord_completions (
    completion_id text PRIMARY KEY,
    action_request_id text NOT NULL,
    body_hash text NOT NULL,
    received_at bigint NOT NULL
  )`,

  `CREATE TABLE accord_events (
    id text PRIMARY KEY,
    workspace_id text NOT NULL,
    event_id text,
    account_id text NOT NULL,
    event_name text NOT NULL,
    occurred_at bigint NOT NULL,
    received_at bigint NOT NULL,
    payload_hash text NOT NULL,
    body jsonb NOT NULL,
    UNIQUE (workspace_id, event_id)
  )`,
  `CREATE INDEX accord_events_recent ON accord_events (workspace_id, occurred_at DESC, id DESC)`,
  `CREATE INDEX accord_events_account ON accord_events (workspace_id, account_id, occurred_at DESC, id DESC)`,

  `CREATE TABLE accord_profile_facts (
    workspace_id text NOT NULL,
    account_id text NOT NULL,
    name text NOT NULL,
    value jsonb NOT NULL,
    observed_at bigint NOT NULL,
    source_event_id text NOT NULL,
    PRIMARY KEY (workspace_id, account_id, name)
  )`,
  `CREATE TABLE accord_users (
    workspace_id text NOT NULL,
    user_id text NOT NULL,
    name text,
    name_observed_at bigint,
    name_source_event_id text,
    email text,
    email_observed_at bigint,
    email_source_event_id text,
    PRIMARY KEY (workspace_id, user_id)
  )`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
