/**
 * `ApiKeyStore` on SQL. The secret hash is unique per workspace, so two keys of a workspace can never
 * share a secret; secrets come from a CSPRNG, so two workspaces' keys do not either in practice, and
 * `findByHash` reads the plain index on the hash (migration 0028).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  type ApiKeyRecord,
  type ApiKeyScope,
  ApiKeyStore,
  type ApiKeyStoreService
} from "../../core/ports/ApiKeyStore.ts"
import { firstRow, num, numOrNull, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly id: string
  readonly workspace_id: string
  readonly scope: string
  readonly name: string | null
  readonly secret_hash: string
  readonly created_at: unknown
  readonly revoked_at: unknown
}

const toRecord = (row: Row): ApiKeyRecord => ({
  id: row.id,
  workspaceId: row.workspace_id,
  scope: row.scope as ApiKeyScope,
  name: row.name,
  secretHash: row.secret_hash,
  createdAt: num(row.created_at),
  revokedAt: numOrNull(row.revoked_at)
})

export const make: Effect.Effect<ApiKeyStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    ensureWorkspace: (workspaceId, now) =>
      sql`INSERT INTO accord_workspaces (workspace_id, created_at) VALUES (${workspaceId}, ${now})
          ON CONFLICT (workspace_id) DO NOTHING RETURNING workspace_id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("workspace.ensure")
      ),
    workspaceExists: (workspaceId) =>
      sql`SELECT 1 FROM accord_workspaces WHERE workspace_id = ${workspaceId}`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("workspace.exists")
      ),
    create: (r) =>
      sql`INSERT INTO accord_api_keys (id, workspace_id, scope, name, secret_hash, created_at, revoked_at)
          VALUES (${r.id}, ${r.workspaceId}, ${r.scope}, ${r.name}, ${r.secretHash}, ${r.createdAt}, ${r.revokedAt})
          ON CONFLICT DO NOTHING RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("apiKey.create")
      ),
    findByHash: (secretHash) =>
      sql<Row>`SELECT * FROM accord_api_keys WHERE secret_hash = ${secretHash}`.pipe(
        Effect.map(firstRow(toRecord)),
        orStorageError("apiKey.findByHash")
      ),
    // Nothing is kept in memory here: `withLookupCache` adds that.
    findCached: () => undefined,
    list: (workspaceId) =>
      sql<Row>`SELECT * FROM accord_api_keys WHERE workspace_id = ${workspaceId} ORDER BY created_at, id`.pipe(
        Effect.map((rows) => rows.map(toRecord)),
        orStorageError("apiKey.list")
      ),
    revoke: (workspaceId, id, now) =>
      sql`UPDATE accord_api_keys SET revoked_at = ${now}
          WHERE id = ${id} AND workspace_id = ${workspaceId} AND revoked_at IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("apiKey.revoke")
      )
  })
)

export const layer: Layer.Layer<ApiKeyStore, never, SqlClient.SqlClient> = Layer.effect(ApiKeyStore, make)
