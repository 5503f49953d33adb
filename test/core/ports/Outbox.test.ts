/**
 * `runLeased`, the loop under the dispatcher and the customer kit's workers: no round barrier, an
 * item leased again while still being worked is never started twice, and an item that fails
 * unexpectedly does not stop the loop.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Queue from "effect/Queue"
import { runLeased } from "../../../core/ports/Outbox.ts"

const waitUntil = (condition: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => (condition() ? Effect.void : Effect.zipRight(Effect.sleep("5 millis"), waitUntil(condition))))

describe("runLeased", () => {
  it.scopedLive("an item leased again while its first run goes on is not started again; a defect stops nothing", () =>
    Effect.gen(function*() {
      const held = yield* Effect.makeLatch(false)
      const started: Array<string> = []
      let leases = 0
      // Every lease hands out the slow item again (as a store does once its lease runs out), a
      // failing one, and a new item.
      yield* runLeased({
        name: "test",
        concurrency: 8,
        idleMillis: 5,
        lease: () => Effect.sync(() => (++leases <= 20 ? ["slow", "defect", `fresh-${leases}`] : [])),
        idOf: (id: string) => id,
        work: (id: string) =>
          Effect.zipRight(
            Effect.sync(() => started.push(id)),
            id === "slow" ? held.await : id === "defect" ? Effect.dieMessage("unexpected") : Effect.void
          ),
        wakeup: Queue.take(yield* Queue.sliding<unknown>(1))
      })
      yield* waitUntil(() => leases > 20)
      assert.strictEqual(started.filter((id) => id === "slow").length, 1)
      assert.isAbove(started.filter((id) => id === "defect").length, 1)
      assert.strictEqual(started.filter((id) => id.startsWith("fresh-")).length, 20)
      yield* held.open
    }).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
})
