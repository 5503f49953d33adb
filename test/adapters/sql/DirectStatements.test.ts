/**
 * The ingest batch statement on PostgreSQL runs straight on the pool (`DirectStatements`; less
 * server CPU per event): it stores what the `SqlClient` path stores, a caller's transaction keeps it
 * on that transaction's connection (so a rollback takes it back), and a driver error is the writer's
 * `StorageError`, nothing else of the batch written. The writer's callback form (`writeNow`, the
 * group commit's path) runs the same statement and answers the same.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Database from "../../../adapters/sql/Database.ts"
import { DirectStatements } from "../../../adapters/sql/DirectStatements.ts"
import * as SqlStorage from "../../../adapters/sql/Storage.ts"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { prepareEvent, withPayloadHash } from "../../../core/ingest/Ingest.ts"
import { EventStore } from "../../../core/ports/EventStore.ts"
import { IngestWriter, IngestWriterNow, type Submission, type WriteResult } from "../../../core/ports/IngestWriter.ts"
import { StorageError } from "../../../core/ports/StorageError.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../../support/postgres.ts"
import { cipherLayer, uid } from "../../support/storage.ts"

const NOW = Date.UTC(2026, 10, 27, 12)

const submission = (workspaceId: string, accountId: string) =>
  Effect.gen(function* () {
    const prepared = prepareEvent(
      {
        event_name: "feature_used",
        account_id: accountId,
        timestamp: new Date(NOW - 60_000).toISOString(),
        event_id: uid("feature_used:"),
        properties: { feature_key: "reports", plan: "pro" }
      },
      { id: uid("evt-"), workspaceId, now: NOW }
    )
    if (Either.isLeft(prepared)) return yield* Effect.dieMessage(prepared.left._tag)
    return {
      stored: yield* withPayloadHash(prepared.right),
      normalized: prepared.right,
      keyScope: "ingest"
    } satisfies Submission
  }).pipe(Effect.provide(NodeCrypto.layer))

/** The statements the direct path ran, and whether it should fail them. */
class Spy extends Context.Tag("test/DirectStatementsSpy")<
  Spy,
  { readonly texts: Array<string>; failNext: boolean }
>() {}

/** PostgreSQL in a schema of its own, its `DirectStatements` wrapped by the spy, under the SQL storage. */
const storage = () => {
  const spied = Layer.effectContext(
    Effect.gen(function* () {
      const context = yield* Effect.context<SqlClient.SqlClient | DirectStatements>()
      const real = Context.get(context, DirectStatements)
      const spy = { texts: [] as string[], failNext: false }
      return context.pipe(
        Context.add(DirectStatements, {
          run: (text, values, done) => {
            spy.texts.push(text)
            if (!spy.failNext) return real.run(text, values, done)
            spy.failNext = false
            done(new Error("connection terminated unexpectedly"), [])
          }
        }),
        Context.add(Spy, spy)
      )
    })
  ).pipe(Layer.provide(Layer.unwrapScoped(Effect.map(freshSchemaUrl(databaseUrl!), Database.layerPg))))
  return SqlStorage.layer.pipe(Layer.provideMerge(Layer.merge(spied, cipherLayer)))
}

warnIfSkipped("direct ingest statement")
describe.skipIf(databaseUrl === undefined)("the ingest batch statement on the pool (postgres)", () => {
  layer(Layer.orDie(storage()), { timeout: 60_000 })((it) => {
    it.effect("runs on the pool once per batch and stores every event, read back like any other", () =>
      Effect.gen(function* () {
        const spy = yield* Spy
        const writer = yield* IngestWriter
        const events = yield* EventStore
        const workspaceId = uid("ws-")
        const batch = yield* Effect.forEach([1, 2, 3], (i) => submission(workspaceId, `acct_${i}`))
        const before = spy.texts.length
        const results = yield* writer.write(batch)
        assert.strictEqual(spy.texts.length, before + 1)
        assert.deepStrictEqual(
          results.map((r) => r._tag),
          ["Stored", "Stored", "Stored"]
        )
        const stored = yield* events.getByIds(
          workspaceId,
          batch.map((s) => ({ id: s.stored.id, occurredAt: s.stored.occurredAt }))
        )
        assert.sameMembers(
          stored.map((e) => e.eventId),
          batch.map((s) => s.stored.eventId)
        )
        // The same events again: duplicates, nothing stored twice.
        const again = yield* writer.write(batch)
        assert.deepStrictEqual(
          again.map((r) => r._tag),
          ["Duplicate", "Duplicate", "Duplicate"]
        )
      })
    )

    it.effect("inside a caller's transaction it runs on the transaction's connection: a rollback takes it back", () =>
      Effect.gen(function* () {
        const spy = yield* Spy
        const sql = yield* SqlClient.SqlClient
        const writer = yield* IngestWriter
        const events = yield* EventStore
        const workspaceId = uid("ws-")
        const batch = yield* Effect.forEach([1, 2], (i) => submission(workspaceId, `acct_${i}`))
        const before = spy.texts.length
        const rolledBack = yield* Effect.either(
          sql.withTransaction(Effect.zipRight(writer.write(batch), Effect.fail("undo" as const)))
        )
        assert.deepStrictEqual(rolledBack, Either.left("undo"))
        assert.strictEqual(spy.texts.length, before)
        assert.deepStrictEqual(
          yield* events.getByIds(
            workspaceId,
            batch.map((s) => ({ id: s.stored.id, occurredAt: s.stored.occurredAt }))
          ),
          []
        )
      })
    )

    it.effect("a driver error fails the batch with the writer's StorageError, and nothing of it is stored", () =>
      Effect.gen(function* () {
        const spy = yield* Spy
        const writer = yield* IngestWriter
        const events = yield* EventStore
        const workspaceId = uid("ws-")
        const batch = yield* Effect.forEach([1, 2], (i) => submission(workspaceId, `acct_${i}`))
        spy.failNext = true
        const failed = yield* Effect.flip(writer.write(batch))
        assert.instanceOf(failed, StorageError)
        assert.strictEqual(failed.operation, "ingest.write")
        assert.deepStrictEqual(
          yield* events.getByIds(
            workspaceId,
            batch.map((s) => ({ id: s.stored.id, occurredAt: s.stored.occurredAt }))
          ),
          []
        )
        // The next batch goes through.
        const results = yield* writer.write(batch)
        assert.deepStrictEqual(
          results.map((r) => r._tag),
          ["Stored", "Stored"]
        )
      })
    )

    it.effect(
      "the callback form (the group commit's path) runs the same statement on the pool, once per batch, and fails a driver error the same way",
      () =>
        Effect.gen(function* () {
          const spy = yield* Spy
          const writer = yield* IngestWriter
          const events = yield* EventStore
          const writeNow = Option.getOrUndefined(yield* Effect.serviceOption(IngestWriterNow))?.writeNow
          assert.isDefined(writeNow, "the SQL writer on PostgreSQL has its callback form")
          const now = (batch: ReadonlyArray<Submission>) =>
            Effect.async<ReadonlyArray<WriteResult>, StorageError>((resume) => writeNow!(batch, resume))
          const workspaceId = uid("ws-")
          const batch = yield* Effect.forEach([1, 2, 3], (i) => submission(workspaceId, `acct_${i}`))
          const before = spy.texts.length
          assert.deepStrictEqual(
            (yield* now(batch)).map((r) => r._tag),
            ["Stored", "Stored", "Stored"]
          )
          assert.strictEqual(spy.texts.length, before + 1)
          // The statement `write` runs on the pool, word for word.
          yield* writer.write(yield* Effect.forEach([4], (i) => submission(workspaceId, `acct_${i}`)))
          assert.strictEqual(spy.texts[before + 1], spy.texts[before])
          assert.sameMembers(
            (yield* events.getByIds(
              workspaceId,
              batch.map((s) => ({ id: s.stored.id, occurredAt: s.stored.occurredAt }))
            )).map((e) => e.eventId),
            batch.map((s) => s.stored.eventId)
          )
          // Retried, they are duplicates, read back through `resolveAppend` as `write` answers them.
          assert.deepStrictEqual(
            (yield* now(batch)).map((r) => r._tag),
            ["Duplicate", "Duplicate", "Duplicate"]
          )
          const fresh = yield* Effect.forEach([5, 6], (i) => submission(workspaceId, `acct_${i}`))
          spy.failNext = true
          const failed = yield* Effect.flip(now(fresh))
          assert.instanceOf(failed, StorageError)
          assert.strictEqual(failed.operation, "ingest.write")
          assert.deepStrictEqual(
            yield* events.getByIds(
              workspaceId,
              fresh.map((s) => ({ id: s.stored.id, occurredAt: s.stored.occurredAt }))
            ),
            []
          )
        })
    )
  })
})
