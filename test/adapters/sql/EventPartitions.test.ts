/**
 * Event partitions and the retention sweep on PGlite and PostgreSQL, read from the catalog
 * (`pg_inherits`, `pg_class`): the sweep prepares the current month and the months ahead, moving
 * events that waited in the default partition into their month; it drops a monthly partition
 * (one `DROP`) only once every workspace with events in it has expired them, and deletes the
 * remainder of a workspace with a shorter retention in bounded batches; an event older than every
 * partition waits in the default partition and is deleted when it expires, while a backfill's
 * months that some workspace keeps move out of it into partitions of their own, a bounded number a
 * sweep; the Events view reads across partitions; the idempotency keys of expired events go too.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { dayMillis } from "../../../core/ingest/Retention.ts"
import { EventStore, type StoredEvent } from "../../../core/ports/EventStore.ts"
import { monthOf } from "../../../adapters/sql/EventPartitions.ts"
import { storageVariants, uid } from "../../support/storage.ts"

/** Mid-March 2001: months no other test writes to. */
const march2001 = Date.UTC(2001, 2, 15)

const event = (workspaceId: string, occurredAt: number): StoredEvent => ({
  id: uid("evt-"),
  workspaceId,
  eventId: uid("client-"),
  accountId: "acct_1",
  eventName: "feature_used",
  occurredAt,
  receivedAt: occurredAt,
  payloadHash: "a".repeat(64),
  body: { event_name: "feature_used" }
})

/** The partitions of `accord_events` now, by name. */
const partitions = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ readonly name: string }>`SELECT c.relname AS name FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'accord_events'::regclass ORDER BY 1`,
    (rows) => rows.map((row) => row.name)
  )
)

/** The partition holding each of the events with these ids. */
const homes = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly id: string; readonly home: string }>`SELECT id, tableoid::regclass::text AS home
        FROM accord_events WHERE id IN ${sql.in(ids)}`,
      (rows) => new Map(rows.map((row) => [row.id, row.home.replace(/^.*\./, "")]))
    )
  )

const keysOf = (workspaceId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM accord_event_keys WHERE workspace_id = ${workspaceId}`,
      (rows) => Number(rows[0]!.n)
    )
  )

for (const variant of storageVariants.filter((v) => v.sqlLayer !== undefined)) {
  describe.skipIf(!variant.available)(`event partitions (${variant.name})`, () => {
    layer(Layer.orDie(variant.sqlLayer!()), { timeout: 120_000 })((it) => {
      it.effect(
        "a partition is dropped only when every workspace's retention expired it; the rest goes in batches",
        () =>
          Effect.gen(function* () {
            const store = yield* EventStore
            const march = monthOf(march2001)
            const april = monthOf(march.end)
            const short = uid("ws-")
            const long = uid("ws-")
            // Before its month is prepared, a March event waits in the default partition.
            const early = event(short, march2001)
            yield* store.append([early])
            assert.strictEqual((yield* homes([early.id])).get(early.id), "accord_events_default")
            const prepared = yield* store.sweep({ now: march2001, defaultRetention: "forever" })
            assert.includeMembers([...prepared.createdPartitions], [march.name, april.name])
            assert.includeMembers(yield* partitions, [march.name, april.name, "accord_events_default"])
            assert.strictEqual((yield* homes([early.id])).get(early.id), march.name)

            const shortEvents = [early, ...Array.from({ length: 6 }, (_, i) => event(short, march.start + i * 1000))]
            const longEvents = [event(long, march.start + 5), event(long, april.start + 5)]
            // Older than every partition: the default partition takes it.
            const ancient = event(short, Date.UTC(1990, 0, 1))
            yield* store.append([...shortEvents, ...longEvents, ancient])
            assert.strictEqual((yield* homes([ancient.id])).get(ancient.id), "accord_events_default")
            yield* store.setRetention(short, 30, march2001)
            yield* store.setRetention(long, 200, march2001)

            // June: both months expired for `short` (30 days), not for `long` (200 days).
            const june = Date.UTC(2001, 5, 20)
            const first = yield* store.sweep({ now: june, defaultRetention: "forever", batchSize: 2 })
            assert.notInclude(first.droppedPartitions, march.name)
            assert.include(yield* partitions, march.name)
            assert.deepStrictEqual(yield* store.listAll({ workspaceId: short }), [])
            assert.strictEqual(yield* keysOf(short), 0)
            assert.sameMembers(
              (yield* store.listAll({ workspaceId: long })).map((e) => e.id),
              longEvents.map((e) => e.id)
            )
            assert.isAtLeast(first.deletedEvents, shortEvents.length + 1)

            // Once `long` keeps 30 days too, March and April are dropped whole, and its events go.
            yield* store.setRetention(long, 30, june)
            const second = yield* store.sweep({ now: june, defaultRetention: "forever" })
            assert.includeMembers([...second.droppedPartitions], [march.name, april.name])
            const left = yield* partitions
            assert.notInclude(left, march.name)
            assert.notInclude(left, april.name)
            assert.include(left, "accord_events_default")
            assert.deepStrictEqual(yield* store.listAll({ workspaceId: long }), [])
            assert.strictEqual(yield* keysOf(long), 0)
            // The events view reads across what is left.
            const recent = event(long, Date.now() - dayMillis)
            yield* store.append([recent])
            assert.deepStrictEqual(
              (yield* store.list({ workspaceId: long, limit: 10 })).map((e) => e.id),
              [recent.id]
            )
          })
      )

      it.effect(
        "a backfill's earlier months leave the default partition, at most 12 a sweep, unless no workspace keeps them",
        () =>
          Effect.gen(function* () {
            const store = yield* EventStore
            const keeper = uid("ws-")
            const expiring = uid("ws-")
            // Fourteen months of 2004 and 2005, kept; and a June 2003 event its workspace expired.
            const kept = Array.from({ length: 14 }, (_, i) => event(keeper, Date.UTC(2004, i, 10)))
            const expired = event(expiring, Date.UTC(2003, 5, 10))
            yield* store.append([...kept, expired])
            const before = yield* homes([...kept, expired].map((e) => e.id))
            for (const e of [...kept, expired]) assert.strictEqual(before.get(e.id), "accord_events_default")
            const now = Date.UTC(2006, 6, 1)
            yield* store.setRetention(expiring, 30, now)

            const first = yield* store.sweep({ now, defaultRetention: "forever" })
            const firstYear = kept.slice(0, 12).map((e) => monthOf(e.occurredAt).name)
            assert.includeMembers([...first.createdPartitions], firstYear)
            assert.notInclude(first.createdPartitions, monthOf(kept[12]!.occurredAt).name)
            assert.notInclude(yield* partitions, monthOf(expired.occurredAt).name)
            assert.deepStrictEqual(yield* store.listAll({ workspaceId: expiring }), [])

            const second = yield* store.sweep({ now, defaultRetention: "forever" })
            assert.sameMembers(
              [...second.createdPartitions],
              kept.slice(12).map((e) => monthOf(e.occurredAt).name)
            )
            const after = yield* homes(kept.map((e) => e.id))
            for (const e of kept) assert.strictEqual(after.get(e.id), monthOf(e.occurredAt).name)
            assert.strictEqual((yield* store.listAll({ workspaceId: keeper })).length, kept.length)
            assert.deepStrictEqual((yield* store.sweep({ now, defaultRetention: "forever" })).createdPartitions, [])
          })
      )

      it.effect("a workspace keeping its events forever keeps their partition", () =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const september = Date.UTC(2002, 8, 10)
          const month = monthOf(september)
          yield* store.sweep({ now: september, defaultRetention: "forever" })
          const keeper = uid("ws-")
          const kept = event(keeper, september)
          yield* store.append([kept])
          yield* store.setRetention(keeper, "forever", september)
          const later = yield* store.sweep({ now: Date.UTC(2010, 0, 1), defaultRetention: 1 })
          assert.notInclude(later.droppedPartitions, month.name)
          assert.include(yield* partitions, month.name)
          assert.deepStrictEqual(
            (yield* store.listAll({ workspaceId: keeper })).map((e) => e.id),
            [kept.id]
          )
        })
      )
    })
  })
}
