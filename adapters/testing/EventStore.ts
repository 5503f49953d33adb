import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fc from "fast-check"
import { type EventQuery, EventStore, newestFirst, type StoredEvent } from "../../core/ports/EventStore.ts"
import { dayMillis } from "../../core/ingest/Retention.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000

/**
 * The EventStore contract (Direct API ingestion). One store per suite; each test writes to
 * workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<EventStore, unknown>) =>
  describe(`EventStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const event = (workspaceId: string, overrides: Partial<StoredEvent> = {}): StoredEvent => ({
        id: uid("evt-"),
        workspaceId,
        eventId: uid("client-"),
        accountId: "acct_1",
        eventName: "subscription.renewed",
        occurredAt: T,
        receivedAt: T + 5,
        payloadHash: "a".repeat(64),
        body: { event_name: "subscription.renewed", properties: { plan: "pro", seats: 3, trial: false, tags: ["x"] } },
        ...overrides
      })
      const append = (events: ReadonlyArray<StoredEvent>) => Effect.flatMap(EventStore, (store) => store.append(events))
      const list = (query: EventQuery) => Effect.flatMap(EventStore, (store) => store.list(query))
      const ids = (events: ReadonlyArray<StoredEvent>) => events.map((e) => e.id)
      /**
       * Every page of `query`, `pageSize` events at a time, each after the previous page's last
       * event (at most `count` + 1 pages); each page at most `pageSize` long.
       */
      const walk = (query: Omit<EventQuery, "limit">, pageSize: number, count: number) =>
        Effect.gen(function* () {
          const walked: Array<StoredEvent> = []
          let after: EventQuery["after"]
          for (let pages = 0; pages <= count; pages++) {
            const page: ReadonlyArray<StoredEvent> = yield* list({
              ...query,
              limit: pageSize,
              ...(after ? { after } : {})
            })
            assert.isAtMost(page.length, pageSize)
            if (page.length === 0) break
            walked.push(...page)
            const last = page[page.length - 1]!
            after = { occurredAt: last.occurredAt, id: last.id }
          }
          return walked
        })

      it.effect("a new event is stored and found by its event id, exactly as given", () =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const workspaceId = uid("ws-")
          const stored = event(workspaceId)
          assert.deepStrictEqual(yield* append([stored]), [{ _tag: "Stored", event: stored }])
          assert.deepStrictEqual(yield* store.findByEventId(workspaceId, stored.eventId!), Option.some(stored))
          assert.deepStrictEqual(yield* list({ workspaceId, limit: 10 }), [stored])
          assert.isTrue(Option.isNone(yield* store.findByEventId(workspaceId, uid("client-"))))
          assert.isTrue(Option.isNone(yield* store.findByEventId(uid("ws-"), stored.eventId!)))
          assert.deepStrictEqual(yield* append([]), [])
        })
      )

      it.effect("the same event id with the same payload hash is a duplicate that returns the original", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const original = event(workspaceId)
          yield* append([original])
          const retry = event(workspaceId, { eventId: original.eventId, receivedAt: T + 60_000 })
          assert.deepStrictEqual(yield* append([retry]), [{ _tag: "Duplicate", event: original }])
          assert.deepStrictEqual(yield* list({ workspaceId, limit: 10 }), [original])
        })
      )

      it.effect("the same event id with another payload hash is a conflict that returns the original", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const original = event(workspaceId)
          yield* append([original])
          const different = event(workspaceId, {
            eventId: original.eventId,
            payloadHash: "b".repeat(64),
            body: { other: 1 }
          })
          assert.deepStrictEqual(yield* append([different]), [{ _tag: "Conflict", event: original }])
          assert.deepStrictEqual(yield* list({ workspaceId, limit: 10 }), [original])
        })
      )

      it.effect("events without an event id are never duplicates", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const first = event(workspaceId, { eventId: null })
          const second = event(workspaceId, { eventId: null })
          const third = event(workspaceId, { eventId: null })
          assert.deepStrictEqual(yield* append([first]), [{ _tag: "Stored", event: first }])
          assert.deepStrictEqual(
            (yield* append([second, third])).map((r) => r._tag),
            ["Stored", "Stored"]
          )
          assert.sameMembers(ids(yield* list({ workspaceId, limit: 10 })), [first.id, second.id, third.id])
        })
      )

      it.effect("event ids are unique per workspace, not across workspaces", () =>
        Effect.gen(function* () {
          const eventId = uid("client-")
          const a = event(uid("ws-"), { eventId })
          const b = event(uid("ws-"), { eventId })
          assert.deepStrictEqual(
            (yield* append([a])).map((r) => r._tag),
            ["Stored"]
          )
          assert.deepStrictEqual(
            (yield* append([b])).map((r) => r._tag),
            ["Stored"]
          )
        })
      )

      it.effect("in one batch, the first event with an event id wins; later ones are duplicates or conflicts", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const first = event(workspaceId)
          const same = event(workspaceId, { eventId: first.eventId })
          const different = event(workspaceId, { eventId: first.eventId, payloadHash: "c".repeat(64) })
          const unrelated = event(workspaceId)
          assert.deepStrictEqual(yield* append([first, same, different, unrelated]), [
            { _tag: "Stored", event: first },
            { _tag: "Duplicate", event: first },
            { _tag: "Conflict", event: first },
            { _tag: "Stored", event: unrelated }
          ])
          assert.sameMembers(ids(yield* list({ workspaceId, limit: 10 })), [first.id, unrelated.id])
        })
      )

      it.effect("a rollup bucket stored again with the same payload is a duplicate of the original", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const original = event(workspaceId, { eventId: null, bucketKey: "bucket-1" })
          assert.deepStrictEqual(yield* append([original]), [{ _tag: "Stored", event: original }])
          const resend = event(workspaceId, { eventId: null, bucketKey: "bucket-1", receivedAt: T + 60_000 })
          assert.deepStrictEqual(yield* append([resend]), [{ _tag: "Duplicate", event: original }])
          assert.deepStrictEqual(yield* list({ workspaceId, limit: 10 }), [original])
        })
      )

      it.effect("a rollup bucket stored again with another payload replaces the row's value, never adds a row", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const original = event(workspaceId, { eventId: null, bucketKey: "bucket-1", body: { value: 10 } })
          yield* append([original])
          const changed = event(workspaceId, {
            eventId: null,
            bucketKey: "bucket-1",
            payloadHash: "d".repeat(64),
            receivedAt: T + 60_000,
            body: { value: 12 }
          })
          const replaced = { ...changed, id: original.id }
          assert.deepStrictEqual(yield* append([changed]), [{ _tag: "Stored", event: replaced }])
          assert.deepStrictEqual(yield* list({ workspaceId, limit: 10 }), [replaced])
          // another bucket, another workspace's same bucket: separate rows
          const other = event(workspaceId, { eventId: null, bucketKey: "bucket-2" })
          const elsewhere = event(uid("ws-"), { eventId: null, bucketKey: "bucket-1" })
          assert.deepStrictEqual(
            (yield* append([other, elsewhere])).map((r) => r._tag),
            ["Stored", "Stored"]
          )
          assert.sameMembers(ids(yield* list({ workspaceId, limit: 10 })), [original.id, other.id])
        })
      )

      it.effect("in one batch, later sends of a bucket replace the first; the last value stays", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const first = event(workspaceId, { eventId: null, bucketKey: "b", body: { value: 1 } })
          const second = event(workspaceId, {
            eventId: null,
            bucketKey: "b",
            payloadHash: "e".repeat(64),
            body: { value: 2 }
          })
          const again = event(workspaceId, {
            eventId: null,
            bucketKey: "b",
            payloadHash: "e".repeat(64),
            body: { value: 2 }
          })
          const results = yield* append([first, second, again])
          assert.deepStrictEqual(
            results.map((r) => r._tag),
            ["Stored", "Stored", "Duplicate"]
          )
          const rows = yield* list({ workspaceId, limit: 10 })
          assert.deepStrictEqual(rows, [{ ...second, id: first.id }])
        })
      )

      it.effect("list is newest first by occurredAt, then by id descending", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const events = [
            event(workspaceId, { id: "evt-b", occurredAt: T + 1 }),
            event(workspaceId, { id: "evt-a", occurredAt: T + 2 }),
            event(workspaceId, { id: "evt-c", occurredAt: T + 1 }),
            event(workspaceId, { id: "evt-d", occurredAt: T })
          ].map((e) => ({ ...e, id: `${e.id}-${workspaceId}` }))
          yield* append(events)
          assert.deepStrictEqual(
            ids(yield* list({ workspaceId, limit: 10 })),
            [events[1]!, events[2]!, events[0]!, events[3]!].map((e) => e.id)
          )
          assert.deepStrictEqual(
            ids(yield* list({ workspaceId, limit: 2 })),
            [events[1]!, events[2]!].map((e) => e.id)
          )
        })
      )

      it.effect("list filters by account, name, from (inclusive) and to (exclusive)", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const e = (accountId: string, eventName: string, occurredAt: number) =>
            event(workspaceId, { accountId, eventName, occurredAt })
          const a1 = e("acct_a", "login", T + 10)
          const a2 = e("acct_a", "purchase", T + 20)
          const a3 = e("acct_a", "login", T + 30)
          const b1 = e("acct_b", "login", T + 20)
          yield* append([a1, a2, a3, b1])
          const q = (query: Omit<EventQuery, "workspaceId" | "limit">) =>
            Effect.map(list({ workspaceId, limit: 10, ...query }), ids)
          assert.deepStrictEqual(yield* q({ accountId: "acct_a" }), [a3.id, a2.id, a1.id])
          assert.deepStrictEqual(yield* q({ eventName: "login" }), [a3.id, b1.id, a1.id])
          assert.deepStrictEqual(yield* q({ accountId: "acct_a", eventName: "login" }), [a3.id, a1.id])
          assert.sameMembers(yield* q({ from: T + 20 }), [a3.id, a2.id, b1.id])
          assert.deepStrictEqual(yield* q({ to: T + 20 }), [a1.id])
          assert.sameMembers(yield* q({ from: T + 20, to: T + 30 }), [a2.id, b1.id])
          assert.deepStrictEqual(yield* q({ from: T + 20, to: T + 20 }), [])
          assert.deepStrictEqual(yield* q({ accountId: "acct_none" }), [])
        })
      )

      it.effect("listAll returns every matching event, past any page, newest first", () =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const workspaceId = uid("ws-")
          const access = Array.from({ length: 60 }, (_, i) =>
            event(workspaceId, { eventId: null, eventName: "entitlement_active", occurredAt: T + i })
          )
          yield* append([
            ...access,
            event(workspaceId, { eventName: "feature_adopted", occurredAt: T + 5 }),
            event(workspaceId, { eventName: "entitlement_active", accountId: "acct_2", occurredAt: T + 5 }),
            event(uid("ws-"), { eventName: "entitlement_active", occurredAt: T + 5 })
          ])
          const query = { workspaceId, accountId: "acct_1", eventName: "entitlement_active" }
          assert.deepStrictEqual(ids(yield* store.listAll(query)), ids([...access].sort(newestFirst)))
          assert.deepStrictEqual(ids(yield* store.listAll({ ...query, from: T + 58 })), [
            access[59]!.id,
            access[58]!.id
          ])
          assert.deepStrictEqual(yield* store.listAll({ ...query, accountId: "acct_none" }), [])
        })
      )

      it.effect(
        "getByIds returns the workspace's events with those ids, exactly as stored, whatever time each is expected at",
        () =>
          Effect.gen(function* () {
            const store = yield* EventStore
            const workspaceId = uid("ws-")
            const year = 366 * 86_400_000
            // Months and years apart, so that each lies in a partition of its own where there are some.
            const [a, b, c, d] = [
              event(workspaceId, { occurredAt: T }),
              event(workspaceId, { eventId: null, occurredAt: T - year }),
              event(workspaceId, { occurredAt: T - 40 * 86_400_000 }),
              event(workspaceId, { occurredAt: T - 3 * year })
            ]
            const elsewhere = event(uid("ws-"), { occurredAt: T })
            yield* append([a!, b!, c!, d!, elsewhere])
            const byId = (events: ReadonlyArray<StoredEvent>) => [...events].sort((x, y) => (x.id < y.id ? -1 : 1))
            const at = (e: StoredEvent) => ({ id: e.id, occurredAt: e.occurredAt })
            // Where each occurred, and an id twice.
            assert.deepStrictEqual(
              byId(yield* store.getByIds(workspaceId, [at(a!), at(b!), at(elsewhere), at(a!)])),
              byId([a!, b!])
            )
            // Expected at another time (one of another event, or none any event has): found all the same.
            assert.deepStrictEqual(
              byId(
                yield* store.getByIds(workspaceId, [
                  { id: c!.id, occurredAt: a!.occurredAt },
                  { id: d!.id, occurredAt: T - 7 * year },
                  at(b!)
                ])
              ),
              byId([b!, c!, d!])
            )
            assert.deepStrictEqual(yield* store.getByIds(workspaceId, [{ id: uid("evt-"), occurredAt: T }]), [])
            assert.deepStrictEqual(yield* store.getByIds(workspaceId, []), [])
          })
      )

      it.effect("other workspaces' events are invisible", () =>
        Effect.gen(function* () {
          const mine = uid("ws-")
          const theirs = uid("ws-")
          const own = event(mine)
          yield* append([own, event(theirs), event(theirs, { accountId: own.accountId })])
          assert.deepStrictEqual(ids(yield* list({ workspaceId: mine, limit: 10 })), [own.id])
          assert.deepStrictEqual(ids(yield* list({ workspaceId: mine, accountId: own.accountId, limit: 10 })), [own.id])
        })
      )

      it.effect.prop(
        "paging with the after cursor walks every event exactly once, newest first",
        [fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 0, maxLength: 25 }), fc.integer({ min: 1, max: 6 })],
        ([offsets, pageSize]) =>
          Effect.gen(function* () {
            const workspaceId = uid("ws-")
            const events = offsets.map((offset) => event(workspaceId, { eventId: null, occurredAt: T + offset }))
            if (events.length > 0) yield* append(events)
            assert.deepStrictEqual(
              ids(yield* walk({ workspaceId }, pageSize, events.length)),
              ids([...events].sort(newestFirst))
            )
          }),
        { fastCheck: { numRuns: 30 } }
      )

      it.effect.prop(
        "events months and years apart: every filter's pages walk them exactly once, newest first",
        [
          fc.array(fc.tuple(fc.integer({ min: -40, max: 3 }), fc.integer({ min: 0, max: 2 }), fc.boolean()), {
            minLength: 0,
            maxLength: 30
          }),
          fc.integer({ min: 1, max: 7 }),
          fc.constantFrom<"none" | "account" | "name" | "from" | "to">("none", "account", "name", "from", "to")
        ],
        ([spread, pageSize, filter]) =>
          Effect.gen(function* () {
            const workspaceId = uid("ws-")
            const month = 30 * dayMillis
            const events = spread.map(([months, account, login]) =>
              event(workspaceId, {
                eventId: null,
                accountId: `acct_${account}`,
                eventName: login ? "login" : "feature_used",
                occurredAt: T + months * month + account
              })
            )
            if (events.length > 0) yield* append(events)
            const query: Omit<EventQuery, "limit"> = {
              workspaceId,
              ...(filter === "account" ? { accountId: "acct_1" } : {}),
              ...(filter === "name" ? { eventName: "login" } : {}),
              ...(filter === "from" ? { from: T - 7 * month } : {}),
              ...(filter === "to" ? { to: T - 2 * month } : {})
            }
            const expected = events.filter(
              (e) =>
                (query.accountId === undefined || e.accountId === query.accountId) &&
                (query.eventName === undefined || e.eventName === query.eventName) &&
                (query.from === undefined || e.occurredAt >= query.from) &&
                (query.to === undefined || e.occurredAt < query.to)
            )
            assert.deepStrictEqual(
              ids(yield* walk(query, pageSize, expected.length)),
              ids([...expected].sort(newestFirst))
            )
          }),
        { fastCheck: { numRuns: 30 } }
      )

      it.effect("50 concurrent appends of one event id: exactly one is stored", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const eventId = uid("client-")
          const results = yield* Effect.all(
            Array.from({ length: 50 }, () => append([event(workspaceId, { eventId })])),
            { concurrency: "unbounded" }
          )
          const tags = results.map(([r]) => r!._tag)
          assert.strictEqual(tags.filter((t) => t === "Stored").length, 1)
          assert.strictEqual(tags.filter((t) => t === "Duplicate").length, 49)
          const winner = results.find(([r]) => r!._tag === "Stored")![0]!.event
          assert.isTrue(results.every(([r]) => r!.event.id === winner.id))
          assert.deepStrictEqual(ids(yield* list({ workspaceId, limit: 100 })), [winner.id])
        })
      )

      it.effect.prop(
        "concurrent appends of one event id at timestamps years apart (other partitions): exactly one is stored",
        [fc.array(fc.integer({ min: -20 * 366, max: 20 * 366 }), { minLength: 2, maxLength: 8 })],
        ([offsets]) =>
          Effect.gen(function* () {
            const workspaceId = uid("ws-")
            const eventId = uid("client-")
            // Each with its own payload, as a client reusing an event_id for another event would send.
            const sent = offsets.map((days, i) =>
              event(workspaceId, { eventId, occurredAt: T + days * dayMillis, payloadHash: String(i).repeat(64) })
            )
            const results = yield* Effect.all(
              sent.map((e) => append([e])),
              { concurrency: "unbounded" }
            )
            const stored = results.filter(([r]) => r!._tag === "Stored").map(([r]) => r!.event)
            assert.strictEqual(stored.length, 1)
            assert.isTrue(results.every(([r]) => r!.event.id === stored[0]!.id))
            assert.deepStrictEqual(yield* list({ workspaceId, limit: 100 }), stored)
            const store = yield* EventStore
            assert.deepStrictEqual(yield* store.findByEventId(workspaceId, eventId), Option.some(stored[0]!))
          }),
        { fastCheck: { numRuns: 10 } }
      )

      it.effect("a usage rollup bucket resent with another month's time is replaced, still one event", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const original = event(workspaceId, { eventId: null, bucketKey: "bucket-m", body: { value: 1 } })
          yield* append([original])
          const moved = event(workspaceId, {
            eventId: null,
            bucketKey: "bucket-m",
            occurredAt: T + 90 * dayMillis,
            payloadHash: "d".repeat(64),
            body: { value: 2 }
          })
          assert.deepStrictEqual(yield* append([moved]), [{ _tag: "Stored", event: { ...moved, id: original.id } }])
          assert.deepStrictEqual(yield* list({ workspaceId, limit: 10 }), [{ ...moved, id: original.id }])
          assert.deepStrictEqual(
            (yield* append([{ ...moved, id: uid("evt-") }])).map((r) => r._tag),
            ["Duplicate"]
          )
        })
      )

      it.effect(
        "retention: a sweep removes the events older than the workspace's retention, with their event ids, and keeps the rest",
        () =>
          Effect.gen(function* () {
            const store = yield* EventStore
            const now = T + 1_000 * dayMillis
            const short = uid("ws-")
            const unset = uid("ws-")
            const forever = uid("ws-")
            assert.isTrue(Option.isNone(yield* store.retention(short)))
            yield* store.setRetention(short, 30, now)
            yield* store.setRetention(forever, 10, now)
            yield* store.setRetention(forever, "forever", now)
            assert.deepStrictEqual(yield* store.retention(short), Option.some(30))
            assert.deepStrictEqual(yield* store.retention(forever), Option.some("forever"))
            const at = (workspaceId: string, daysAgo: number, overrides: Partial<StoredEvent> = {}) =>
              event(workspaceId, { occurredAt: now - daysAgo * dayMillis, ...overrides })
            const expired = [
              at(short, 31),
              at(short, 400, { eventId: null }),
              at(short, 5_000),
              at(short, 45, { eventId: null, bucketKey: "expired-bucket" })
            ]
            const kept = [at(short, 29), at(short, 0, { eventId: null }), at(short, -1)]
            const others = [at(unset, 5_000), at(unset, 31), at(forever, 5_000), at(forever, 31)]
            yield* append([...expired, ...kept, ...others])
            // The default of this sweep keeps forever: other tests' workspaces in this store are untouched.
            const swept = yield* store.sweep({ now, defaultRetention: "forever", batchSize: 2 })
            const remaining = yield* store.listAll({ workspaceId: short })
            assert.sameMembers(ids(remaining), ids(kept))
            assert.isAtLeast(swept.deletedEvents + swept.droppedPartitions.length, 1)
            assert.isTrue(Option.isNone(yield* store.findByEventId(short, expired[0]!.eventId!)))
            assert.deepStrictEqual(yield* store.findByEventId(short, kept[0]!.eventId!), Option.some(kept[0]!))
            assert.sameMembers(ids(yield* store.listAll({ workspaceId: unset })), ids(others.slice(0, 2)))
            assert.sameMembers(ids(yield* store.listAll({ workspaceId: forever })), ids(others.slice(2)))
            // An expired event sent again (its key gone with it, or not yet) is never stored twice.
            const again = yield* append([{ ...expired[0]!, id: uid("evt-") }])
            assert.include(["Stored", "Duplicate"], again[0]!._tag)
            assert.isAtMost(
              (yield* store.listAll({ workspaceId: short })).filter((e) => e.eventId === expired[0]!.eventId).length,
              1
            )
            // The server default applies to a workspace without its own retention.
            yield* store.sweep({ now, defaultRetention: 30 })
            assert.deepStrictEqual(yield* store.listAll({ workspaceId: unset }), [])
            assert.sameMembers(ids(yield* store.listAll({ workspaceId: forever })), ids(others.slice(2)))
            // Retention covers raw events only: a second sweep finds nothing more of them to remove.
            const again2 = yield* store.sweep({ now, defaultRetention: "forever" })
            assert.deepStrictEqual(again2.droppedPartitions, [])
          })
      )
    })
  })
