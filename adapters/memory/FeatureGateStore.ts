/**
 * FeatureGateStore in memory: feature gates in a map.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type FeatureGate, FeatureGateStore, type FeatureGateStoreService } from "../../core/ports/FeatureGateStore.ts"

/** Newest first: by `createdAt`, then id, both descending. */
const newestFirst = (
  a: { readonly createdAt: number; readonly id: string },
  b: { readonly createdAt: number; readonly id: string }
) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/** An empty `FeatureGateStore` held in this process's memory. */
export const make = (): FeatureGateStoreService => {
  const gates = new Map<string, FeatureGate>()
  const key = (workspaceId: string, id: string) => workspaceId + "\u0000" + id
  return {
    create: (gate) =>
      Effect.sync(() => {
        const k = key(gate.workspaceId, gate.id)
        if (gates.has(k)) return false
        gates.set(k, { ...gate, state: "checking", unlockedAt: null, unlockEventId: null })
        return true
      }),
    get: (workspaceId, id) => Effect.sync(() => Option.fromNullable(gates.get(key(workspaceId, id)))),
    listByAccount: (workspaceId, accountId) =>
      Effect.sync(() =>
        [...gates.values()]
          .filter((g) => g.workspaceId === workspaceId && g.accountId === accountId)
          .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      ),
    list: ({ accountId, after, limit, state, workspaceId }) =>
      Effect.sync(() =>
        [...gates.values()]
          .filter(
            (g) =>
              g.workspaceId === workspaceId &&
              (accountId === undefined || g.accountId === accountId) &&
              (state === undefined || g.state === state) &&
              (after === undefined || newestFirst(after, g) < 0)
          )
          .sort(newestFirst)
          .slice(0, limit)
      ),
    checking: (workspaceId, accountId) =>
      Effect.sync(() =>
        [...gates.values()].filter(
          (g) => g.workspaceId === workspaceId && g.accountId === accountId && g.state === "checking"
        )
      ),
    unlock: ({ at, eventId, id, workspaceId }) =>
      Effect.sync(() => {
        const gate = gates.get(key(workspaceId, id))
        if (gate === undefined || gate.state !== "checking") return false
        gates.set(key(workspaceId, id), { ...gate, state: "unlocked", unlockedAt: at, unlockEventId: eventId })
        return true
      }),
    eraseAccount: (workspaceId, accountId) =>
      Effect.sync(() => {
        let n = 0
        for (const [k, gate] of gates) {
          if (gate.workspaceId === workspaceId && gate.accountId === accountId && gates.delete(k)) n++
        }
        return n
      })
  }
}

/** Provides an empty in-memory `FeatureGateStore`. */
export const layerMemory: Layer.Layer<FeatureGateStore> = Layer.sync(FeatureGateStore, make)
