/**
 * `SuppressionStore` on SQL: one row per erased subject (migration 0026). Recording a run is one
 * `INSERT … ON CONFLICT DO UPDATE`: the first run creates the row, a later one adds its counts to
 * it key by key, so concurrent erasures of one subject serialise on the row and both answer it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  type ErasureCounts,
  noCounts,
  type Suppression,
  SuppressionStore,
  type SuppressionStoreService,
  type SubjectKind
} from "../../core/ports/SuppressionStore.ts"
import { firstRow, json, num, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly workspace_id: string
  readonly subject_kind: string
  readonly subject_id: string
  readonly created_at: unknown
  readonly created_by: string
  readonly removed: unknown
  readonly last_erased_at: unknown
  readonly last_erased_by: string
}

const toSuppression = (row: Row): Suppression => ({
  workspaceId: row.workspace_id,
  subject: { kind: row.subject_kind as SubjectKind, id: row.subject_id },
  createdAt: num(row.created_at),
  createdBy: row.created_by,
  removed: { ...noCounts, ...(row.removed as Partial<ErasureCounts>) },
  lastErasedAt: num(row.last_erased_at),
  lastErasedBy: row.last_erased_by
})

export const make: Effect.Effect<SuppressionStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    record: (run) =>
      sql<Row>`INSERT INTO accord_suppressions (workspace_id, subject_kind, subject_id, created_at, created_by,
            removed, last_erased_at, last_erased_by)
          VALUES (${run.workspaceId}, ${run.subject.kind}, ${run.subject.id}, ${run.at}, ${run.by},
            ${json(run.removed)}::jsonb, ${run.at}, ${run.by})
          ON CONFLICT (workspace_id, subject_kind, subject_id) DO UPDATE SET
            removed = (SELECT jsonb_object_agg(k, COALESCE((accord_suppressions.removed->>k)::int8, 0)
                + COALESCE((EXCLUDED.removed->>k)::int8, 0)) FROM jsonb_object_keys(EXCLUDED.removed) AS k),
            last_erased_at = EXCLUDED.last_erased_at, last_erased_by = EXCLUDED.last_erased_by
          RETURNING *`.pipe(
        Effect.map((rows) => toSuppression(rows[0]!)),
        orStorageError("suppression.record")
      ),
    get: (workspaceId, subject) =>
      sql<Row>`SELECT * FROM accord_suppressions WHERE workspace_id = ${workspaceId}
          AND subject_kind = ${subject.kind} AND subject_id = ${subject.id}`.pipe(
        Effect.map(firstRow(toSuppression)),
        orStorageError("suppression.get")
      ),
    // kinds and ids compared byte-wise (COLLATE "C"), as the memory store does; the order is that
    // of `accord_suppressions_recent`
    list: ({ after, limit, workspaceId }) =>
      sql<Row>`SELECT * FROM accord_suppressions WHERE ${sql.and([
        sql`workspace_id = ${workspaceId}`,
        ...(after === undefined
          ? []
          : [
              sql`(created_at, subject_kind COLLATE "C", subject_id COLLATE "C") < (${after.createdAt}, ${after.kind}, ${after.id})`
            ])
      ])} ORDER BY created_at DESC, subject_kind COLLATE "C" DESC, subject_id COLLATE "C" DESC LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map(toSuppression)),
        orStorageError("suppression.list")
      ),
    createdSince: (since) =>
      sql<Row>`SELECT * FROM accord_suppressions WHERE created_at >= ${since}`.pipe(
        Effect.map((rows) => rows.map(toSuppression)),
        orStorageError("suppression.createdSince")
      )
  })
)

/** The store on the layer's `SqlClient`. */
export const layer: Layer.Layer<SuppressionStore, never, SqlClient.SqlClient> = Layer.effect(SuppressionStore, make)
