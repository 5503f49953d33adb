/**
 * `ImportJobStore` on SQL: one `accord_imports` row per job. `advance` is one conditional UPDATE
 * (`lines_committed = fromLine`), so two uploads of the same job cannot both count a batch: the
 * second finds the line moved and its transaction writes nothing.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  type ImportJob,
  type ImportLineError,
  ImportJobStore,
  type ImportJobStoreService,
  type ImportState,
  maxLineErrors
} from "../../core/ports/ImportJobStore.ts"
import { json, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly workspace_id: string
  readonly id: string
  readonly state: string
  readonly lines_committed: string
  readonly bytes_committed: string
  readonly accepted: string
  readonly duplicates: string
  readonly refused: string
  readonly errors: ReadonlyArray<ImportLineError> | string
  readonly failure: string | null
  readonly created_at: string
  readonly updated_at: string
}

const toJob = (row: Row): ImportJob => ({
  workspaceId: row.workspace_id,
  id: row.id,
  state: row.state as ImportState,
  linesCommitted: Number(row.lines_committed),
  bytesCommitted: Number(row.bytes_committed),
  accepted: Number(row.accepted),
  duplicates: Number(row.duplicates),
  refused: Number(row.refused),
  errors: typeof row.errors === "string" ? JSON.parse(row.errors) : row.errors,
  failure: row.failure,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at)
})

const columns = `workspace_id, id, state, lines_committed, bytes_committed, accepted, duplicates, refused, errors,
  failure, created_at, updated_at`

/** The store on the `SqlClient` in hand. */
export const make: Effect.Effect<ImportJobStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    open: (workspaceId, id, now) =>
      sql<Row>`INSERT INTO accord_imports (workspace_id, id, state, created_at, updated_at)
          VALUES (${workspaceId}, ${id}, 'running', ${now}, ${now})
          ON CONFLICT (workspace_id, id) DO UPDATE SET
            state = CASE WHEN accord_imports.state = 'failed' THEN 'running' ELSE accord_imports.state END,
            failure = CASE WHEN accord_imports.state = 'failed' THEN NULL ELSE accord_imports.failure END,
            updated_at = CASE WHEN accord_imports.state = 'failed' THEN ${now} ELSE accord_imports.updated_at END
          RETURNING ${sql.literal(columns)}`.pipe(
        Effect.map((rows) => toJob(rows[0]!)),
        orStorageError("imports.open")
      ),
    find: (workspaceId, id) =>
      sql<Row>`SELECT ${sql.literal(columns)} FROM accord_imports
          WHERE workspace_id = ${workspaceId} AND id = ${id}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toJob)),
        orStorageError("imports.find")
      ),
    advance: (progress) =>
      sql`UPDATE accord_imports SET
            lines_committed = ${progress.toLine},
            bytes_committed = ${progress.bytesCommitted},
            accepted = accepted + ${progress.accepted},
            duplicates = duplicates + ${progress.duplicates},
            refused = refused + ${progress.refused},
            errors = CASE WHEN jsonb_array_length(errors) >= ${maxLineErrors} THEN errors
              ELSE (SELECT coalesce(jsonb_agg(e ORDER BY n), '[]'::jsonb) FROM (
                SELECT e, n FROM jsonb_array_elements(errors || ${json(progress.errors)}::jsonb)
                  WITH ORDINALITY AS t(e, n) ORDER BY n LIMIT ${maxLineErrors}) kept) END,
            updated_at = ${progress.now}
          WHERE workspace_id = ${progress.workspaceId} AND id = ${progress.id}
            AND lines_committed = ${progress.fromLine}
          RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("imports.advance")
      ),
    finish: (workspaceId, id, outcome, now) =>
      sql`UPDATE accord_imports SET state = ${outcome.state},
            failure = ${outcome.state === "failed" ? outcome.failure : null}, updated_at = ${now}
          WHERE workspace_id = ${workspaceId} AND id = ${id}`.pipe(Effect.asVoid, orStorageError("imports.finish"))
  })
)

/** Provides the store on the `SqlClient`. */
export const layer: Layer.Layer<ImportJobStore, never, SqlClient.SqlClient> = Layer.effect(ImportJobStore, make)
