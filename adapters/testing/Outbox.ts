import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fc from "effect/FastCheck"
import { type NewOutboxItem, Outbox, type OutboxItem } from "../../core/ports/Outbox.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/** Every test's times sit around here, except the one test that leases all kinds (see there). */
const T = 1_700_000_000_000

/**
 * The Outbox contract. One store per suite; since `lease` sees the whole table, every test leases
 * only kinds of its own (a unique `kind` per test).
 */
export const suite = (name: string, layer: () => Layer.Layer<Outbox, unknown>) =>
  describe(`Outbox contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const item = (kind: string, nextAttemptAt: number, overrides: Partial<NewOutboxItem> = {}): NewOutboxItem => ({
        id: uid("item-"),
        kind,
        dedupeKey: uid("key-"),
        payload: { actionRequestId: uid("ar-"), attempt: "first", nested: [1, "two", null] },
        nextAttemptAt,
        createdAt: nextAttemptAt,
        ...overrides
      })
      const enqueueAll = (items: ReadonlyArray<NewOutboxItem>) =>
        Effect.flatMap(Outbox, (outbox) =>
          Effect.forEach(items, (i) => Effect.map(outbox.enqueue(i), (ok) => assert.isTrue(ok)), { discard: true })
        )
      const lease = (kind: string, owner: string, now: number, limit = 10, leaseMillis = 60_000) =>
        Effect.flatMap(Outbox, (outbox) => outbox.lease({ owner, now, leaseMillis, limit, kinds: [kind] }))
      const ids = (items: ReadonlyArray<NewOutboxItem>) => items.map((i) => i.id)
      const stored = (id: string) => Effect.flatMap(Outbox, (outbox) => Effect.map(outbox.get(id), Option.getOrThrow))

      it.effect("an enqueued item is stored as given, with no attempts and no lease", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const fresh = item(kind, T)
          assert.isTrue(yield* outbox.enqueue(fresh))
          const expected: OutboxItem = {
            ...fresh,
            attempts: 0,
            leaseOwner: null,
            leaseExpiresAt: null,
            completedAt: null,
            lastError: null
          }
          assert.deepStrictEqual(yield* outbox.get(fresh.id), Option.some(expected))
          assert.deepStrictEqual(yield* outbox.findByKey(kind, fresh.dedupeKey), Option.some(expected))
          assert.isTrue(Option.isNone(yield* outbox.get(uid("item-"))))
          assert.isTrue(Option.isNone(yield* outbox.findByKey(kind, uid("key-"))))
        })
      )

      it.effect("an item is unique per (kind, dedupeKey): a second enqueue is refused and changes nothing", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const first = item(kind, T)
          assert.isTrue(yield* outbox.enqueue(first))
          const again = item(kind, T + 5, { dedupeKey: first.dedupeKey, payload: { other: true } })
          assert.isFalse(yield* outbox.enqueue(again))
          assert.isTrue(Option.isNone(yield* outbox.get(again.id)))
          assert.strictEqual(Option.getOrThrow(yield* outbox.findByKey(kind, first.dedupeKey)).id, first.id)
          // The same dedupe key under another kind is a different item.
          assert.isTrue(yield* outbox.enqueue(item(uid("kind-"), T, { dedupeKey: first.dedupeKey })))
        })
      )

      it.effect("lease returns only due items, oldest due first, at most limit", () =>
        Effect.gen(function* () {
          const kind = uid("kind-")
          const third = item(kind, T + 30)
          const first = item(kind, T + 10)
          const notDue = item(kind, T + 50)
          const second = item(kind, T + 20)
          yield* enqueueAll([third, first, notDue, second])
          const leased = yield* lease(kind, "w1", T + 40, 2)
          assert.deepStrictEqual(ids(leased), [first.id, second.id])
          assert.isTrue(leased.every((i) => i.leaseOwner === "w1" && i.leaseExpiresAt === T + 40 + 60_000))
          assert.deepStrictEqual(ids(yield* lease(kind, "w1", T + 40, 2)), [third.id])
          assert.deepStrictEqual(yield* lease(kind, "w1", T + 40, 2), [])
          assert.deepStrictEqual(ids(yield* lease(kind, "w1", T + 50, 2)), [notDue.id])
        })
      )

      it.effect("lease takes only the requested kinds", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const [a, b, c] = [uid("kind-"), uid("kind-"), uid("kind-")]
          const ofA = item(a, T)
          const ofB = item(b, T + 1)
          const ofC = item(c, T + 2)
          yield* enqueueAll([ofA, ofB, ofC])
          assert.deepStrictEqual(
            yield* outbox.lease({ owner: "w", now: T + 10, leaseMillis: 1_000, limit: 10, kinds: [] }),
            []
          )
          assert.deepStrictEqual(ids(yield* lease(b, "w", T + 10)), [ofB.id])
          const both = yield* outbox.lease({ owner: "w", now: T + 10, leaseMillis: 1_000, limit: 10, kinds: [a, c] })
          assert.deepStrictEqual(ids(both), [ofA.id, ofC.id])
        })
      )

      it.effect("lease without kinds takes every kind", () =>
        Effect.gen(function* () {
          // The only test with times this small: nothing else in the store is due at `now` = 100.
          const outbox = yield* Outbox
          const ofA = item(uid("kind-"), 1)
          const ofB = item(uid("kind-"), 2)
          yield* enqueueAll([ofB, ofA])
          const leased = yield* outbox.lease({ owner: "w", now: 100, leaseMillis: 1_000, limit: 10 })
          assert.deepStrictEqual(ids(leased), [ofA.id, ofB.id])
        })
      )

      it.effect("a leased item is not leased again until its lease expires, then it is", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const work = item(kind, T)
          yield* enqueueAll([work])
          assert.deepStrictEqual(ids(yield* lease(kind, "w1", T, 10, 1_000)), [work.id])
          assert.deepStrictEqual(yield* lease(kind, "w2", T + 999, 10, 1_000), [])
          const retaken = yield* lease(kind, "w2", T + 1_000, 10, 1_000)
          assert.deepStrictEqual(ids(retaken), [work.id])
          assert.strictEqual(retaken[0]!.leaseOwner, "w2")
          assert.strictEqual(retaken[0]!.leaseExpiresAt, T + 2_000)
          // The first worker lost its lease: it can neither complete nor reschedule.
          assert.isFalse(yield* outbox.complete({ id: work.id, owner: "w1", now: T + 1_001 }))
          assert.isFalse(
            yield* outbox.reschedule({ id: work.id, owner: "w1", nextAttemptAt: T + 5_000, error: "late" })
          )
          assert.isTrue(yield* outbox.complete({ id: work.id, owner: "w2", now: T + 1_002 }))
        })
      )

      it.effect("renew extends the leases the owner still holds, and only those", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const [lost, kept, done, free] = [item(kind, T), item(kind, T + 1), item(kind, T + 2), item(kind, T + 3)]
          yield* enqueueAll([lost, kept, done, free])
          assert.deepStrictEqual(ids(yield* lease(kind, "w1", T + 10, 3, 1_000)), [lost.id, kept.id, done.id])
          assert.isTrue(yield* outbox.complete({ id: done.id, owner: "w1", now: T + 20 }))
          // `lost` ran out and another worker took it over.
          assert.deepStrictEqual(ids(yield* lease(kind, "w2", T + 1_010, 1, 1_000)), [lost.id])
          const renewed = yield* outbox.renew({
            ids: [kept.id, done.id, lost.id, free.id, uid("item-")],
            owner: "w1",
            now: T + 1_500,
            leaseMillis: 1_000
          })
          assert.deepStrictEqual([...renewed].sort(), [kept.id])
          assert.strictEqual((yield* stored(kept.id)).leaseExpiresAt, T + 2_500)
          assert.strictEqual((yield* stored(lost.id)).leaseOwner, "w2")
          assert.strictEqual((yield* stored(free.id)).leaseOwner, null)
          assert.strictEqual((yield* stored(done.id)).leaseOwner, null)
          // Renewed, `kept` is not leased by anyone else before its new expiry; at it, it is.
          // (`lost`, w2's until T + 2_010, has run out by then.)
          assert.deepStrictEqual(ids(yield* lease(kind, "w3", T + 2_499, 10, 1_000)), [lost.id, free.id])
          assert.deepStrictEqual(ids(yield* lease(kind, "w3", T + 2_500, 10, 1_000)), [kept.id])
          assert.deepStrictEqual(yield* outbox.renew({ ids: [], owner: "w1", now: T, leaseMillis: 1_000 }), [])
        })
      )

      it.effect.prop(
        "lease rules: a live lease is never taken over, an expired one is, and each renewal extends it by a full lease",
        [
          fc.integer({ min: 1_000, max: 60_000 }),
          fc.array(fc.integer({ min: 1, max: 1_000 }), { maxLength: 4 }),
          fc.integer({ min: 0, max: 200_000 })
        ],
        ([leaseMillis, beats, probe]) =>
          Effect.gen(function* () {
            const outbox = yield* Outbox
            const kind = uid("kind-")
            const work = item(kind, T)
            yield* enqueueAll([work])
            assert.deepStrictEqual(ids(yield* lease(kind, "w1", T, 10, leaseMillis)), [work.id])
            // The owner renews at each beat, each a fraction of the lease after the one before.
            let now = T
            for (const beat of beats) {
              now += Math.floor((leaseMillis * beat) / 1_000) % leaseMillis
              assert.deepStrictEqual(yield* outbox.renew({ ids: [work.id], owner: "w1", now, leaseMillis }), [work.id])
              assert.strictEqual((yield* stored(work.id)).leaseExpiresAt, now + leaseMillis)
            }
            const expiresAt = now + leaseMillis
            // Another worker at any time: the item is its own from the expiry on, never before.
            const at = now + (probe % (2 * leaseMillis))
            const taken = ids(yield* lease(kind, "w2", at, 10, leaseMillis))
            assert.deepStrictEqual(taken, at >= expiresAt ? [work.id] : [], `at ${at - now} ms of ${leaseMillis}`)
            const holder = yield* stored(work.id)
            assert.strictEqual(holder.leaseOwner, at >= expiresAt ? "w2" : "w1")
            // Taken over, the first owner can no longer renew it.
            if (at >= expiresAt)
              assert.deepStrictEqual(yield* outbox.renew({ ids: [work.id], owner: "w1", now: at, leaseMillis }), [])
          }),
        { fastCheck: { numRuns: 25 } }
      )

      it.effect("complete succeeds for the lease owner only, and a completed item is never leased again", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const work = item(kind, T)
          yield* enqueueAll([work])
          assert.isFalse(yield* outbox.complete({ id: work.id, owner: "w1", now: T })) // not leased yet
          yield* lease(kind, "w1", T, 10, 1_000)
          assert.isFalse(yield* outbox.complete({ id: work.id, owner: "w2", now: T + 1 }))
          assert.isTrue(yield* outbox.complete({ id: work.id, owner: "w1", now: T + 2 }))
          assert.isFalse(yield* outbox.complete({ id: work.id, owner: "w1", now: T + 3 }))
          assert.isFalse(yield* outbox.complete({ id: uid("item-"), owner: "w1", now: T + 3 }))
          const done = yield* stored(work.id)
          assert.strictEqual(done.completedAt, T + 2)
          assert.strictEqual(done.leaseOwner, null)
          assert.strictEqual(done.leaseExpiresAt, null)
          assert.deepStrictEqual(yield* lease(kind, "w3", T + 10_000_000), [])
          assert.isFalse(
            yield* outbox.reschedule({ id: work.id, owner: "w1", nextAttemptAt: T, error: "after completion" })
          )
        })
      )

      it.effect("concurrent completions: each leased item completes once, for its owner only", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const works = Array.from({ length: 24 }, (_, i) => item(kind, T + i))
          yield* enqueueAll(works)
          assert.strictEqual((yield* lease(kind, "w1", T + 100, 100)).length, 24)
          // Each item is completed twice by its owner and once by another worker, all at once.
          const attempts = works.flatMap((w, i) => [
            { id: w.id, owner: "w1", now: T + 1_000 + i },
            { id: w.id, owner: "w2", now: T + 2_000 },
            { id: w.id, owner: "w1", now: T + 3_000 }
          ])
          const results = yield* Effect.all(
            attempts.map((a) => outbox.complete(a)),
            { concurrency: "unbounded" }
          )
          for (const [i, w] of works.entries()) {
            assert.deepStrictEqual(results.slice(i * 3, i * 3 + 3).filter(Boolean).length, 1)
            assert.isFalse(results[i * 3 + 1]!)
            const done = yield* stored(w.id)
            assert.isTrue(done.completedAt === T + 1_000 + i || done.completedAt === T + 3_000)
            assert.strictEqual(done.leaseOwner, null)
          }
        })
      )

      it.effect("reschedule counts the attempt, records the error, releases the lease and sets the next attempt", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const work = item(kind, T)
          yield* enqueueAll([work])
          yield* lease(kind, "w1", T, 10, 60_000)
          assert.isFalse(
            yield* outbox.reschedule({ id: work.id, owner: "w2", nextAttemptAt: T + 10, error: "not mine" })
          )
          assert.isTrue(yield* outbox.reschedule({ id: work.id, owner: "w1", nextAttemptAt: T + 10, error: "timeout" }))
          const retried = yield* stored(work.id)
          assert.deepStrictEqual(
            [
              retried.attempts,
              retried.lastError,
              retried.leaseOwner,
              retried.leaseExpiresAt,
              retried.nextAttemptAt,
              retried.completedAt
            ],
            [1, "timeout", null, null, T + 10, null]
          )
          // Not due before the next attempt; due at it, although the old lease would still run.
          assert.deepStrictEqual(yield* lease(kind, "w2", T + 9), [])
          assert.deepStrictEqual(ids(yield* lease(kind, "w2", T + 10)), [work.id])
          assert.isTrue(yield* outbox.reschedule({ id: work.id, owner: "w2", nextAttemptAt: T + 20, error: "503" }))
          const again = yield* stored(work.id)
          assert.deepStrictEqual([again.attempts, again.lastError], [2, "503"])
        })
      )

      it.effect("8 concurrent workers leasing 100 items get every item exactly once", () =>
        Effect.gen(function* () {
          const kind = uid("kind-")
          const items = Array.from({ length: 100 }, (_, i) => item(kind, T + (i % 7)))
          yield* enqueueAll(items)
          const worker = (owner: string) =>
            Effect.gen(function* () {
              const got: Array<string> = []
              while (true) {
                const batch = yield* lease(kind, owner, T + 100, 3, 3_600_000)
                if (batch.length === 0) return got
                got.push(...ids(batch))
                yield* Effect.yieldNow()
              }
            })
          const perWorker = yield* Effect.all(
            Array.from({ length: 8 }, (_, w) => worker(`worker-${w}`)),
            {
              concurrency: "unbounded"
            }
          )
          const all = perWorker.flat()
          assert.strictEqual(all.length, 100)
          assert.deepStrictEqual([...all].sort(), ids(items).sort())
        })
      )
    })
  })
