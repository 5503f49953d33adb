/**
 * `RuntimeSessionStore` on SQL. The token hash is unique per workspace, so two sessions of a workspace
 * can never share a token (tokens come from a CSPRNG, so two workspaces' do not either in practice;
 * `findByHash` reads the plain index on the hash, migration 0028); a session is only ever changed by
 * its revocation, a conditional `UPDATE` that succeeds once.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  type RuntimeSessionRecord,
  RuntimeSessionStore,
  type RuntimeSessionStoreService
} from "../../core/ports/RuntimeSessionStore.ts"
import { firstRow, json, num, numOrNull, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly session_id: string
  readonly workspace_id: string
  readonly account_id: string
  readonly subject: string
  readonly role: string
  /** `authorities::text`: read as JSON text, whatever the driver does with `jsonb`. */
  readonly authorities: string
  readonly token_hash: string
  readonly issued_by: string
  readonly created_at: unknown
  readonly expires_at: unknown
  readonly revoked_at: unknown
  /** `trial_ref::text`: JSON text, or `null` when the session names no trial. */
  readonly trial_ref: string | null
}

const toRecord = (row: Row): RuntimeSessionRecord => ({
  sessionId: row.session_id,
  workspaceId: row.workspace_id,
  accountId: row.account_id,
  subject: row.subject,
  role: row.role,
  authorities: JSON.parse(row.authorities) as ReadonlyArray<string>,
  tokenHash: row.token_hash,
  issuedBy: row.issued_by,
  createdAt: num(row.created_at),
  expiresAt: num(row.expires_at),
  revokedAt: numOrNull(row.revoked_at),
  ...(row.trial_ref === null
    ? {}
    : { trialRef: JSON.parse(row.trial_ref) as NonNullable<RuntimeSessionRecord["trialRef"]> })
})

const columns = `session_id, workspace_id, account_id, subject, role, authorities::text AS authorities, token_hash,
  issued_by, created_at, expires_at, revoked_at, trial_ref::text AS trial_ref`

export const make: Effect.Effect<RuntimeSessionStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    eraseSubject: (workspaceId, subject) =>
      sql`DELETE FROM accord_runtime_sessions WHERE workspace_id = ${workspaceId} AND ${
        subject.kind === "account" ? sql`account_id = ${subject.id}` : sql`subject = ${subject.id}`
      } RETURNING session_id`.pipe(
        Effect.map((rows) => rows.length),
        orStorageError("runtimeSession.eraseSubject")
      ),
    create: (r) =>
      sql`INSERT INTO accord_runtime_sessions
            (session_id, workspace_id, account_id, subject, role, authorities, token_hash, issued_by, created_at, expires_at, revoked_at,
            trial_ref)
          VALUES (${r.sessionId}, ${r.workspaceId}, ${r.accountId}, ${r.subject}, ${r.role}, ${json(r.authorities)}::jsonb,
            ${r.tokenHash}, ${r.issuedBy}, ${r.createdAt}, ${r.expiresAt}, ${r.revokedAt},
            ${r.trialRef === undefined ? null : json(r.trialRef)}::jsonb)
          ON CONFLICT DO NOTHING RETURNING session_id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("runtimeSession.create")
      ),
    findByHash: (tokenHash) =>
      sql<Row>`SELECT ${sql.literal(columns)} FROM accord_runtime_sessions WHERE token_hash = ${tokenHash}`.pipe(
        Effect.map(firstRow(toRecord)),
        orStorageError("runtimeSession.findByHash")
      ),
    get: (sessionId) =>
      sql<Row>`SELECT ${sql.literal(columns)} FROM accord_runtime_sessions WHERE session_id = ${sessionId}`.pipe(
        Effect.map(firstRow(toRecord)),
        orStorageError("runtimeSession.get")
      ),
    revoke: (workspaceId, sessionId, now) =>
      sql`UPDATE accord_runtime_sessions SET revoked_at = ${now}
          WHERE session_id = ${sessionId} AND workspace_id = ${workspaceId} AND revoked_at IS NULL RETURNING session_id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("runtimeSession.revoke")
      ),
    // ids compared byte-wise (COLLATE "C"), as the memory store does; the order is that of
    // `accord_runtime_sessions_recent` (migration 0024)
    list: ({ after, limit, workspaceId }) =>
      sql<Row>`SELECT ${sql.literal(columns)} FROM accord_runtime_sessions WHERE ${sql.and([
        sql`workspace_id = ${workspaceId}`,
        ...(after === undefined ? [] : [sql`(created_at, session_id COLLATE "C") < (${after.createdAt}, ${after.id})`])
      ])} ORDER BY created_at DESC, session_id COLLATE "C" DESC LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map(toRecord)),
        orStorageError("runtimeSession.list")
      )
  })
)

export const layer: Layer.Layer<RuntimeSessionStore, never, SqlClient.SqlClient> = Layer.effect(
  RuntimeSessionStore,
  make
)
