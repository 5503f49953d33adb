/**
 * The `NonceStore` port: remembers used nonces so a signed message can't be replayed.
 *
 * "Used request nonces are stored for at least five minutes" (spec); Accord keeps them
 * `nonceRetentionMillis` = 10 minutes, twice the skew window, so a nonce can't be forgotten while a
 * message carrying it still has a fresh timestamp (DESIGN D6).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StorageError } from "./StorageError.ts"

/**
 * @since 0.1.0
 */
export const nonceRetentionMillis = 10 * 60_000

/**
 * @since 0.1.0
 */
export interface NonceClaim {
  /** Separates nonce spaces, e.g. one per connection and direction. */
  readonly scope: string
  readonly nonce: string
  /** The claim time (epoch ms); entries that expired before it are forgotten. */
  readonly now: number
  /** Until when (epoch ms) the nonce stays claimed. */
  readonly expiresAt: number
}

/**
 * @since 0.1.0
 */
export interface NonceStoreService {
  /**
   * Records the nonce atomically if it is not currently held in its scope. `true` when this call
   * recorded it, `false` when it was already used (a replay).
   */
  readonly claim: (claim: NonceClaim) => Effect.Effect<boolean, StorageError>
  /**
   * The same claim, synchronously, for stores that can (memory). Verification takes this path when
   * present, so an in-memory check costs no extra effect step.
   */
  readonly unsafeClaimSync?: (claim: NonceClaim) => boolean
}

/**
 * @since 0.1.0
 */
export class NonceStore extends Context.Tag("@accord/core/NonceStore")<NonceStore, NonceStoreService>() {}

/**
 * An in-memory store: one `Map` per scope (no key concatenation on the hot path). Entries sit in
 * insertion order; since every entry gets the same retention, that is also expiry order, so expired
 * entries are swept from the front. Expired entries are also ignored on lookup, so sweeping every
 * 64th claim of a scope is enough.
 *
 * @since 0.1.0
 */
export const makeMemory = (): NonceStoreService => {
  const scopes = new Map<string, { entries: Map<string, number>; claims: number }>()
  const sweep = (entries: Map<string, number>, now: number) => {
    for (const [key, expiresAt] of entries) {
      if (expiresAt > now) break
      entries.delete(key)
    }
  }
  const claimSync = ({ expiresAt, nonce, now, scope }: NonceClaim): boolean => {
    let space = scopes.get(scope)
    if (space === undefined) {
      space = { entries: new Map(), claims: 0 }
      scopes.set(scope, space)
    }
    const { entries } = space
    if ((++space.claims & 63) === 0) sweep(entries, now)
    const held = entries.get(nonce)
    if (held !== undefined) {
      if (held > now) return false
      // Re-insert at the back so the map stays in expiry order.
      entries.delete(nonce)
    }
    entries.set(nonce, expiresAt)
    return true
  }
  return {
    claim: (claim) => Effect.sync(() => claimSync(claim)),
    unsafeClaimSync: claimSync
  }
}

/**
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<NonceStore> = Layer.sync(NonceStore, makeMemory)
