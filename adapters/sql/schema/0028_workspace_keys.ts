/**
 * Keys that distribute: every primary key and unique constraint of a table holding workspace data
 * leads with `workspace_id`, so a distributed PostgreSQL can shard every such table by workspace
 * and keep each key's uniqueness inside one shard (docs/scaling.md). `accord_events` keeps its keys
 * here: its partitioned form owns them.
 *
 * Tables whose keys did not lead with `workspace_id` get them rebuilt in place, rows kept:
 * - `accord_api_keys`, `accord_runtime_sessions`, `accord_approvals`, `accord_actions`,
 *   `accord_connections`: the primary key becomes `(workspace_id, <id>)`; a secret hash, token hash
 *   or provider idempotency key is unique per workspace. Each is a CSPRNG id or a hash of a CSPRNG
 *   secret (the provider idempotency key hashes the workspace id in), so no two workspaces share
 *   one in practice; the key the protocol relies on is per workspace (a customer backend serves
 *   one workspace's connection).
 * - `accord_connection_revisions`, `accord_connection_audit` and `accord_action_history` reference
 *   a connection or an action: a foreign key needs a unique key on the columns it references, so
 *   they gain `workspace_id` (copied from their parent row) and reference `(workspace_id, <id>)`.
 *   The audit trail refuses every `UPDATE` (0004): its trigger is disabled for the copy only, in
 *   this transaction, and the copy writes nothing but the new column.
 *
 * Indexes the stores' statements rely on: a statement that names the workspace reads the new keys.
 * The ones that find a row by its id, hash or parent id alone (`ApiKeyStore.findByHash`,
 * `RuntimeSessionStore.findByHash`/`get`, `ApprovalStore.get` and its conditional updates,
 * `ActionLedger.get`/`getByIdempotencyKey`/transitions, `ConnectionStore`'s reads by connection
 * id) could no longer use a key led by `workspace_id`, so each former key stays as a plain index on
 * the same columns (`test/adapters/sql/WorkspaceKeys.test.ts` checks their plans read it). The
 * action history is the exception: it is written several times per action, so rather than a
 * second index its reads name the workspace (the transitions have the action's row; `history`
 * joins through the action).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  // Children first: their foreign keys name the parents' keys about to be dropped.
  "ALTER TABLE accord_connection_revisions DROP CONSTRAINT accord_connection_revisions_connection_id_fkey",
  "ALTER TABLE accord_connection_audit DROP CONSTRAINT accord_connection_audit_connection_id_fkey",
  "ALTER TABLE accord_action_history DROP CONSTRAINT accord_action_history_action_request_id_fkey",

  "ALTER TABLE accord_api_keys DROP CONSTRAINT accord_api_keys_pkey",
  "ALTER TABLE accord_api_keys ADD CONSTRAINT accord_api_keys_pkey PRIMARY KEY (workspace_id, id)",
  "ALTER TABLE accord_api_keys DROP CONSTRAINT accord_api_keys_secret_hash_key",
  "ALTER TABLE accord_api_keys ADD CONSTRAINT accord_api_keys_secret_hash_key UNIQUE (workspace_id, secret_hash)",
  "CREATE INDEX accord_api_keys_secret_hash ON accord_api_keys (secret_hash)",

  "ALTER TABLE accord_runtime_sessions DROP CONSTRAINT accord_runtime_sessions_pkey",
  "ALTER TABLE accord_runtime_sessions ADD CONSTRAINT accord_runtime_sessions_pkey PRIMARY KEY (workspace_id, session_id)",
  "ALTER TABLE accord_runtime_sessions DROP CONSTRAINT accord_runtime_sessions_token_hash_key",
  `ALTER TABLE accord_runtime_sessions ADD CONSTRAINT accord_runtime_sessions_token_hash_key
    UNIQUE (workspace_id, token_hash)`,
  "CREATE INDEX accord_runtime_sessions_token_hash ON accord_runtime_sessions (token_hash)",
  "CREATE INDEX accord_runtime_sessions_session ON accord_runtime_sessions (session_id)",

  "ALTER TABLE accord_approvals DROP CONSTRAINT accord_approvals_pkey",
  "ALTER TABLE accord_approvals ADD CONSTRAINT accord_approvals_pkey PRIMARY KEY (workspace_id, approval_id)",
  "CREATE INDEX accord_approvals_approval ON accord_approvals (approval_id)",

  "ALTER TABLE accord_actions DROP CONSTRAINT accord_actions_pkey",
  "ALTER TABLE accord_actions ADD CONSTRAINT accord_actions_pkey PRIMARY KEY (workspace_id, action_request_id)",
  "ALTER TABLE accord_actions DROP CONSTRAINT accord_actions_provider_idempotency_key_key",
  `ALTER TABLE accord_actions ADD CONSTRAINT accord_actions_provider_idempotency_key_key
    UNIQUE (workspace_id, provider_idempotency_key)`,
  "CREATE INDEX accord_actions_action ON accord_actions (action_request_id)",
  "CREATE INDEX accord_actions_provider_idempotency_key ON accord_actions (provider_idempotency_key)",

  "ALTER TABLE accord_action_history ADD COLUMN workspace_id text",
  `UPDATE accord_action_history h SET workspace_id = a.workspace_id
    FROM accord_actions a WHERE a.action_request_id = h.action_request_id`,
  "ALTER TABLE accord_action_history ALTER COLUMN workspace_id SET NOT NULL",
  "ALTER TABLE accord_action_history DROP CONSTRAINT accord_action_history_pkey",
  `ALTER TABLE accord_action_history ADD CONSTRAINT accord_action_history_pkey
    PRIMARY KEY (workspace_id, action_request_id, seq)`,
  `ALTER TABLE accord_action_history ADD CONSTRAINT accord_action_history_action_fkey
    FOREIGN KEY (workspace_id, action_request_id) REFERENCES accord_actions (workspace_id, action_request_id)`,

  "ALTER TABLE accord_connections DROP CONSTRAINT accord_connections_pkey",
  "ALTER TABLE accord_connections ADD CONSTRAINT accord_connections_pkey PRIMARY KEY (workspace_id, connection_id)",
  "CREATE INDEX accord_connections_connection ON accord_connections (connection_id)",

  "ALTER TABLE accord_connection_revisions ADD COLUMN workspace_id text",
  `UPDATE accord_connection_revisions r SET workspace_id = c.workspace_id
    FROM accord_connections c WHERE c.connection_id = r.connection_id`,
  "ALTER TABLE accord_connection_revisions ALTER COLUMN workspace_id SET NOT NULL",
  "ALTER TABLE accord_connection_revisions DROP CONSTRAINT accord_connection_revisions_pkey",
  `ALTER TABLE accord_connection_revisions ADD CONSTRAINT accord_connection_revisions_pkey
    PRIMARY KEY (workspace_id, connection_id, revision)`,
  "CREATE INDEX accord_connection_revisions_connection ON accord_connection_revisions (connection_id, revision)",
  `ALTER TABLE accord_connection_revisions ADD CONSTRAINT accord_connection_revisions_connection_fkey
    FOREIGN KEY (workspace_id, connection_id) REFERENCES accord_connections (workspace_id, connection_id)`,

  "ALTER TABLE accord_connection_audit ADD COLUMN workspace_id text",
  "ALTER TABLE accord_connection_audit DISABLE TRIGGER accord_connection_audit_no_change",
  `UPDATE accord_connection_audit e SET workspace_id = c.workspace_id
    FROM accord_connections c WHERE c.connection_id = e.connection_id`,
  "ALTER TABLE accord_connection_audit ENABLE TRIGGER accord_connection_audit_no_change",
  "ALTER TABLE accord_connection_audit ALTER COLUMN workspace_id SET NOT NULL",
  "ALTER TABLE accord_connection_audit DROP CONSTRAINT accord_connection_audit_pkey",
  "ALTER TABLE accord_connection_audit ADD CONSTRAINT accord_connection_audit_pkey PRIMARY KEY (workspace_id, seq)",
  `ALTER TABLE accord_connection_audit ADD CONSTRAINT accord_connection_audit_connection_fkey
    FOREIGN KEY (workspace_id, connection_id) REFERENCES accord_connections (workspace_id, connection_id)`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
