/**
 * `runLeased`, the loop under the dispatcher and the customer kit's workers: no round barrier, an
 * item leased again while still being worked is never started twice, and an item that fails
 * unexpectedly does not stop the loop.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Queue from "effect/Queue"
import { layerMemory } from "../../../adapters/memory/Outbox.ts"
import { type HandoffSlots, leaseHeartbeat, Outbox, runLeased } from "../../../core/ports/Outbox.ts"

const waitUntil = (condition: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => (condition() ? Effect.void : Effect.zipRight(Effect.sleep("5 millis"), waitUntil(condition))))

describe("runLeased", () => {
  it.scopedLive("an item leased again while its first run goes on is not started again; a defect stops nothing", () =>
    Effect.gen(function* () {
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
    }).pipe(Logger.withMinimumLogLevel(LogLevel.None))
  )

  it.scopedLive("the heartbeat renews the leases of items in flight until their work ends, then stops", () =>
    Effect.gen(function* () {
      const outbox = yield* Outbox
      const now = Date.now()
      for (const id of ["slow", "quick"]) {
        yield* outbox.enqueue({ id, kind: "k", dedupeKey: id, payload: {}, nextAttemptAt: now, createdAt: now })
      }
      const released = yield* Effect.makeLatch(false)
      const finished: Array<string> = []
      // Beats every 100 ms: a lease of 60 ms (a beat every 20 ms) ran out once in a loaded parallel run,
      // where the process stalled longer than the 40 ms between a beat and the lease's end.
      const leaseMillis = 300
      let leased = false
      yield* runLeased({
        name: "test",
        concurrency: 4,
        idleMillis: 5,
        // One lease only: afterwards the loop must not take the slow item back itself.
        lease: (limit) =>
          leased
            ? Effect.succeed([])
            : Effect.map(outbox.lease({ owner: "w", now: Date.now(), leaseMillis, limit }), (items) => {
                leased = items.length > 0
                return items
              }),
        idOf: (item) => item.id,
        work: (item) =>
          Effect.zipRight(
            item.id === "slow"
              ? released.await
              : Effect.orDie(outbox.complete({ id: item.id, owner: "w", now: Date.now() })),
            Effect.sync(() => finished.push(item.id))
          ),
        heartbeat: leaseHeartbeat({ outbox, owner: "w", leaseMillis })
      })
      yield* waitUntil(() => finished.includes("quick"))
      // Held five lease lengths: without the beat another worker would have taken it long ago.
      for (let i = 0; i < 5; i++) {
        yield* Effect.sleep(`${leaseMillis} millis`)
        assert.deepStrictEqual(yield* outbox.lease({ owner: "other", now: Date.now(), leaseMillis, limit: 10 }), [])
      }
      yield* released.open
      yield* waitUntil(() => finished.includes("slow"))
      // Its work ended without settling the item: the beat stops and the lease runs out.
      yield* Effect.sleep(`${leaseMillis * 2} millis`)
      const taken = yield* outbox.lease({ owner: "other", now: Date.now(), leaseMillis, limit: 10 })
      assert.deepStrictEqual(
        taken.map((i) => i.id),
        ["slow"]
      )
    }).pipe(Effect.provide(layerMemory), Logger.withMinimumLogLevel(LogLevel.None))
  )
  it.scopedLive("handoff: a reserved slot counts as busy until started or released, each reservation ends once", () =>
    Effect.gen(function* () {
      const held = yield* Effect.makeLatch(false)
      const started: Array<string> = []
      let running = 0
      let open = 0
      const overbooked: Array<number> = []
      let slots: HandoffSlots<string> | undefined
      yield* runLeased({
        name: "test",
        concurrency: 2,
        idleMillis: 5,
        // Nothing to lease: record that a lease never asks for more than the unreserved, idle slots.
        lease: (limit) =>
          Effect.sync(() => {
            if (running + open + limit > 2) overbooked.push(limit)
            return []
          }),
        idOf: (id: string) => id,
        work: (id: string) =>
          Effect.gen(function* () {
            running++
            started.push(id)
            yield* held.await
            running--
          }),
        handoff: (offered) => Effect.sync(() => void (slots = offered))
      })
      const reserve = Effect.map(slots!.reserve, (slot) => {
        if (Option.isSome(slot)) open++
        return slot
      })
      const a = yield* reserve
      const b = yield* reserve
      assert.isTrue(Option.isSome(a) && Option.isSome(b))
      assert.isTrue(Option.isNone(yield* reserve))
      open--
      yield* Option.getOrThrow(a).release
      yield* Option.getOrThrow(a).release
      const c = yield* reserve
      assert.isTrue(Option.isSome(c))
      assert.isTrue(Option.isNone(yield* reserve))
      open--
      yield* Option.getOrThrow(b).start("x")
      open--
      yield* Option.getOrThrow(c).start("y")
      // Ended reservations do nothing more.
      yield* Option.getOrThrow(b).start("z")
      yield* Option.getOrThrow(a).start("z")
      yield* waitUntil(() => started.length === 2)
      assert.isTrue(Option.isNone(yield* reserve))
      yield* Effect.sleep("30 millis")
      yield* held.open
      yield* waitUntil(() => running === 0)
      const d = yield* reserve
      assert.isTrue(Option.isSome(d))
      open--
      yield* Option.getOrThrow(d).release
      yield* Effect.sleep("30 millis")
      assert.deepStrictEqual(started.sort(), ["x", "y"])
      assert.deepStrictEqual(overbooked, [])
    })
  )
})
