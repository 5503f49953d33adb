/**
 * The batcher: each caller gets its own result, batches hold at most `maxBatch` items, a failed
 * batch is split so a failing item fails only itself, and closing the scope interrupts the waiting.
 * Every test runs twice: with worker fibers over `many`, and without them over the same `many` in
 * callback form (`manyNow`, the group commit's path on PostgreSQL).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as Batcher from "../../../core/ports/Batcher.ts"

class Refused {
  readonly _tag = "Refused"
  constructor(readonly item: number) {}
}

/** A `many` that records its batches, refuses any batch holding `poison`, and waits for `gate` first. */
const recording =
  (
    batches: Array<ReadonlyArray<number>>,
    options?: { readonly poison?: number; readonly gate?: Effect.Effect<void> }
  ) =>
  (items: ReadonlyArray<number>): Effect.Effect<ReadonlyArray<string>, Refused> =>
    Effect.zipRight(
      options?.gate ?? Effect.void,
      Effect.suspend(() => {
        batches.push(items)
        return items.includes(options?.poison ?? -1)
          ? Effect.fail(new Refused(options!.poison!))
          : Effect.succeed(items.map((i) => `r${i}`))
      })
    )

type Many = (items: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<string>, Refused>
type Options = Batcher.BatcherOptions<number, string, Refused>

/** The two forms a batcher runs `many` in. */
const forms = {
  "worker fibers": (many: Many, options?: Options) => Batcher.makeDoors(many, options),
  "callback form (manyNow)": (many: Many, options?: Options) =>
    Effect.flatMap(Effect.runtime<never>(), (runtime) => {
      const runCallback = Runtime.runCallback(runtime)
      return Batcher.makeDoors(many, {
        ...options,
        manyNow: (items, done) => void runCallback(many(items), { onExit: done })
      })
    })
}

for (const [form, makeDoors] of Object.entries(forms)) {
  const make = (many: Many, options?: Options) => Effect.map(makeDoors(many, options), (doors) => doors.submit)

  describe(`Batcher (${form})`, () => {
    it.scoped("answers each item with its own result, and no batch holds more than maxBatch items", () =>
      Effect.gen(function* () {
        const batches: Array<ReadonlyArray<number>> = []
        const latch = yield* Effect.makeLatch(false)
        let first = true
        const gate = Effect.suspend(() => (first ? ((first = false), latch.await) : Effect.void))
        const submit = yield* make(recording(batches, { gate }), { maxBatch: 2 })
        // The first item holds the worker while the others queue up behind it.
        const head = yield* Effect.fork(submit(0))
        yield* Effect.yieldNow()
        const rest = yield* Effect.fork(Effect.all([1, 2, 3, 4, 5].map(submit), { concurrency: "unbounded" }))
        yield* Effect.yieldNow()
        yield* latch.open
        assert.strictEqual(yield* Fiber.join(head), "r0")
        assert.deepStrictEqual(yield* Fiber.join(rest), ["r1", "r2", "r3", "r4", "r5"])
        assert.deepStrictEqual(batches, [[0], [1, 2], [3, 4], [5]])
      })
    )

    it.scoped("a failed batch is split: each item runs alone, and the failing item fails only itself", () =>
      Effect.gen(function* () {
        const batches: Array<ReadonlyArray<number>> = []
        const latch = yield* Effect.makeLatch(false)
        const submit = yield* make(recording(batches, { poison: 3, gate: latch.await }))
        const results = yield* Effect.fork(
          Effect.all(
            [1, 2, 3, 4].map((i) => Effect.either(submit(i))),
            { concurrency: "unbounded" }
          )
        )
        yield* Effect.yieldNow()
        yield* latch.open
        const answered = yield* Fiber.join(results)
        assert.deepStrictEqual(
          answered.map((r) => (r._tag === "Right" ? r.right : r.left)),
          ["r1", "r2", new Refused(3), "r4"]
        )
        assert.deepStrictEqual(batches, [[1, 2, 3, 4], [1], [2], [3], [4]])
      })
    )

    it.scoped("a failure splitOn does not accept fails the whole batch, through `one` for single items", () =>
      Effect.gen(function* () {
        const batches: Array<ReadonlyArray<number>> = []
        const latch = yield* Effect.makeLatch(false)
        const submit = yield* make(recording(batches, { poison: 3, gate: latch.await }), {
          splitOn: () => false,
          one: (item) => Effect.succeed(`alone ${item}`)
        })
        const results = yield* Effect.fork(
          Effect.all(
            [1, 2, 3].map((i) => Effect.either(submit(i))),
            { concurrency: "unbounded" }
          )
        )
        yield* Effect.yieldNow()
        yield* latch.open
        const answered = yield* Fiber.join(results)
        assert.deepStrictEqual(
          answered.map((r) => (r._tag === "Right" ? r.right : r.left)),
          [new Refused(3), new Refused(3), new Refused(3)]
        )
        assert.strictEqual(yield* submit(7), "alone 7")
        assert.deepStrictEqual(batches, [[1, 2, 3]])
      })
    )

    it.effect(
      "closing the scope interrupts the items still waiting and any submitted after; the batch taken is answered",
      () =>
        Effect.gen(function* () {
          const batches: Array<ReadonlyArray<number>> = []
          const latch = yield* Effect.makeLatch(false)
          const scope = yield* Scope.make()
          const submit = yield* Scope.extend(make(recording(batches, { gate: latch.await })), scope)
          const taken = yield* Effect.fork(submit(0))
          yield* Effect.yieldNow()
          const waiting = yield* Effect.fork(Effect.all([1, 2].map(submit), { concurrency: "unbounded" }))
          yield* Effect.yieldNow()
          const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
          assert.isTrue(Exit.isInterrupted(yield* Fiber.await(waiting)))
          for (let turn = 0; turn < 20; turn++) yield* Effect.yieldNow()
          assert.isTrue(Option.isNone(yield* Fiber.poll(closing)), "closing waits for the batch taken")
          yield* latch.open
          yield* Fiber.join(closing)
          assert.strictEqual(yield* Fiber.join(taken), "r0")
          assert.isTrue(Exit.isInterrupted(yield* Effect.exit(submit(3))))
          assert.deepStrictEqual(batches, [[0]])
        })
    )
    it.effect("gather: items arriving in the same turn as the one that woke an idle worker share its batch", () =>
      Effect.gen(function* () {
        // Five requests becoming ready one after another within one turn of the host, as requests
        // read from the sockets in one poll do; the run is synchronous, as on an embedded database.
        const microtasks = async (n: number) => {
          for (let i = 0; i < n; i++) await Promise.resolve()
        }
        const batchesWith = (options: Options) =>
          Effect.scoped(
            Effect.gen(function* () {
              const batches: Array<ReadonlyArray<number>> = []
              const submit = yield* make(recording(batches), options)
              yield* Effect.all(
                [0, 1, 2, 3, 4].map((i) =>
                  Effect.zipRight(
                    Effect.promise(() => microtasks(i * 3)),
                    submit(i)
                  )
                ),
                {
                  concurrency: "unbounded"
                }
              )
              return batches
            })
          )
        assert.deepStrictEqual(yield* batchesWith({ gather: Batcher.gatherNextTurn }), [[0, 1, 2, 3, 4]])
        // Without it the first item is taken alone, as soon as it wakes the worker.
        const alone = yield* batchesWith({})
        assert.deepStrictEqual(alone[0], [0])
        assert.isAbove(alone.length, 1)
      })
    )

    it.scoped(
      "offer: the callback door shares batches with submit, gets each item's own result once, and a failing item fails only itself",
      () =>
        Effect.gen(function* () {
          const batches: Array<ReadonlyArray<number>> = []
          const latch = yield* Effect.makeLatch(false)
          const entered = yield* Deferred.make<void>()
          let first = true
          const gate = Effect.suspend(() =>
            first ? ((first = false), Effect.zipRight(Deferred.succeed(entered, undefined), latch.await)) : Effect.void
          )
          const doors = yield* makeDoors(recording(batches, { poison: 3, gate }))
          // The first item holds the worker while the others queue up behind it.
          const head = yield* Effect.fork(doors.submit(0))
          yield* Deferred.await(entered)
          const exits = new Map<number, Array<Exit.Exit<string, Refused>>>()
          for (const item of [1, 2, 3]) doors.offer(item, (exit) => exits.set(item, [...(exits.get(item) ?? []), exit]))
          const submitted = yield* Effect.fork(doors.submit(4))
          yield* Effect.yieldNow()
          assert.strictEqual(exits.size, 0, "nothing is answered before its batch ran")
          yield* latch.open
          assert.strictEqual(yield* Fiber.join(head), "r0")
          assert.strictEqual(yield* Fiber.join(submitted), "r4")
          assert.deepStrictEqual(exits.get(1), [Exit.succeed("r1")])
          assert.deepStrictEqual(exits.get(2), [Exit.succeed("r2")])
          assert.deepStrictEqual(exits.get(3), [Exit.fail(new Refused(3))])
          assert.deepStrictEqual(batches, [[0], [1, 2, 3, 4], [1], [2], [3], [4]])
        })
    )

    it.effect("offer: closing the scope answers a waiting offer interrupted, and an offer after it at once", () =>
      Effect.gen(function* () {
        const latch = yield* Effect.makeLatch(false)
        const entered = yield* Deferred.make<void>()
        const scope = yield* Scope.make()
        const gate = Effect.zipRight(Deferred.succeed(entered, undefined), latch.await)
        const doors = yield* Scope.extend(makeDoors(recording([], { gate })), scope)
        const taken = yield* Effect.fork(doors.submit(0))
        yield* Deferred.await(entered)
        const answers: Array<Exit.Exit<string, Refused>> = []
        doors.offer(1, (exit) => answers.push(exit))
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        for (let turn = 0; turn < 100 && answers.length === 0; turn++) yield* Effect.yieldNow()
        assert.strictEqual(answers.length, 1)
        assert.isTrue(Exit.isInterrupted(answers[0]!))
        doors.offer(2, (exit) => answers.push(exit))
        assert.strictEqual(answers.length, 2)
        assert.isTrue(Exit.isInterrupted(answers[1]!))
        yield* latch.open
        yield* Fiber.join(closing)
        assert.strictEqual(yield* Fiber.join(taken), "r0")
      })
    )
  })
}
