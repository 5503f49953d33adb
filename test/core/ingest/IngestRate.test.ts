/**
 * The ingest rate: a token bucket per key, `limit` per second, one token per request, nothing
 * taken from a refused request, the wait until the next token, and a bounded number of buckets.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import * as IngestRate from "../../../core/ingest/IngestRate.ts"

describe("IngestRate (memory)", () => {
  it("a full bucket lets `limit` requests through at once, then refuses with the wait for the next token", () => {
    const rate = IngestRate.makeMemory()
    for (let i = 0; i < 5; i++) assert.strictEqual(rate.consume("k", 5, 1_000), 0)
    assert.strictEqual(rate.consume("k", 5, 1_000), 200)
    assert.strictEqual(rate.consume("k", 5, 1_150), 50)
    assert.strictEqual(rate.consume("k", 5, 1_200), 0, "one token back after 1000 / limit ms")
    assert.strictEqual(rate.consume("k", 5, 1_200), 200)
  })

  it("over a longer period: `limit` per `periodMillis`, one token back every periodMillis / limit", () => {
    const rate = IngestRate.makeMemory()
    for (let i = 0; i < 3; i++) assert.strictEqual(rate.consume("k", 3, 0, 60_000), 0)
    assert.strictEqual(rate.consume("k", 3, 0, 60_000), 20_000)
    assert.strictEqual(rate.consume("k", 3, 19_999, 60_000), 1)
    assert.strictEqual(rate.consume("k", 3, 20_000, 60_000), 0)
    assert.strictEqual(rate.consume("k", 3, 20_000, 60_000), 20_000)
  })

  it("keys do not share a bucket", () => {
    const rate = IngestRate.makeMemory()
    assert.strictEqual(rate.consume("a", 1, 0), 0)
    assert.isAbove(rate.consume("a", 1, 0), 0)
    assert.strictEqual(rate.consume("b", 1, 0), 0)
  })

  it("a bucket refills to `limit`, never beyond", () => {
    const rate = IngestRate.makeMemory()
    assert.strictEqual(rate.consume("k", 2, 0), 0)
    let allowed = 0
    for (let i = 0; i < 10; i++) if (rate.consume("k", 2, 60_000) === 0) allowed++
    assert.strictEqual(allowed, 2)
  })

  it("past maxKeys the least recently used bucket is dropped (it comes back full)", () => {
    const rate = IngestRate.makeMemory(2)
    assert.strictEqual(rate.consume("a", 1, 0), 0)
    assert.strictEqual(rate.consume("b", 1, 0), 0)
    assert.isAbove(rate.consume("a", 1, 0), 0, "a used again: b is now the oldest")
    assert.strictEqual(rate.consume("c", 1, 0), 0)
    assert.strictEqual(rate.consume("b", 1, 0), 0, "b was dropped, so it starts full")
    assert.isAbove(rate.consume("c", 1, 0), 0, "c was kept")
  })

  it.prop(
    "over any run of requests at non-decreasing times, no window of one second lets more than `limit` + refills through",
    [fc.integer({ min: 1, max: 50 }), fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 300 })],
    ([limit, gaps]) => {
      const rate = IngestRate.makeMemory()
      let now = 0
      const allowedAt: Array<number> = []
      for (const gap of gaps) {
        now += gap
        const wait = rate.consume("k", limit, now)
        if (wait === 0) allowedAt.push(now)
        else assert.isAtMost(wait, Math.ceil(1000 / limit))
      }
      // In any interval [t, t + 1000) at most `limit` (the bucket) + `limit` (refilled) pass.
      for (const start of allowedAt) {
        assert.isAtMost(allowedAt.filter((t) => t >= start && t < start + 1000).length, 2 * limit)
      }
    }
  )
})
