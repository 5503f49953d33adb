/**
 * `CatalogStore` on SQL: append-only versions. A publish inserts `max(version) + 1` in one
 * statement; when a concurrent publish took that number first, the primary key refuses it and the
 * insert is retried with the next number. A `publishedVersionId` the workspace already used inserts
 * nothing.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { CatalogDocument, type PublishedCatalog } from "../../core/catalog/Catalog.ts"
import { CatalogStore, type CatalogStoreService } from "../../core/ports/CatalogStore.ts"
import { isUniqueViolation } from "./Batch.ts"
import { firstRow, json, num, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly workspace_id: string
  readonly version: number
  readonly published_version_id: string
  readonly published_at: unknown
  readonly published_by: string
  readonly document: unknown
}

const decodeDocument = Schema.decodeUnknownSync(CatalogDocument)

const toCatalog = (row: Row): PublishedCatalog => ({
  workspaceId: row.workspace_id,
  version: num(row.version),
  publishedVersionId: row.published_version_id,
  publishedAt: num(row.published_at),
  publishedBy: row.published_by,
  document: decodeDocument(typeof row.document === "string" ? JSON.parse(row.document) : row.document)
})

/**
 * @since 0.1.0
 */
export const make: Effect.Effect<CatalogStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    publish: (input) =>
      sql<Row>`
        INSERT INTO accord_catalog_versions (workspace_id, version, published_version_id, published_at, published_by, document)
        SELECT ${input.workspaceId}, COALESCE(MAX(version), 0) + 1, ${input.publishedVersionId}, ${input.publishedAt},
          ${input.publishedBy}, ${json(input.document)}::jsonb
        FROM accord_catalog_versions WHERE workspace_id = ${input.workspaceId}
        ON CONFLICT (workspace_id, published_version_id) DO NOTHING
        RETURNING *`.pipe(
        // A concurrent publish took the same version number: try again with the next one. Each loss
        // means another publish committed, so N concurrent publishes need up to N - 1 retries.
        Effect.retry({ times: 100, schedule: Schedule.jittered(Schedule.spaced("5 millis")), while: isUniqueViolation }),
        Effect.map((rows) => (rows[0] === undefined ? "published_version_exists" as const : toCatalog(rows[0]))),
        orStorageError("catalog.publish")
      ),
    current: (workspaceId) =>
      sql<Row>`SELECT * FROM accord_catalog_versions WHERE workspace_id = ${workspaceId} ORDER BY version DESC LIMIT 1`.pipe(
        Effect.map(firstRow(toCatalog)),
        orStorageError("catalog.current")
      ),
    byPublishedVersion: (workspaceId, publishedVersionId) =>
      sql<Row>`SELECT * FROM accord_catalog_versions
        WHERE workspace_id = ${workspaceId} AND published_version_id = ${publishedVersionId}`.pipe(
        Effect.map(firstRow(toCatalog)),
        orStorageError("catalog.byPublishedVersion")
      ),
    versions: (workspaceId) =>
      sql<Row>`SELECT * FROM accord_catalog_versions WHERE workspace_id = ${workspaceId} ORDER BY version DESC`.pipe(
        Effect.map((rows) => rows.map(toCatalog)),
        orStorageError("catalog.versions")
      )
  })
)

/**
 * @since 0.1.0
 */
export const layer: Layer.Layer<CatalogStore, never, SqlClient.SqlClient> = Layer.effect(CatalogStore, make)
