/**
 * How the worker ends a leased item: `reschedule` counts the attempt and makes it due again after
 * the backoff delay, or after the service's `Retry-After` when given; `release` makes it due at
 * once; `done` completes it. All only for the lease owner.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { makeLeasedItemEnds } from "../../../../core/customer/internal/leasedItem.ts"
import * as WebCrypto from "../../../../adapters/crypto/WebCrypto.ts"
import { MemoryOutboxTable } from "../../../../adapters/memory/Outbox.ts"
import { type Backoff, backoffDelay, hintedDelay } from "../../../../core/protocol/Backoff.ts"

const backoff: Backoff = { baseMillis: 1_000, capMillis: 300_000 }
/** Every random byte zero: the draw is 0, the lower end of the jittered delay. */
const crypto = WebCrypto.make(globalThis.crypto.subtle, (bytes) => bytes.fill(0))

const setup = () => {
  const table = new MemoryOutboxTable()
  const outbox = table.service()
  for (const id of ["a", "b"]) {
    table.enqueue({ id, kind: "customer.complete", dedupeKey: id, payload: {}, nextAttemptAt: 0, createdAt: 0 })
  }
  const items = table.lease({ owner: "w1", now: 0, leaseMillis: 60_000, limit: 2 })
  return { outbox, items, ends: makeLeasedItemEnds({ outbox, crypto, owner: "w1", backoff }) }
}

describe("makeLeasedItemEnds", () => {
  it.effect("reschedule counts the attempt, records the error and sets the backoff delay", () =>
    Effect.gen(function* () {
      const { ends, items, outbox } = setup()
      yield* ends.reschedule(items[0]!, "status_503")
      const item = Option.getOrThrow(yield* outbox.get("a"))
      assert.deepStrictEqual(
        [item.attempts, item.lastError, item.nextAttemptAt, item.leaseOwner],
        [1, "status_503", backoffDelay(backoff, 0, 0), null]
      )
    })
  )

  it.effect("with the service's Retry-After, the wait is the hint, not the backoff of the attempts so far", () =>
    Effect.gen(function* () {
      const { ends, items, outbox } = setup()
      // Many failed attempts: the backoff would wait minutes; the service asks for 1 s.
      yield* ends.reschedule({ ...items[0]!, attempts: 12 }, "status_503", 1_000)
      const item = Option.getOrThrow(yield* outbox.get("a"))
      assert.deepStrictEqual([item.lastError, item.nextAttemptAt], ["status_503", hintedDelay(backoff, 1_000, 0)])
      assert.isBelow(item.nextAttemptAt, backoffDelay(backoff, 12, 0))
    })
  )

  it.effect("release gives the item back due now, the attempt counted", () =>
    Effect.gen(function* () {
      const { ends, items, outbox } = setup()
      yield* ends.release(items[0]!)
      const item = Option.getOrThrow(yield* outbox.get("a"))
      assert.deepStrictEqual(
        [item.attempts, item.lastError, item.nextAttemptAt, item.leaseOwner],
        [1, "worker_stopped", 0, null]
      )
    })
  )

  it.effect("done completes the item at the current time", () =>
    Effect.gen(function* () {
      const { ends, items, outbox } = setup()
      assert.isTrue(yield* ends.done(items[1]!))
      const item = Option.getOrThrow(yield* outbox.get("b"))
      assert.deepStrictEqual([item.completedAt, item.attempts], [0, 0])
    })
  )

  it.effect("an item leased by another owner is left alone", () =>
    Effect.gen(function* () {
      const { items, outbox } = setup()
      const other = makeLeasedItemEnds({ outbox, crypto, owner: "w2", backoff })
      assert.isFalse(yield* other.done(items[0]!))
      yield* other.reschedule(items[0]!, "status_503")
      yield* other.release(items[0]!)
      const item = Option.getOrThrow(yield* outbox.get("a"))
      assert.deepStrictEqual([item.attempts, item.leaseOwner, item.completedAt], [0, "w1", null])
    })
  )
})
