/**
 * The delivery retry schedule (Accord's choice, docs/decisions.md "Dispatch"): 1 s doubling per
 * attempt, capped at 5 minutes, each delay drawn from the upper half of its ceiling.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as fc from "fast-check"
import { retrySchedule } from "../../../../core/connector/Dispatcher.ts"
import { randomBackoffDelay } from "../../../../core/protocol/Backoff.ts"

const retryDelay = (attempts: number) => randomBackoffDelay(retrySchedule, attempts)

/** The ceiling of the delay before attempt `attempts + 1`, written out independently. */
const ceiling = (attempts: number): number => Math.min(5 * 60_000, 1_000 * 2 ** attempts)

/** `retryDelay(attempts)` with the random draw fixed by `seed`. */
const delayWith = (attempts: number, seed: number) => Effect.withRandom(retryDelay(attempts), Random.make(seed))

describe("retryDelay", () => {
  it("is 1 s doubling with a 5-minute cap, for 24 hours", () => {
    assert.deepStrictEqual(retrySchedule, { baseMillis: 1_000, capMillis: 300_000, deadlineMillis: 86_400_000 })
  })

  it.effect.prop(
    "stays within [ceiling/2, ceiling], never above 5 minutes",
    [fc.nat({ max: 2_000 }), fc.integer()],
    ([attempts, seed]) =>
      Effect.gen(function* () {
        const delay = yield* delayWith(attempts, seed)
        assert.isAtLeast(delay, ceiling(attempts) / 2)
        assert.isAtMost(delay, ceiling(attempts))
        assert.isAtMost(delay, 300_000)
      })
  )

  it.effect.prop(
    "grows with attempts: with the same draw a later attempt waits longer until both reach the cap",
    [fc.nat({ max: 40 }), fc.nat({ max: 40 }), fc.integer()],
    ([a, b, seed]) =>
      Effect.gen(function* () {
        const [earlier, later] = a <= b ? [a, b] : [b, a]
        const first = yield* delayWith(earlier, seed)
        const second = yield* delayWith(later, seed)
        if (ceiling(earlier) < ceiling(later)) assert.isBelow(first, second)
        else assert.strictEqual(first, second)
      })
  )

  it.effect("the first retry waits 0.5–1 s; from the ninth on the delay is capped (2.5–5 minutes)", () =>
    Effect.gen(function* () {
      const delays = yield* Effect.forEach([0, 8, 9, 50], (attempts) => retryDelay(attempts))
      assert.isTrue(delays[0]! >= 500 && delays[0]! <= 1_000)
      assert.isTrue(delays[1]! >= 128_000 && delays[1]! <= 256_000)
      assert.isTrue(delays[2]! >= 150_000 && delays[2]! <= 300_000)
      assert.isTrue(delays[3]! >= 150_000 && delays[3]! <= 300_000)
    })
  )
})
