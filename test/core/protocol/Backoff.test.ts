/**
 * The one backoff: ceilings double from the base to the cap, each delay is drawn from the upper
 * half of its ceiling, retrying stops at the deadline, and the `Schedule` form waits exactly the
 * delays `backoffDelay` computes for the same draws.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/TestClock"
import * as fc from "fast-check"
import {
  type Backoff,
  backoffDelay,
  ceilingMillis,
  hintedDelay,
  pastDeadline,
  randomBackoffDelay,
  retryAfterMillis,
  retryDelay,
  schedule
} from "../../../core/protocol/Backoff.ts"

const backoff: Backoff = { baseMillis: 100, capMillis: 1_000, deadlineMillis: 5_000 }

describe("Backoff", () => {
  it("ceilings double from the base and stop at the cap", () => {
    assert.deepStrictEqual(
      [0, 1, 2, 3, 4, 5, 1_000].map((n) => ceilingMillis(backoff, n)),
      [100, 200, 400, 800, 1_000, 1_000, 1_000]
    )
  })

  it("a delay is the upper half of its ceiling: the lowest draw waits half, the highest almost all", () => {
    assert.deepStrictEqual(
      [0, 1, 2, 3].map((n) => backoffDelay(backoff, n, 0)),
      [50, 100, 200, 400]
    )
    assert.strictEqual(backoffDelay(backoff, 0, 0.999999), 99)
    assert.strictEqual(backoffDelay(backoff, 0, 0.5), 75)
    assert.strictEqual(backoffDelay(backoff, 40, 0.999999), 999)
  })

  it.effect.prop(
    "every drawn delay lies in [ceiling/2, ceiling) and never above the cap",
    [fc.nat({ max: 2_000 }), fc.integer()],
    ([attempts, seed]) =>
      Effect.gen(function* () {
        const delay = yield* Effect.withRandom(randomBackoffDelay(backoff, attempts), Random.make(seed))
        assert.isAtLeast(delay, ceilingMillis(backoff, attempts) / 2)
        assert.isBelow(delay, ceilingMillis(backoff, attempts))
        assert.isAtMost(delay, backoff.capMillis)
      })
  )

  it("the deadline counts from the first attempt; without one retrying never stops", () => {
    assert.isFalse(pastDeadline(backoff, 10_000, 14_999))
    assert.isTrue(pastDeadline(backoff, 10_000, 15_000))
    assert.isFalse(pastDeadline({ baseMillis: 1, capMillis: 2 }, 0, Number.MAX_SAFE_INTEGER))
  })

  it.effect("the Schedule waits the same delays as backoffDelay for the same draws, then stops at the deadline", () =>
    Effect.gen(function* () {
      const seed = 42
      // The draws the schedule will make, one per retry.
      const draws = yield* Effect.withRandom(
        Effect.forEach(Array.from({ length: 12 }), () => Random.next),
        Random.make(seed)
      )
      const expected = draws.map((r, n) => backoffDelay(backoff, n, r))
      const waits: Array<number> = []
      let last = 0
      const fiber = yield* Effect.fork(
        Effect.withRandom(
          Effect.retry(
            Effect.flatMap(TestClock.currentTimeMillis, (now) => {
              if (waits.length > 0 || now > 0) waits.push(now - last)
              last = now
              return Effect.fail("again" as const)
            }),
            schedule(backoff)
          ),
          Random.make(seed)
        )
      )
      yield* TestClock.adjust(Duration.seconds(60))
      const exit = yield* Fiber.await(fiber)
      assert.strictEqual(exit._tag, "Failure")
      // Retried while less than the deadline had elapsed; every wait as computed.
      assert.deepStrictEqual(waits, expected.slice(0, waits.length))
      assert.isAtLeast(waits.length, 5)
      const elapsedBeforeLast = waits.slice(0, -1).reduce((a, b) => a + b, 0)
      assert.isBelow(elapsedBeforeLast, backoff.deadlineMillis!)
    })
  )

  it.effect("the Schedule recurs forever without a deadline (bounded here by recurs)", () =>
    Effect.gen(function* () {
      let attempts = 0
      const fiber = yield* Effect.fork(
        Effect.retry(
          Effect.suspend(() => {
            attempts++
            return Effect.fail("again")
          }),
          schedule({ baseMillis: 100, capMillis: 1_000 }).pipe(Schedule.intersect(Schedule.recurs(20)))
        )
      )
      yield* TestClock.adjust(Duration.minutes(10))
      yield* Fiber.await(fiber)
      assert.strictEqual(attempts, 21)
    })
  )

  it("Retry-After is read as delay seconds or an HTTP date; anything else is no hint", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    assert.strictEqual(retryAfterMillis("1", now), 1_000)
    assert.strictEqual(retryAfterMillis("0", now), 0)
    assert.strictEqual(retryAfterMillis("Thu, 01 Jan 2026 00:00:05 GMT", now), 5_000)
    assert.strictEqual(retryAfterMillis("Wed, 31 Dec 2025 23:59:00 GMT", now), 0)
    for (const unreadable of [undefined, null, "", " ", "-1", "soon"]) {
      assert.strictEqual(retryAfterMillis(unreadable, now), undefined, String(unreadable))
    }
  })

  it.prop(
    "a server's hint replaces the exponential delay: never less than the hint, at most half again, never above the cap",
    [fc.nat({ max: 2_000 }), fc.nat({ max: 1_000_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })],
    ([attempts, hint, random]) => {
      const delay = retryDelay(backoff, attempts, random, hint)
      assert.strictEqual(delay, hintedDelay(backoff, hint, random))
      assert.isAtMost(delay, backoff.capMillis)
      assert.isAtLeast(delay, Math.min(hint, backoff.capMillis))
      assert.isAtMost(
        delay,
        Math.min(backoff.capMillis, Math.max(hint * 1.5, hint + Math.min(backoff.baseMillis, 1_000) / 2))
      )
      // Without a hint it is the exponential delay.
      assert.strictEqual(retryDelay(backoff, attempts, random), backoffDelay(backoff, attempts, random))
    }
  )

  it("clients told the same hint spread over half of it, so they do not all return at once", () => {
    const hint = 800
    assert.strictEqual(hintedDelay(backoff, hint, 0), 800)
    assert.strictEqual(hintedDelay(backoff, hint, 0.5), 1_000) // capped
    assert.strictEqual(hintedDelay({ baseMillis: 100, capMillis: 60_000 }, hint, 0.5), 1_000)
    // After many failures the hint still decides, not the 1 s exponential ceiling.
    assert.strictEqual(hintedDelay(backoff, 0, 0), 0)
    assert.isBelow(retryDelay(backoff, 30, 0.5, 0), backoffDelay(backoff, 30, 0.5))
  })
})
