/**
 * The `NonceStore` port: remembers used nonces so a signed message can't be replayed.
 *
 * "Used request nonces are stored for at least five minutes" (spec); Accord keeps them
 * `nonceRetentionMillis` = 10 minutes, twice the skew window, so a nonce can't be forgotten while a
 * message carrying it still has a fresh timestamp (docs/decisions.md, "Nonce length and retention").
 *
 * Two contracts. `NonceStore` is every store's. `NonceStoreSync` is the same claim as a plain call,
 * a separate capability that only a store which answers without waiting provides (the memory one,
 * `adapters/memory/NonceStore.ts`), always together with the `NonceStore` it belongs to.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { StorageError } from "./StorageError.ts"

/**
 * How long a used nonce is kept: 10 minutes, twice the timestamp window, so no message is replayed
 * while still fresh.
 */
export const nonceRetentionMillis = 10 * 60_000

/** A nonce to claim: its scope, the nonce, now, and until when it is held. */
export interface NonceClaim {
  /** Separates nonce spaces, e.g. one per connection and direction. */
  readonly scope: string
  readonly nonce: string
  /** The claim time (epoch ms); entries that expired before it are forgotten. */
  readonly now: number
  /** Until when (epoch ms) the nonce stays claimed. */
  readonly expiresAt: number
}

/** The nonce port: claims a nonce once within its scope, atomically. */
export interface NonceStoreService {
  /**
   * Records the nonce atomically if it is not currently held in its scope. `true` when this call
   * recorded it, `false` when it was already used (a replay).
   */
  readonly claim: (claim: NonceClaim) => Effect.Effect<boolean, StorageError>
}

/** The service tag of the nonce store. */
export class NonceStore extends Context.Tag("@accord/core/NonceStore")<NonceStore, NonceStoreService>() {}

/**
 * The nonce store answered at once, where the store can (memory), so verification needs no fiber.
 */
export interface NonceStoreSyncService {
  /** `NonceStore.claim` of the store provided with it, answered at once: the same record, the same answer. */
  readonly claim: (claim: NonceClaim) => boolean
}

/**
 * The synchronous claim of the `NonceStore` in the same context. A layer that provides it provides
 * both, for one store; a verifier then claims without an effect step.
 */
export class NonceStoreSync extends Context.Tag("@accord/core/NonceStoreSync")<
  NonceStoreSync,
  NonceStoreSyncService
>() {}
