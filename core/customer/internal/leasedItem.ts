/**
 * How the worker ends one leased outbox item (spec "Rules for execution handling on the customer
 * side" 8: delivered "until the service answers 2xx"): `done` completes it; `reschedule` puts it
 * back with bounded exponential backoff and jitter (`core/protocol/Backoff.ts`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { CryptoService } from "../../ports/Crypto.ts"
import type { OutboxItem, OutboxService } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { type Backoff, backoffDelay } from "../../protocol/Backoff.ts"

export interface LeasedItemEnds {
  /** Puts the item back after a failed attempt, due again after the backoff delay. */
  readonly reschedule: (item: OutboxItem, error: string) => Effect.Effect<void, StorageError>
  /** Completes the item. */
  readonly done: (item: OutboxItem) => Effect.Effect<boolean, StorageError>
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
  const reschedule = (item: OutboxItem, error: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const delay = backoffDelay(backoff, item.attempts, yield* random01)
      yield* outbox.reschedule({ id: item.id, owner, nextAttemptAt: now + delay, error })
    })
  const done = (item: OutboxItem) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => outbox.complete({ id: item.id, owner, now }))
  return { reschedule, done }
}
