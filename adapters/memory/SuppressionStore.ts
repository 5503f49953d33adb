/**
 * SuppressionStore in memory: suppressions in a map by workspace, kind and id, for tests and for
 * embedding without persistence.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  addCounts,
  type Suppression,
  SuppressionStore,
  type SuppressionStoreService
} from "../../core/ports/SuppressionStore.ts"

/** Newest first: by `createdAt`, then kind and id descending. */
const newestFirst = (a: Suppression, b: Suppression): number =>
  b.createdAt - a.createdAt ||
  (a.subject.kind < b.subject.kind ? 1 : a.subject.kind > b.subject.kind ? -1 : 0) ||
  (a.subject.id < b.subject.id ? 1 : a.subject.id > b.subject.id ? -1 : 0)

/** An empty `SuppressionStore` held in this process's memory. */
export const make = (): SuppressionStoreService => {
  const suppressions = new Map<string, Suppression>()
  const key = (workspaceId: string, kind: string, id: string) => `${workspaceId}\u0000${kind}\u0000${id}`
  return {
    record: (run) =>
      Effect.sync(() => {
        const k = key(run.workspaceId, run.subject.kind, run.subject.id)
        const current = suppressions.get(k)
        const next: Suppression =
          current === undefined
            ? {
                workspaceId: run.workspaceId,
                subject: run.subject,
                createdAt: run.at,
                createdBy: run.by,
                removed: run.removed,
                lastErasedAt: run.at,
                lastErasedBy: run.by
              }
            : {
                ...current,
                removed: addCounts(current.removed, run.removed),
                lastErasedAt: run.at,
                lastErasedBy: run.by
              }
        suppressions.set(k, next)
        return next
      }),
    get: (workspaceId, subject) =>
      Effect.sync(() => Option.fromNullable(suppressions.get(key(workspaceId, subject.kind, subject.id)))),
    list: ({ after, limit, workspaceId }) =>
      Effect.sync(() =>
        [...suppressions.values()]
          .filter(
            (s) =>
              s.workspaceId === workspaceId &&
              (after === undefined ||
                newestFirst({ ...s, createdAt: after.createdAt, subject: { kind: after.kind, id: after.id } }, s) < 0)
          )
          .sort(newestFirst)
          .slice(0, limit)
      ),
    createdSince: (since) => Effect.sync(() => [...suppressions.values()].filter((s) => s.createdAt >= since))
  }
}

/** Provides an empty in-memory `SuppressionStore`. */
export const layerMemory: Layer.Layer<SuppressionStore> = Layer.sync(SuppressionStore, make)
