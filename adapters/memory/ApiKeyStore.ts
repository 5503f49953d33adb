/**
 * ApiKeyStore in memory: workspaces and keys in maps.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type ApiKeyRecord, ApiKeyStore, type ApiKeyStoreService } from "../../core/ports/ApiKeyStore.ts"

/** An empty `ApiKeyStore` held in this process's memory. */
export const make = (): ApiKeyStoreService => {
  const workspaces = new Set<string>()
  const keys = new Map<string, ApiKeyRecord>()
  const byHash = (secretHash: string) => [...keys.values()].find((k) => k.secretHash === secretHash)
  return {
    ensureWorkspace: (workspaceId) =>
      Effect.sync(() => {
        if (workspaces.has(workspaceId)) return false
        workspaces.add(workspaceId)
        return true
      }),
    workspaceExists: (workspaceId) => Effect.sync(() => workspaces.has(workspaceId)),
    create: (record) =>
      Effect.sync(() => {
        if (keys.has(record.id) || [...keys.values()].some((k) => k.secretHash === record.secretHash)) return false
        keys.set(record.id, record)
        return true
      }),
    findByHash: (secretHash) => Effect.sync(() => Option.fromNullable(byHash(secretHash))),
    findCached: (secretHash) => byHash(secretHash),
    list: (workspaceId) =>
      Effect.sync(() =>
        [...keys.values()]
          .filter((k) => k.workspaceId === workspaceId)
          .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
      ),
    revoke: (workspaceId, id, now) =>
      Effect.sync(() => {
        const key = keys.get(id)
        if (key === undefined || key.workspaceId !== workspaceId || key.revokedAt !== null) return false
        keys.set(id, { ...key, revokedAt: now })
        return true
      })
  }
}

/** Provides an empty in-memory `ApiKeyStore`. */
export const layerMemory: Layer.Layer<ApiKeyStore> = Layer.sync(ApiKeyStore, make)
