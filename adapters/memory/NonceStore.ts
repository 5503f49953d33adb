/**
 * The memory `NonceStore`: this process's used nonces (`core/protocol/UsedNonces.ts`), provided as
 * `NonceStore` and, over the same record, `NonceStoreSync`.
 */
import type * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { NonceStore, NonceStoreSync, NonceStoreSyncService } from "../../core/ports/NonceStore.ts"
import { makeUsedNonces, usedNoncesContext } from "../../core/protocol/UsedNonces.ts"

/** A fresh record of used nonces, claimed synchronously. */
export const make: () => NonceStoreSyncService = makeUsedNonces

/** `record` (a fresh one unless given) as both services: `NonceStore` and its `NonceStoreSync`. */
export const context: (record?: NonceStoreSyncService) => Context.Context<NonceStore | NonceStoreSync> =
  usedNoncesContext

/**
 * Provides the in-memory `NonceStore` and its synchronous form `NonceStoreSync`, sharing one set of
 * used nonces.
 */
export const layer: Layer.Layer<NonceStore | NonceStoreSync> = Layer.syncContext(() => usedNoncesContext())
