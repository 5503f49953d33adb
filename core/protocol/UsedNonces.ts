/**
 * The used nonces of one process: the memory `NonceStore` (`adapters/memory/NonceStore.ts`) and the
 * private store of an outbound verifier, whose answers only this process is ever shown.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { type NonceClaim, NonceStore, NonceStoreSync, type NonceStoreSyncService } from "../ports/NonceStore.ts"

/** One scope of the record (see `makeUsedNonces`). */
interface MemoryScope {
  /** The nonces currently held, in claim order; every one of them is unexpired (see `makeUsedNonces`). */
  readonly held: Set<string>
  /** The same nonces and their expiry times, oldest first, from `head` on: the expiry queue. */
  readonly nonces: Array<string | undefined>
  readonly expiries: Array<number>
  head: number
  /** Claims whose expiry came before one already queued (the clock went back): held here, exactly. */
  readonly late: Map<string, number>
  claims: number
}

const lateSweepEvery = 64

/**
 * The used nonces of this process. Per scope, a `Set` of the held nonces and a queue of their expiry times in
 * claim order; since the verifier gives every claim the same retention on a clock that moves
 * forward, claim order is expiry order, so before each claim the expired entries are dropped from
 * the front of the queue (usually a single comparison) and every nonce left in the `Set` is held.
 * A claim is then one `Set.add`: the set's size tells a new nonce (claimed) from a held one (a
 * replay), one hash lookup where a `Map` of expiry times needed two (`get`, then `set`), and the
 * queue keeps the expiry times unboxed.
 *
 * A claim that would break the queue's order (an expiry earlier than the last one queued: the clock
 * went back, or a caller passes another retention) is kept exactly in a small `Map` of its own,
 * checked and swept (every 64th claim) only while it holds anything. So the semantics are exact in
 * every case: a nonce is refused until its own expiry, and may be claimed again from then on.
 */
export const makeUsedNonces = (): NonceStoreSyncService => {
  const scopes = new Map<string, MemoryScope>()
  const sweepLate = (late: Map<string, number>, now: number) => {
    for (const [nonce, expiresAt] of late) if (expiresAt <= now) late.delete(nonce)
  }
  const claimSync = ({ expiresAt, nonce, now, scope }: NonceClaim): boolean => {
    let space = scopes.get(scope)
    if (space === undefined) {
      space = { held: new Set(), nonces: [], expiries: [], head: 0, late: new Map(), claims: 0 }
      scopes.set(scope, space)
    }
    const { expiries, held, late, nonces } = space
    let head = space.head
    if (head < expiries.length && expiries[head]! <= now) {
      do {
        held.delete(nonces[head]!)
        nonces[head] = undefined
        head++
      } while (head < expiries.length && expiries[head]! <= now)
      if (head > 1024 && head * 2 > expiries.length) {
        nonces.splice(0, head)
        expiries.splice(0, head)
        head = 0
      }
      space.head = head
    }
    if (late.size > 0) {
      if (++space.claims % lateSweepEvery === 0) sweepLate(late, now)
      const lateExpiry = late.get(nonce)
      if (lateExpiry !== undefined) {
        if (lateExpiry > now) return false
        late.delete(nonce)
      }
    }
    if (expiries.length > head && expiresAt < expiries[expiries.length - 1]!) {
      if (held.has(nonce)) return false
      late.set(nonce, expiresAt)
      return true
    }
    const size = held.size
    held.add(nonce)
    if (held.size === size) return false
    nonces.push(nonce)
    expiries.push(expiresAt)
    return true
  }
  return { claim: claimSync }
}

/**
 * `used` as both services, `NonceStore` and its `NonceStoreSync`: one record, claimed through either.
 */
export const usedNoncesContext = (
  used: NonceStoreSyncService = makeUsedNonces()
): Context.Context<NonceStore | NonceStoreSync> =>
  Context.make(NonceStore, { claim: (claim) => Effect.sync(() => used.claim(claim)) }).pipe(
    Context.add(NonceStoreSync, used)
  )
