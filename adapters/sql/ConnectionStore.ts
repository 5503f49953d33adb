/**
 * `ConnectionStore` on SQL. Registration and activation lock the connection row (`FOR UPDATE`), so
 * concurrent registrations get distinct revisions and an activation sees the newest one: a handshake
 * for a revision superseded meanwhile cannot activate it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import {
  type Connection,
  type ConnectionAuditEntry,
  type ConnectionAuditEvent,
  type ConnectionRevision,
  ConnectionStore,
  type ConnectionStoreService,
  type RevisionState
} from "../../core/ports/ConnectionStore.ts"
import { makeBatcher } from "./Batch.ts"
import { anyOf, json, num, numOrNull, orStorageError } from "./SqlSupport.ts"
import { sqlTransaction } from "./Transactor.ts"

interface ConnectionRow {
  readonly connection_id: string
  readonly workspace_id: string
  readonly created_at: unknown
  readonly last_check_revision: number | null
  readonly last_check_at: unknown
  readonly last_check_outcome: "succeeded" | "failed" | null
  readonly last_check_problem: string | null
}

interface RevisionRow {
  readonly connection_id: string
  readonly revision: number
  readonly endpoint: string
  readonly state: RevisionState
  readonly created_at: unknown
  readonly activated_at: unknown
  readonly retired_at: unknown
}

interface AuditRow {
  readonly seq: unknown
  readonly revision: number
  readonly at: unknown
  readonly event: ConnectionAuditEvent
  readonly detail: unknown
}

const toAuditEntry = (row: AuditRow): ConnectionAuditEntry => ({
  seq: num(row.seq),
  at: num(row.at),
  revision: num(row.revision),
  event: row.event,
  detail: row.detail
})

const toRevision = (row: RevisionRow): ConnectionRevision => ({
  revision: num(row.revision),
  endpoint: row.endpoint,
  state: row.state,
  createdAt: num(row.created_at),
  activatedAt: numOrNull(row.activated_at),
  retiredAt: numOrNull(row.retired_at)
})

const toConnection = (row: ConnectionRow, revisions: ReadonlyArray<RevisionRow>): Connection => ({
  workspaceId: row.workspace_id,
  connectionId: row.connection_id,
  createdAt: num(row.created_at),
  revisions: revisions
    .filter((r) => r.connection_id === row.connection_id)
    .map(toRevision)
    .sort((a, b) => b.revision - a.revision),
  lastCheck:
    row.last_check_at === null || row.last_check_outcome === null
      ? null
      : {
          revision: num(row.last_check_revision),
          at: num(row.last_check_at),
          outcome: row.last_check_outcome,
          problem: row.last_check_problem
        }
})

export const make: Effect.Effect<ConnectionStoreService, never, SqlClient.SqlClient | Scope.Scope> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    Effect.gen(function* () {
      const load = (rows: ReadonlyArray<ConnectionRow>) =>
        rows.length === 0
          ? Effect.succeed([] as ReadonlyArray<Connection>)
          : Effect.map(
              sql<RevisionRow>`SELECT * FROM accord_connection_revisions WHERE connection_id = ANY(${anyOf(
                sql,
                rows.map((r) => r.connection_id)
              )})`,
              (revisions) => rows.map((row) => toConnection(row, revisions))
            )
      // One round trip for the reads of concurrent callers: each connection with its revisions
      // aggregated beside it.
      const readBy = (column: "workspace_id" | "connection_id") =>
        makeBatcher((keys: ReadonlyArray<string>) =>
          Effect.map(
            sql<ConnectionRow & { readonly revisions: ReadonlyArray<RevisionRow> }>`
            SELECT c.*, COALESCE(
              (SELECT jsonb_agg(r) FROM accord_connection_revisions r WHERE r.connection_id = c.connection_id), '[]'::jsonb
            ) AS revisions
            FROM accord_connections c WHERE ${sql(`c.${column}`)} = ANY(${anyOf(sql, Array.from(new Set(keys)))})`,
            (rows) => {
              const found = new Map(rows.map((row) => [row[column], row]))
              return keys.map((key) =>
                Option.map(Option.fromNullable(found.get(key)), (row) => toConnection(row, row.revisions))
              )
            }
          )
        )
      const byWorkspace = yield* readBy("workspace_id")
      const byId = yield* readBy("connection_id")
      return {
        registerRevision: ({ connectionId, endpoint, now, workspaceId }) =>
          sqlTransaction(
            sql,
            Effect.gen(function* () {
              yield* sql`INSERT INTO accord_connections (connection_id, workspace_id, created_at)
                     VALUES (${connectionId}, ${workspaceId}, ${now}) ON CONFLICT (workspace_id) DO NOTHING`
              const [connection] = yield* sql<{ connection_id: string }>`
            SELECT connection_id FROM accord_connections WHERE workspace_id = ${workspaceId} FOR UPDATE`
              const id = connection!.connection_id
              yield* sql`UPDATE accord_connection_revisions SET state = 'superseded'
                     WHERE connection_id = ${id} AND state = 'pending'`
              const [inserted] = yield* sql<{ revision: number }>`
            INSERT INTO accord_connection_revisions (workspace_id, connection_id, revision, endpoint, state, created_at)
            SELECT ${workspaceId}, ${id}, COALESCE(MAX(revision) + 1, 0), ${endpoint}, 'pending', ${now}
            FROM accord_connection_revisions WHERE connection_id = ${id}
            RETURNING revision`
              return { connectionId: id, revision: num(inserted!.revision) }
            })
          ).pipe(orStorageError("connection.registerRevision")),
        get: (workspaceId) => byWorkspace(workspaceId).pipe(orStorageError("connection.get")),
        getById: (connectionId) => byId(connectionId).pipe(orStorageError("connection.getById")),
        activate: ({ connectionId, now, revision }) =>
          sqlTransaction(
            sql,
            Effect.gen(function* () {
              const locked =
                yield* sql`SELECT 1 FROM accord_connections WHERE connection_id = ${connectionId} FOR UPDATE`
              if (locked.length === 0) return "superseded" as const
              const [newest] = yield* sql<{ revision: number; state: RevisionState }>`
            SELECT revision, state FROM accord_connection_revisions WHERE connection_id = ${connectionId}
            ORDER BY revision DESC LIMIT 1`
              if (newest === undefined || num(newest.revision) !== revision || newest.state !== "pending") {
                return "superseded" as const
              }
              yield* sql`UPDATE accord_connection_revisions SET state = 'replaced'
                     WHERE connection_id = ${connectionId} AND state = 'active'`
              yield* sql`UPDATE accord_connection_revisions SET state = 'active', activated_at = ${now}
                     WHERE connection_id = ${connectionId} AND revision = ${revision}`
              return "activated" as const
            })
          ).pipe(orStorageError("connection.activate")),
        recordCheck: (connectionId, check) =>
          sql`UPDATE accord_connections SET last_check_revision = ${check.revision}, last_check_at = ${check.at},
              last_check_outcome = ${check.outcome}, last_check_problem = ${check.problem}
            WHERE connection_id = ${connectionId}
              AND EXISTS (SELECT 1 FROM accord_connection_revisions r
                          WHERE r.connection_id = ${connectionId} AND r.revision = ${check.revision}
                            AND r.state IN ('active', 'pending'))
            RETURNING connection_id`.pipe(
            Effect.map((rows) => rows.length === 1),
            orStorageError("connection.recordCheck")
          ),
        retire: ({ connectionId, now, revision }) =>
          sql`UPDATE accord_connection_revisions SET state = 'retired', retired_at = ${now}
            WHERE connection_id = ${connectionId} AND revision = ${revision} AND state IN ('replaced', 'superseded')
            RETURNING revision`.pipe(
            Effect.map((rows) => rows.length === 1),
            orStorageError("connection.retire")
          ),
        dueForCheck: (before) =>
          sql<ConnectionRow>`SELECT c.* FROM accord_connections c
            WHERE (c.last_check_at IS NULL OR c.last_check_at < ${before})
              AND EXISTS (SELECT 1 FROM accord_connection_revisions r
                          WHERE r.connection_id = c.connection_id AND r.state IN ('active', 'pending'))
            ORDER BY c.connection_id`.pipe(Effect.flatMap(load), orStorageError("connection.dueForCheck")),
        withRetirableRevisions: sql<ConnectionRow>`SELECT c.* FROM accord_connections c
          WHERE EXISTS (SELECT 1 FROM accord_connection_revisions r
                        WHERE r.connection_id = c.connection_id AND r.state IN ('replaced', 'superseded'))
          ORDER BY c.connection_id`.pipe(Effect.flatMap(load), orStorageError("connection.withRetirableRevisions")),
        appendAudit: (connectionId, entry) =>
          // The workspace is the connection's; for an unknown connection it is NULL, which the
          // column refuses, as the foreign key refuses an unknown connection.
          sql`INSERT INTO accord_connection_audit (workspace_id, connection_id, revision, at, event, detail)
            VALUES ((SELECT workspace_id FROM accord_connections WHERE connection_id = ${connectionId}), ${connectionId},
              ${entry.revision}, ${entry.at}, ${entry.event}, ${json(entry.detail)}::jsonb)`.pipe(
            Effect.asVoid,
            orStorageError("connection.appendAudit")
          ),
        audit: (connectionId) =>
          sql<AuditRow>`SELECT seq, revision, at, event, detail FROM accord_connection_audit
            WHERE connection_id = ${connectionId} ORDER BY seq`.pipe(
            Effect.map((rows) => rows.map(toAuditEntry)),
            orStorageError("connection.audit")
          )
      }
    })
)

export const layer: Layer.Layer<ConnectionStore, never, SqlClient.SqlClient> = Layer.scoped(ConnectionStore, make)
