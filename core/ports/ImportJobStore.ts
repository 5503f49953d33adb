/**
 * The `ImportJobStore` port: bulk import jobs of the Direct API (`core/ingest/Import.ts`), one per
 * `(workspaceId, id)`. A job's progress is written in the same transaction as the batch of events
 * it counts (`Transactor`), so after a crash `linesCommitted` is exactly the number of the upload's
 * lines whose outcome is stored, and a re-upload skips those lines.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"

/** A job's state: taking lines, ended with every line read, or stopped by a failure (resumable). */
export type ImportState = "running" | "completed" | "failed"

/** One refused line: its 1-based number in the upload and the refusal's code (never its content). */
export interface ImportLineError {
  readonly line: number
  readonly code: string
  /** The first field the refusal names, when it names one. */
  readonly path?: string
}

/** What a job has committed so far. */
export interface ImportJob {
  readonly workspaceId: string
  readonly id: string
  readonly state: ImportState
  /** Lines of the upload whose outcome is committed (the resume point). */
  readonly linesCommitted: number
  /** Uncompressed bytes of the upload up to the end of the last committed line. */
  readonly bytesCommitted: number
  readonly accepted: number
  readonly duplicates: number
  readonly refused: number
  /** The first refused lines, at most `maxLineErrors`. */
  readonly errors: ReadonlyArray<ImportLineError>
  /** Why the job stopped, for a `failed` job (a code, never a value). */
  readonly failure: string | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** The most refused lines a job lists (the count goes on past it). */
export const maxLineErrors = 100

/** One committed batch: the counts it adds and where the upload now stands. */
export interface ImportProgress {
  readonly workspaceId: string
  readonly id: string
  /** `linesCommitted` before this batch: the write fails when another upload moved it. */
  readonly fromLine: number
  readonly toLine: number
  readonly bytesCommitted: number
  readonly accepted: number
  readonly duplicates: number
  readonly refused: number
  readonly errors: ReadonlyArray<ImportLineError>
  readonly now: number
}

/** Import jobs and their committed progress. */
export interface ImportJobStoreService {
  /** The job, created `running` when absent; a `failed` job is `running` again (a resume). */
  readonly open: (workspaceId: string, id: string, now: number) => Effect.Effect<ImportJob, StorageError>
  /** The job, if any. */
  readonly find: (workspaceId: string, id: string) => Effect.Effect<Option.Option<ImportJob>, StorageError>
  /**
   * Adds one batch's counts (errors kept up to `maxLineErrors`); `false`, writing nothing, when
   * the job's `linesCommitted` is no longer `fromLine` (another upload of the same job moved it).
   * Run it in the transaction that writes the batch's events.
   */
  readonly advance: (progress: ImportProgress) => Effect.Effect<boolean, StorageError>
  /** Ends the job: `completed`, or `failed` with the reason's code. */
  readonly finish: (
    workspaceId: string,
    id: string,
    outcome: { readonly state: "completed" } | { readonly state: "failed"; readonly failure: string },
    now: number
  ) => Effect.Effect<void, StorageError>
}

/** The service tag of the import job store. */
export class ImportJobStore extends Context.Tag("@accord/core/ports/ImportJobStore")<
  ImportJobStore,
  ImportJobStoreService
>() {}
