/**
 * The Committer: concurrent submissions share one write, each gets its own result, and an event
 * the store refuses fails only itself, never the events batched with it; a batch that meets a
 * transient fault is retried (a lost connection) or answered (a timeout) as a batch, never split,
 * and a timeout also answers the events queued behind it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import { EventStore } from "../../../core/ports/EventStore.ts"
import { Committer, layer as committerLayer } from "../../../core/ingest/Committer.ts"
import { prepareEvent, withPayloadHash } from "../../../core/ingest/Ingest.ts"
import { IngestWriter, type Submission } from "../../../core/ports/IngestWriter.ts"
import { StorageError, type StorageFault } from "../../../core/ports/StorageError.ts"
import { cipherLayer } from "../../support/storage.ts"

const now = Date.UTC(2026, 10, 20, 12)
const workspaceId = "ws-committer"

const submission = (eventId: string) =>
  Effect.gen(function* () {
    const prepared = prepareEvent(
      {
        event_name: "feature_used",
        account_id: "acct_1",
        timestamp: new Date(now - 60_000).toISOString(),
        event_id: eventId
      },
      { id: `row-${eventId}`, workspaceId, now }
    )
    if (Either.isLeft(prepared)) return yield* Effect.dieMessage("test event refused")
    return {
      stored: yield* withPayloadHash(prepared.right),
      normalized: prepared.right,
      keyScope: "ingest"
    } satisfies Submission
  }).pipe(Effect.provide(NodeCrypto.layer))

/** The memory writer, refusing (as a store would refuse unstorable data) any batch holding `poison`, and counting writes. */
const refusing = (poison: string, writes: Array<number>) =>
  Layer.effect(
    IngestWriter,
    Effect.map(IngestWriter, (writer) => ({
      write: (batch: ReadonlyArray<Submission>) => {
        writes.push(batch.length)
        return batch.some((s) => s.stored.eventId === poison)
          ? Effect.fail(new StorageError({ operation: "ingest.write", message: "refused" }))
          : writer.write(batch)
      }
    }))
  )

describe("Committer", () => {
  it.scoped("a batch holding an event the store refuses: only that event fails, the others are stored", () =>
    Effect.gen(function* () {
      const writes: Array<number> = []
      const context = yield* Layer.build(
        committerLayer().pipe(
          Layer.provideMerge(refusing("poison", writes)),
          Layer.provideMerge(MemoryStorage.layer),
          Layer.provide(cipherLayer)
        )
      )
      const committer = Effect.runSync(Effect.provide(Committer, context))
      const events = yield* Effect.forEach(["a", "b", "poison", "c"], submission)
      // Submitted together, so they share the first write.
      const results = yield* Effect.all(
        events.map((s) => Effect.either(committer.submit(s))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(
        results.map((r) => (Either.isRight(r) ? r.right._tag : r.left._tag)),
        ["Stored", "Stored", "StorageError", "Stored"]
      )
      assert.strictEqual(writes[0], 4)
      const stored = yield* Effect.flatMap(Effect.provide(EventStore, context), (store) =>
        store.list({ workspaceId, limit: 10 })
      )
      assert.deepStrictEqual(stored.map((e) => e.eventId).sort(), ["a", "b", "c"])
    })
  )

  /** The memory writer, failing its first `failures` writes with `fault`, and counting writes. */
  const faulty = (fault: StorageFault, failures: number, writes: Array<number>) =>
    Layer.effect(
      IngestWriter,
      Effect.map(IngestWriter, (writer) => ({
        write: (batch: ReadonlyArray<Submission>) => {
          writes.push(batch.length)
          return writes.length <= failures
            ? Effect.fail(new StorageError({ operation: "ingest.write", message: fault, fault }))
            : writer.write(batch)
        }
      }))
    )

  const submitTogether = (fault: StorageFault, failures: number, writes: Array<number>) =>
    Effect.gen(function* () {
      const context = yield* Layer.build(
        committerLayer().pipe(
          Layer.provideMerge(faulty(fault, failures, writes)),
          Layer.provideMerge(MemoryStorage.layer),
          Layer.provide(cipherLayer)
        )
      )
      const committer = Effect.runSync(Effect.provide(Committer, context))
      const events = yield* Effect.forEach(["a", "b", "c", "d"], submission)
      const results = yield* Effect.all(
        events.map((s) => Effect.either(committer.submit(s))),
        { concurrency: "unbounded" }
      )
      return results.map((r) => (Either.isRight(r) ? r.right._tag : r.left._tag))
    })

  it.scoped("a lost connection: the same batch runs once more, whole, and is stored", () =>
    Effect.gen(function* () {
      const writes: Array<number> = []
      assert.deepStrictEqual(yield* submitTogether("connection", 1, writes), ["Stored", "Stored", "Stored", "Stored"])
      assert.deepStrictEqual(writes, [4, 4])
    })
  )

  it.scoped("a lost connection twice: the batch is answered with the fault, not split into single writes", () =>
    Effect.gen(function* () {
      const writes: Array<number> = []
      assert.deepStrictEqual(yield* submitTogether("connection", 2, writes), [
        "StorageError",
        "StorageError",
        "StorageError",
        "StorageError"
      ])
      assert.deepStrictEqual(writes, [4, 4])
    })
  )

  it.scoped("a timeout (a locked table): one write for the batch, answered with the fault, no retry, no split", () =>
    Effect.gen(function* () {
      const writes: Array<number> = []
      assert.deepStrictEqual(yield* submitTogether("timeout", 1, writes), [
        "StorageError",
        "StorageError",
        "StorageError",
        "StorageError"
      ])
      assert.deepStrictEqual(writes, [4])
    })
  )

  it.scoped(
    "a timeout: the events queued while the batch waited are answered with it, without a write of their own",
    () =>
      Effect.gen(function* () {
        const writes: Array<number> = []
        const release = yield* Deferred.make<void>()
        const context = yield* Layer.build(
          committerLayer().pipe(
            Layer.provideMerge(
              Layer.succeed(IngestWriter, {
                write: (batch: ReadonlyArray<Submission>) => {
                  writes.push(batch.length)
                  return Effect.zipRight(
                    Deferred.await(release),
                    Effect.fail(new StorageError({ operation: "ingest.write", message: "timeout", fault: "timeout" }))
                  )
                }
              })
            )
          )
        )
        const committer = Effect.runSync(Effect.provide(Committer, context))
        const [a, b, c, d] = yield* Effect.forEach(["a", "b", "c", "d"], submission)
        const first = yield* Effect.fork(
          Effect.all(
            [a!, b!].map((s) => Effect.either(committer.submit(s))),
            { concurrency: "unbounded" }
          )
        )
        while (writes.length === 0) yield* Effect.yieldNow()
        // Each submission queued (its fiber waits for its answer) before the write fails.
        const queued = yield* Effect.forEach([c!, d!], (s) => Effect.fork(Effect.either(committer.submit(s))))
        for (const fiber of queued) while ((yield* Fiber.status(fiber))._tag !== "Suspended") yield* Effect.yieldNow()
        yield* Deferred.succeed(release, undefined)
        const results = [...(yield* Fiber.join(first)), ...(yield* Fiber.join(Fiber.all(queued)))]
        assert.deepStrictEqual(
          results.map((r) => (Either.isLeft(r) ? r.left.fault : "stored")),
          ["timeout", "timeout", "timeout", "timeout"]
        )
        assert.deepStrictEqual(writes, [2])
      })
  )
})
