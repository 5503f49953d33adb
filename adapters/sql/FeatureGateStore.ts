/**
 * `FeatureGateStore` on SQL. Unlocking is one conditional `UPDATE` from `checking`: of concurrent
 * unlockers, PostgreSQL lets the first update the row and re-checks the others' `WHERE` against
 * it, so exactly one reports the unlock.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type FeatureGate, FeatureGateStore, type FeatureGateStoreService } from "../../core/ports/FeatureGateStore.ts"
import { firstRow, num, numOrNull, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly workspace_id: string
  readonly id: string
  readonly account_id: string
  readonly journey_id: string
  readonly version_id: string
  readonly feature_key: string
  readonly started_at: unknown
  readonly created_at: unknown
  readonly state: string
  readonly unlocked_at: unknown
  readonly unlock_event_id: string | null
}

const toGate = (row: Row): FeatureGate => ({
  id: row.id,
  workspaceId: row.workspace_id,
  accountId: row.account_id,
  journeyId: row.journey_id,
  versionId: row.version_id,
  featureKey: row.feature_key,
  startedAt: num(row.started_at),
  createdAt: num(row.created_at),
  state: row.state as FeatureGate["state"],
  unlockedAt: numOrNull(row.unlocked_at),
  unlockEventId: row.unlock_event_id
})

export const make: Effect.Effect<FeatureGateStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    eraseAccount: (workspaceId, accountId) =>
      sql`DELETE FROM accord_feature_gates WHERE workspace_id = ${workspaceId} AND account_id = ${accountId}
          RETURNING id`.pipe(
        Effect.map((rows) => rows.length),
        orStorageError("featureGate.eraseAccount")
      ),
    create: (g) =>
      sql`INSERT INTO accord_feature_gates (workspace_id, id, account_id, journey_id, version_id, feature_key,
            started_at, created_at, state)
          VALUES (${g.workspaceId}, ${g.id}, ${g.accountId}, ${g.journeyId}, ${g.versionId}, ${g.featureKey},
            ${g.startedAt}, ${g.createdAt}, 'checking')
          ON CONFLICT (workspace_id, id) DO NOTHING RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("featureGate.create")
      ),
    get: (workspaceId, id) =>
      sql<Row>`SELECT * FROM accord_feature_gates WHERE workspace_id = ${workspaceId} AND id = ${id}`.pipe(
        Effect.map(firstRow(toGate)),
        orStorageError("featureGate.get")
      ),
    listByAccount: (workspaceId, accountId) =>
      sql<Row>`SELECT * FROM accord_feature_gates WHERE workspace_id = ${workspaceId} AND account_id = ${accountId}
          ORDER BY created_at, id`.pipe(
        Effect.map((rows) => rows.map(toGate)),
        orStorageError("featureGate.listByAccount")
      ),
    // ids compared byte-wise (COLLATE "C"), as the memory store does; the order is that of
    // `accord_feature_gates_recent` (migration 0019)
    list: ({ accountId, after, limit, state, workspaceId }) =>
      sql<Row>`SELECT * FROM accord_feature_gates WHERE ${sql.and([
        sql`workspace_id = ${workspaceId}`,
        ...(accountId === undefined ? [] : [sql`account_id = ${accountId}`]),
        ...(state === undefined ? [] : [sql`state = ${state}`]),
        ...(after === undefined ? [] : [sql`(created_at, id COLLATE "C") < (${after.createdAt}, ${after.id})`])
      ])} ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map(toGate)),
        orStorageError("featureGate.list")
      ),
    checking: (workspaceId, accountId) =>
      sql<Row>`SELECT * FROM accord_feature_gates
          WHERE workspace_id = ${workspaceId} AND account_id = ${accountId} AND state = 'checking'
          ORDER BY created_at, id`.pipe(
        Effect.map((rows) => rows.map(toGate)),
        orStorageError("featureGate.checking")
      ),
    unlock: ({ at, eventId, id, workspaceId }) =>
      sql`UPDATE accord_feature_gates SET state = 'unlocked', unlocked_at = ${at}, unlock_event_id = ${eventId}
          WHERE workspace_id = ${workspaceId} AND id = ${id} AND state = 'checking' RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("featureGate.unlock")
      )
  })
)

export const layer: Layer.Layer<FeatureGateStore, never, SqlClient.SqlClient> = Layer.effect(FeatureGateStore, make)
