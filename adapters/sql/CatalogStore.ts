/**
 * `CatalogStore` on SQL: append-only versions. A publish inserts `max(version) + 1` in one
 * statement; when a concurrent publish took that number first, the primary key refuses it and the
 * insert is retried with the next number. A `publishedVersionId` the workspace already used inserts
 * nothing.
 *
 * `current` is read fresh on every call (revalidation before every delivery depends on it), but
 * concurrent calls share one statement (`makeBatcher`: a call made while a statement is in flight
 * waits for the next one, so every answer comes from a statement sent after its call), and that
 * statement reads only the version's head; the document of a version is decoded once and kept (a
 * published version is never changed), so a hit neither transfers nor decodes it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { CatalogDocument } from "../../core/protocol/messages/Catalog.ts"
import {
  CatalogStore,
  type CatalogStoreService,
  type CatalogVersionSummary,
  type PublishedCatalog
} from "../../core/ports/CatalogStore.ts"
import { isUniqueViolation, makeBatcher } from "./Batch.ts"
import { anyOf, firstRow, json, num, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly workspace_id: string
  readonly version: number
  readonly published_version_id: string
  readonly published_at: unknown
  readonly published_by: string
  readonly document: unknown
}

type Head = Omit<Row, "document">

const decodeDocument = Schema.decodeUnknownSync(CatalogDocument)

/** Decoded documents kept per store, the most recently stored last. */
const maxCachedDocuments = 256

export const make: Effect.Effect<CatalogStoreService, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(
  function* () {
    const sql = yield* SqlClient.SqlClient
    // Keyed by workspace, version and published version id: rows are only ever inserted, and the
    // primary key and the unique key make that triple name one document for the table's life.
    const documents = new Map<string, CatalogDocument>()
    const keyOf = (head: Head) => `${head.workspace_id}\u0000${num(head.version)}\u0000${head.published_version_id}`
    const remember = (key: string, document: CatalogDocument) => {
      documents.set(key, document)
      if (documents.size > maxCachedDocuments) documents.delete(documents.keys().next().value!)
    }
    const documentOf = (row: Row): CatalogDocument => {
      const key = keyOf(row)
      const known = documents.get(key)
      if (known !== undefined) return known
      const document = decodeDocument(typeof row.document === "string" ? JSON.parse(row.document) : row.document)
      remember(key, document)
      return document
    }
    const toCatalog = (row: Head, document: CatalogDocument): PublishedCatalog => ({
      workspaceId: row.workspace_id,
      version: num(row.version),
      publishedVersionId: row.published_version_id,
      publishedAt: num(row.published_at),
      publishedBy: row.published_by,
      document
    })
    const fromRow = (row: Row): PublishedCatalog => toCatalog(row, documentOf(row))
    const summaryOf = (row: Head): CatalogVersionSummary => ({
      workspaceId: row.workspace_id,
      version: num(row.version),
      publishedVersionId: row.published_version_id,
      publishedAt: num(row.published_at),
      publishedBy: row.published_by
    })
    const current = yield* makeBatcher((workspaceIds: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const heads = yield* sql<Head>`
        SELECT DISTINCT ON (workspace_id) workspace_id, version, published_version_id, published_at, published_by
        FROM accord_catalog_versions WHERE workspace_id = ANY(${anyOf(sql, workspaceIds)})
        ORDER BY workspace_id, version DESC`
        const found = new Map<string, CatalogDocument>()
        const missing: Array<{ readonly workspace_id: string; readonly version: number }> = []
        for (const head of heads) {
          const known = documents.get(keyOf(head))
          if (known === undefined) missing.push({ workspace_id: head.workspace_id, version: num(head.version) })
          else found.set(keyOf(head), known)
        }
        if (missing.length > 0) {
          const rows = yield* sql<Row>`
          SELECT c.* FROM accord_catalog_versions c
          JOIN jsonb_to_recordset(${json(missing)}::jsonb) AS k(workspace_id text, version int4)
            ON c.workspace_id = k.workspace_id AND c.version = k.version`
          for (const row of rows) found.set(keyOf(row), documentOf(row))
        }
        const byWorkspace = new Map(heads.map((head) => [head.workspace_id, head]))
        return workspaceIds.map((workspaceId) =>
          Option.flatMap(Option.fromNullable(byWorkspace.get(workspaceId)), (head) =>
            // A document missing here was read in the same batch; it cannot be, but answer nothing rather than throw.
            Option.map(Option.fromNullable(found.get(keyOf(head))), (document) => toCatalog(head, document))
          )
        )
      })
    )
    return {
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
          Effect.retry({
            times: 100,
            schedule: Schedule.jittered(Schedule.spaced("5 millis")),
            while: isUniqueViolation
          }),
          Effect.map((rows) => (rows[0] === undefined ? ("published_version_exists" as const) : fromRow(rows[0]))),
          orStorageError("catalog.publish")
        ),
      current: (workspaceId) => current(workspaceId).pipe(orStorageError("catalog.current")),
      byPublishedVersion: (workspaceId, publishedVersionId) =>
        sql<Row>`SELECT * FROM accord_catalog_versions
        WHERE workspace_id = ${workspaceId} AND published_version_id = ${publishedVersionId}`.pipe(
          Effect.map(firstRow(fromRow)),
          orStorageError("catalog.byPublishedVersion")
        ),
      byVersion: (workspaceId, version) =>
        sql<Row>`SELECT * FROM accord_catalog_versions WHERE workspace_id = ${workspaceId} AND version = ${version}`.pipe(
          Effect.map(firstRow(fromRow)),
          orStorageError("catalog.byVersion")
        ),
      // The summary columns only, along the primary key (workspace_id, version) backwards.
      versions: (workspaceId, page) =>
        sql<Head>`
        SELECT workspace_id, version, published_version_id, published_at, published_by
        FROM accord_catalog_versions
        WHERE workspace_id = ${workspaceId}${page.before === undefined ? sql`` : sql` AND version < ${page.before}`}
        ORDER BY version DESC LIMIT ${page.limit}`.pipe(
          Effect.map((rows) => rows.map(summaryOf)),
          orStorageError("catalog.versions")
        )
    }
  }
)

export const layer: Layer.Layer<CatalogStore, never, SqlClient.SqlClient> = Layer.scoped(CatalogStore, make)
