/**
 * How the worker ends one leased outbox item (spec "Rules for execution handling on the customer
 * side" 8: delivered "until the service answers 2xx"): `done` completes it; `reschedule` puts it
 * back with bounded exponential backoff and jitter, or after the service's `Retry-After` when it
 * sent one (`core/protocol/Backoff.ts` `retryDelay`); `release` gives it back due at once when the
 * worker stops mid-attempt, so the next process takes it up without waiting for the lease.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { CryptoService } from "../../ports/Crypto.ts"
import type { OutboxItem, OutboxService } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { type Backoff, retryDelay } from "../../protocol/Backoff.ts"

/** How a leased work item ends: put back after a failed attempt, or completed. */
export interface LeasedItemEnds {
  /**
   * Puts the item back after a failed attempt, due again after the backoff delay, or after
   * `hintMillis` (the service's `Retry-After`) when given.
   */
  readonly reschedule: (item: OutboxItem, error: string, hintMillis?: number) => Effect.Effect<void, StorageError>
  /** Completes the item. */
  readonly done: (item: OutboxItem) => Effect.Effect<boolean, StorageError>
  /**
   * Gives the item back due now, its attempt counted (so an execution's next run asks `lookup`
   * first): the worker is stopping and the attempt may or may not have happened.
   */
  readonly release: (item: OutboxItem) => Effect.Effect<void, StorageError>
  /** The lease owner: a write that finishes the item in the same transaction names it. */
  readonly owner: string
}

export const makeLeasedItemEnds = (options: {
  readonly outbox: OutboxService
  readonly crypto: CryptoService
  readonly owner: string
  readonly backoff: Backoff
}): LeasedItemEnds => {
  const { backoff, crypto, outbox, owner } = options
  const random01 = Effect.map(
    crypto.randomBytes(4),
    (b) => (((b[0]! << 24) >>> 0) + (b[1]! << 16) + (b[2]! << 8) + b[3]!) / 2 ** 32
  )
  const reschedule = (item: OutboxItem, error: string, hintMillis?: number) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const delay = retryDelay(backoff, item.attempts, yield* random01, hintMillis)
      yield* outbox.reschedule({ id: item.id, owner, nextAttemptAt: now + delay, error })
    })
  const release = (item: OutboxItem) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.asVoid(outbox.reschedule({ id: item.id, owner, nextAttemptAt: now, error: "worker_stopped" }))
    )
  const done = (item: OutboxItem) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => outbox.complete({ id: item.id, owner, now }))
  return { reschedule, done, release, owner }
}
