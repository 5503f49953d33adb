/**
 * ImportJobStore in memory: jobs in a map, each progress write checked against the job's line.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  type ImportJob,
  ImportJobStore,
  type ImportJobStoreService,
  maxLineErrors
} from "../../core/ports/ImportJobStore.ts"

/** An empty `ImportJobStore` held in this process's memory. */
export const make = (): ImportJobStoreService => {
  const jobs = new Map<string, ImportJob>()
  const keyOf = (workspaceId: string, id: string) => workspaceId + "\u0000" + id
  return {
    open: (workspaceId, id, now) =>
      Effect.sync(() => {
        const key = keyOf(workspaceId, id)
        const existing = jobs.get(key)
        const job: ImportJob =
          existing === undefined
            ? {
                workspaceId,
                id,
                state: "running",
                linesCommitted: 0,
                bytesCommitted: 0,
                accepted: 0,
                duplicates: 0,
                refused: 0,
                errors: [],
                failure: null,
                createdAt: now,
                updatedAt: now
              }
            : existing.state === "failed"
              ? { ...existing, state: "running", failure: null, updatedAt: now }
              : existing
        jobs.set(key, job)
        return job
      }),
    find: (workspaceId, id) => Effect.sync(() => Option.fromNullable(jobs.get(keyOf(workspaceId, id)))),
    advance: (progress) =>
      Effect.sync(() => {
        const key = keyOf(progress.workspaceId, progress.id)
        const job = jobs.get(key)
        if (job === undefined || job.linesCommitted !== progress.fromLine) return false
        jobs.set(key, {
          ...job,
          linesCommitted: progress.toLine,
          bytesCommitted: progress.bytesCommitted,
          accepted: job.accepted + progress.accepted,
          duplicates: job.duplicates + progress.duplicates,
          refused: job.refused + progress.refused,
          errors: [...job.errors, ...progress.errors].slice(0, maxLineErrors),
          updatedAt: progress.now
        })
        return true
      }),
    finish: (workspaceId, id, outcome, now) =>
      Effect.sync(() => {
        const key = keyOf(workspaceId, id)
        const job = jobs.get(key)
        if (job === undefined) return
        jobs.set(key, {
          ...job,
          state: outcome.state,
          failure: outcome.state === "failed" ? outcome.failure : null,
          updatedAt: now
        })
      })
  }
}

/** Provides an empty in-memory `ImportJobStore`. */
export const layerMemory: Layer.Layer<ImportJobStore> = Layer.sync(ImportJobStore, make)
