import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { completionIdentity } from "../../core/connector/CompletionIdentity.ts"
import {
  ActionLedger,
  type ActionRecord,
  type CompletionClaim,
  type HistoryEntry
} from "../../core/ports/ActionLedger.ts"
import { type NonceClaim, NonceStore } from "../../core/ports/NonceStore.ts"
import { type NewOutboxItem, Outbox } from "../../core/ports/Outbox.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000

type NewAction = Omit<ActionRecord, "version" | "updatedAt">

/**
 * The ActionLedger contract, with the Outbox it writes to in the same transaction. One store per
 * suite; every test uses ids of its own (actions, idempotency keys, connections, dedupe keys).
 */
export const suite = (name: string, layer: () => Layer.Layer<ActionLedger | Outbox | NonceStore, unknown>) =>
  describe(`ActionLedger contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const action = (overrides: Partial<NewAction> = {}): NewAction => ({
        actionRequestId: uid("ar-"),
        workspaceId: uid("ws-"),
        accountId: "acct_42",
        connectionId: uid("conn-"),
        revision: 0,
        providerIdempotencyKey: uid("idem-"),
        state: "queued",
        request: { action: { key: "upgrade", operation: "change" }, safeTerms: ["a", 1, null] },
        acknowledgement: null,
        sealedContinuation: null,
        createdAt: T,
        ...overrides
      })
      const work = (overrides: Partial<NewOutboxItem> = {}): NewOutboxItem => ({
        id: uid("item-"),
        kind: "dispatch",
        dedupeKey: uid("key-"),
        payload: { n: 1 },
        nextAttemptAt: T,
        createdAt: T,
        ...overrides
      })
      const created = { at: T, trigger: "intake", detail: { source: "admin" } }
      const create = (record: NewAction, outbox?: NewOutboxItem) =>
        Effect.flatMap(ActionLedger, (ledger) =>
          ledger.create(outbox === undefined ? { record, history: created } : { record, history: created, outbox })
        )
      /** A created action, as `get` returns it. */
      const existing = (overrides: Partial<NewAction> = {}) =>
        Effect.gen(function* () {
          const record = action(overrides)
          assert.strictEqual(yield* create(record), "created")
          return yield* load(record.actionRequestId)
        })
      const load = (id: string) =>
        Effect.flatMap(ActionLedger, (ledger) => Effect.map(ledger.get(id), Option.getOrThrow))
      const historyOf = (id: string) => Effect.flatMap(ActionLedger, (ledger) => ledger.history(id))
      const step = (record: ActionRecord, toState: string, at = record.updatedAt + 100) => ({
        actionRequestId: record.actionRequestId,
        expectedVersion: record.version,
        toState,
        at,
        history: { at, trigger: `to-${toState}`, detail: { code: toState } }
      })
      const completion = (actionRequestId: string, bodyHash = "b".repeat(64)): CompletionClaim => ({
        completionId: uid("cmp-"),
        actionRequestId,
        bodyHash,
        receivedAt: T + 1_000
      })
      /** Everything a test can observe about one action. */
      const snapshot = (id: string) =>
        Effect.flatMap(ActionLedger, (ledger) => Effect.all([ledger.get(id), ledger.history(id)]))

      it.effect("create stores the action with version 1 and its first history entry from null", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const record = action({ acknowledgement: { state: "accepted" }, sealedContinuation: "v1.sealed" })
          assert.strictEqual(yield* create(record), "created")
          const expected: ActionRecord = { ...record, updatedAt: record.createdAt, version: 1 }
          assert.deepStrictEqual(yield* ledger.get(record.actionRequestId), Option.some(expected))
          assert.deepStrictEqual(
            yield* ledger.getByIdempotencyKey(record.providerIdempotencyKey),
            Option.some(expected)
          )
          const history: ReadonlyArray<HistoryEntry> = [{ seq: 1, ...created, fromState: null, toState: "queued" }]
          assert.deepStrictEqual(yield* ledger.history(record.actionRequestId), history)
          assert.isTrue(Option.isNone(yield* ledger.get(uid("ar-"))))
          assert.isTrue(Option.isNone(yield* ledger.getByIdempotencyKey(uid("idem-"))))
          assert.deepStrictEqual(yield* ledger.history(uid("ar-")), [])
        })
      )

      it.effect(
        "ids no stored key can be (a NUL, an unpaired surrogate) find nothing and fail no concurrent lookup",
        () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const stored = yield* existing()
            const ids = [stored.actionRequestId, "ar-\u0000-nul", "ar-\ud800-lone", "ar-\udc00", stored.actionRequestId]
            const found = yield* Effect.forEach(ids, (id) => ledger.get(id), { concurrency: "unbounded" })
            assert.deepStrictEqual(found.map(Option.isSome), [true, false, false, false, true])
          })
      )

      it.effect("create enqueues its outbox item", () =>
        Effect.gen(function* () {
          const outbox = yield* Outbox
          const item = work()
          assert.strictEqual(yield* create(action(), item), "created")
          const enqueued = Option.getOrThrow(yield* outbox.findByKey(item.kind, item.dedupeKey))
          assert.deepStrictEqual([enqueued.id, enqueued.payload, enqueued.attempts], [item.id, item.payload, 0])
        })
      )

      it.effect(
        "create with an outboxLease enqueues its item already leased: no other owner leases it before the lease ends",
        () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const outbox = yield* Outbox
            const kind = uid("kind-")
            const record = action()
            const item = work({ kind, payload: { actionRequestId: record.actionRequestId } })
            const lease = { owner: "intake-w1", expiresAt: T + 30_000 }
            assert.strictEqual(
              yield* ledger.create({ record, history: created, outbox: item, outboxLease: lease }),
              "created"
            )
            const stored = Option.getOrThrow(yield* outbox.get(item.id))
            assert.deepStrictEqual(
              [stored.leaseOwner, stored.leaseExpiresAt, stored.attempts, stored.completedAt, stored.nextAttemptAt],
              ["intake-w1", T + 30_000, 0, null, T]
            )
            assert.deepStrictEqual(
              yield* ledger.leaseWithActions({
                owner: "w2",
                now: T + 29_999,
                leaseMillis: 1_000,
                limit: 10,
                kinds: [kind]
              }),
              []
            )
            // The owner completes it as if it had leased it itself.
            assert.isTrue(yield* outbox.complete({ id: item.id, owner: "intake-w1", now: T + 5 }))
          })
      )

      it.effect(
        "an item created leased whose owner never finished it is leased by another owner once the lease expired",
        () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const kind = uid("kind-")
            const record = action()
            const item = work({ kind, payload: { actionRequestId: record.actionRequestId } })
            const lease = { owner: "dead-w1", expiresAt: T + 30_000 }
            assert.strictEqual(
              yield* ledger.create({ record, history: created, outbox: item, outboxLease: lease }),
              "created"
            )
            const leased = yield* ledger.leaseWithActions({
              owner: "w2",
              now: T + 30_000,
              leaseMillis: 1_000,
              limit: 10,
              kinds: [kind]
            })
            assert.deepStrictEqual(
              leased.map((l) => [l.item.id, l.item.leaseOwner, Option.map(l.action, (a) => a.actionRequestId)]),
              [[item.id, "w2", Option.some(record.actionRequestId)]]
            )
          })
      )

      it.effect("a duplicate create with an outboxLease writes no lease on the existing item", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const item = work()
          assert.strictEqual(yield* create(action(), item), "created")
          const again = action()
          const lease = { owner: "intake-w1", expiresAt: T + 30_000 }
          assert.strictEqual(
            yield* ledger.create({ record: again, history: created, outbox: item, outboxLease: lease }),
            "duplicate"
          )
          assert.isNull(Option.getOrThrow(yield* outbox.get(item.id)).leaseOwner)
          assert.isTrue(Option.isNone(yield* ledger.get(again.actionRequestId)))
        })
      )

      const nonceOf = (overrides: Partial<NonceClaim> = {}): NonceClaim => ({
        scope: uid("customer:"),
        nonce: uid("nonce-0123456789-"),
        now: T,
        expiresAt: T + 600_000,
        ...overrides
      })
      const createWithNonce = (record: NewAction, nonce: NonceClaim, outbox?: NewOutboxItem) =>
        Effect.flatMap(ActionLedger, (ledger) =>
          ledger.create({ record, history: created, nonce, ...(outbox === undefined ? {} : { outbox }) })
        )

      it.effect(
        "create with a nonce records it with the action; the same nonce again writes nothing: replayed_nonce",
        () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const outbox = yield* Outbox
            const nonce = nonceOf()
            const first = action()
            assert.strictEqual(yield* createWithNonce(first, nonce, work()), "created")
            const replay = action()
            const item = work()
            assert.strictEqual(yield* createWithNonce(replay, { ...nonce, now: T + 1_000 }, item), "replayed_nonce")
            assert.isTrue(Option.isNone(yield* ledger.get(replay.actionRequestId)))
            assert.deepStrictEqual(yield* ledger.history(replay.actionRequestId), [])
            assert.isTrue(Option.isNone(yield* outbox.get(item.id)))
            // The nonce store sees it used: the same nonce space.
            assert.isFalse(yield* (yield* NonceStore).claim({ ...nonce, now: T + 2_000 }))
          })
      )

      it.effect("a nonce already recorded by the nonce store makes create write nothing", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const nonce = nonceOf()
          assert.isTrue(yield* (yield* NonceStore).claim(nonce))
          const record = action()
          assert.strictEqual(yield* createWithNonce(record, { ...nonce, now: T + 1 }), "replayed_nonce")
          assert.isTrue(Option.isNone(yield* ledger.get(record.actionRequestId)))
        })
      )

      it.effect("a duplicate create with a fresh nonce is a duplicate and its nonce stays recorded", () =>
        Effect.gen(function* () {
          const record = action()
          assert.strictEqual(yield* create(record), "created")
          const nonce = nonceOf()
          assert.strictEqual(yield* createWithNonce(record, nonce), "duplicate")
          assert.strictEqual(
            yield* createWithNonce(action({ providerIdempotencyKey: record.providerIdempotencyKey }), nonce),
            "replayed_nonce"
          )
          assert.isFalse(yield* (yield* NonceStore).claim({ ...nonce, now: T + 1 }))
        })
      )

      it.effect("a nonce whose retention ended is taken over by a create", () =>
        Effect.gen(function* () {
          const nonce = nonceOf({ expiresAt: T + 10 })
          assert.strictEqual(yield* createWithNonce(action(), nonce), "created")
          assert.strictEqual(
            yield* createWithNonce(action(), { ...nonce, now: T + 10, expiresAt: T + 600_010 }),
            "created"
          )
        })
      )

      it.effect("20 concurrent creates of distinct actions under one nonce: exactly one is created", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const nonce = nonceOf()
          const records = Array.from({ length: 20 }, () => action())
          const results = yield* Effect.forEach(records, (record) => createWithNonce(record, nonce), {
            concurrency: "unbounded"
          })
          assert.strictEqual(results.filter((r) => r === "created").length, 1)
          assert.strictEqual(results.filter((r) => r === "replayed_nonce").length, 19)
          const stored = yield* Effect.forEach(records, (record) => ledger.get(record.actionRequestId))
          assert.strictEqual(stored.filter(Option.isSome).length, 1)
        })
      )

      it.effect("concurrent creates with distinct fresh nonces, one a replay: only that one writes nothing", () =>
        Effect.gen(function* () {
          const used = nonceOf()
          assert.isTrue(yield* (yield* NonceStore).claim(used))
          const claims = Array.from({ length: 10 }, (_, i) => ({
            record: action(),
            nonce: i === 4 ? { ...used, now: T + 1 } : nonceOf()
          }))
          const results = yield* Effect.forEach(claims, ({ nonce, record }) => createWithNonce(record, nonce, work()), {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(
            results,
            claims.map((_, i) => (i === 4 ? "replayed_nonce" : "created"))
          )
        })
      )

      it.effect("a duplicate actionRequestId in the workspace is refused with nothing written", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const first = action()
          assert.strictEqual(yield* create(first), "created")
          const before = yield* snapshot(first.actionRequestId)
          const again = action({
            workspaceId: first.workspaceId,
            actionRequestId: first.actionRequestId,
            state: "other"
          })
          const item = work()
          assert.strictEqual(yield* create(again, item), "duplicate")
          assert.deepStrictEqual(yield* snapshot(first.actionRequestId), before)
          assert.isTrue(Option.isNone(yield* ledger.getByIdempotencyKey(again.providerIdempotencyKey)))
          assert.isTrue(Option.isNone(yield* outbox.findByKey(item.kind, item.dedupeKey)))
        })
      )

      it.effect("a duplicate providerIdempotencyKey in the workspace is refused with nothing written", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const first = action()
          assert.strictEqual(yield* create(first), "created")
          const before = yield* snapshot(first.actionRequestId)
          const again = action({ workspaceId: first.workspaceId, providerIdempotencyKey: first.providerIdempotencyKey })
          const item = work()
          assert.strictEqual(yield* create(again, item), "duplicate")
          assert.deepStrictEqual(yield* snapshot(first.actionRequestId), before)
          assert.deepStrictEqual(yield* snapshot(again.actionRequestId), [Option.none(), []])
          assert.strictEqual(
            Option.getOrThrow(yield* ledger.getByIdempotencyKey(first.providerIdempotencyKey)).actionRequestId,
            first.actionRequestId
          )
          assert.isTrue(Option.isNone(yield* outbox.findByKey(item.kind, item.dedupeKey)))
          assert.isTrue(Option.isNone(yield* outbox.get(item.id)))
        })
      )

      it.effect("create whose outbox item already exists is a duplicate and the action is not created", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const taken = work()
          assert.isTrue(yield* outbox.enqueue(taken))
          const record = action()
          const clash = work({ dedupeKey: taken.dedupeKey, payload: { other: true } })
          assert.strictEqual(yield* create(record, clash), "duplicate")
          assert.deepStrictEqual(yield* snapshot(record.actionRequestId), [Option.none(), []])
          assert.isTrue(Option.isNone(yield* ledger.getByIdempotencyKey(record.providerIdempotencyKey)))
          assert.strictEqual(Option.getOrThrow(yield* outbox.findByKey(taken.kind, taken.dedupeKey)).id, taken.id)
          assert.isTrue(Option.isNone(yield* outbox.get(clash.id)))
          // Nothing was half-written: the same action can still be created with a fresh item.
          assert.strictEqual(yield* create(record, work()), "created")
        })
      )

      it.effect("a transition at the current version applies: version + 1 and history from the old state", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const record = yield* existing({ acknowledgement: { first: true }, sealedContinuation: "v1.kept" })
          const result = yield* ledger.transition(step(record, "dispatched", T + 100))
          const expected: ActionRecord = { ...record, state: "dispatched", updatedAt: T + 100, version: 2 }
          assert.deepStrictEqual(result, { _tag: "Applied", record: expected })
          assert.deepStrictEqual(yield* ledger.get(record.actionRequestId), Option.some(expected))
          assert.deepStrictEqual((yield* historyOf(record.actionRequestId)).slice(1), [
            {
              seq: 2,
              at: T + 100,
              trigger: "to-dispatched",
              fromState: "queued",
              toState: "dispatched",
              detail: { code: "dispatched" }
            }
          ])
          const next = yield* ledger.transition(step(expected, "acknowledged", T + 200))
          assert.strictEqual(next._tag, "Applied")
          const history = yield* historyOf(record.actionRequestId)
          assert.deepStrictEqual(
            history.map((h) => [h.seq, h.fromState, h.toState]),
            [
              [1, null, "queued"],
              [2, "queued", "dispatched"],
              [3, "dispatched", "acknowledged"]
            ]
          )
        })
      )

      it.effect("acknowledgement and sealedContinuation change only when given", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const record = yield* existing()
          const ack = { state: "succeeded", providerReference: "ref_hash", list: [1, 2] }
          const withAck = yield* ledger.transition({ ...step(record, "acknowledged"), acknowledgement: ack })
          assert.strictEqual(withAck._tag, "Applied")
          let current = yield* load(record.actionRequestId)
          assert.deepStrictEqual([current.acknowledgement, current.sealedContinuation], [ack, null])
          yield* ledger.transition({ ...step(current, "awaiting_payment"), sealedContinuation: "v1.continuation" })
          current = yield* load(record.actionRequestId)
          assert.deepStrictEqual([current.acknowledgement, current.sealedContinuation], [ack, "v1.continuation"])
          yield* ledger.transition(step(current, "paid"))
          current = yield* load(record.actionRequestId)
          assert.deepStrictEqual(
            [current.state, current.version, current.acknowledgement, current.sealedContinuation],
            ["paid", 4, ack, "v1.continuation"]
          )
        })
      )

      it.effect("a transition at a stale version is refused with nothing written", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const record = yield* existing()
          const before = yield* snapshot(record.actionRequestId)
          const item = work()
          const claim = completion(record.actionRequestId)
          for (const expectedVersion of [0, 2]) {
            const result = yield* ledger.transition({
              ...step(record, "dispatched"),
              expectedVersion,
              acknowledgement: { stale: true },
              outbox: item,
              completion: claim
            })
            assert.deepStrictEqual(result, { _tag: "Stale" })
          }
          assert.deepStrictEqual(yield* snapshot(record.actionRequestId), before)
          assert.isTrue(Option.isNone(yield* outbox.findByKey(item.kind, item.dedupeKey)))
          assert.isTrue(Option.isNone(yield* ledger.findCompletion(claim.completionId)))
        })
      )

      it.effect("a transition of an unknown action is stale", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const result = yield* ledger.transition({
            actionRequestId: uid("ar-"),
            expectedVersion: 1,
            toState: "dispatched",
            at: T,
            history: { at: T, trigger: "x", detail: null }
          })
          assert.deepStrictEqual(result, { _tag: "Stale" })
        })
      )

      it.effect("a completion id is claimed once: same body is a duplicate, another body a conflict", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const record = yield* existing()
          const claim = completion(record.actionRequestId)
          const applied = yield* ledger.transition({ ...step(record, "completed"), completion: claim })
          assert.strictEqual(applied._tag, "Applied")
          assert.deepStrictEqual(yield* ledger.findCompletion(claim.completionId), Option.some(claim))
          const after = yield* load(record.actionRequestId)
          const before = yield* snapshot(record.actionRequestId)

          const redelivery = { ...claim, receivedAt: T + 9_000 }
          const duplicate = yield* ledger.transition({ ...step(after, "completed"), completion: redelivery })
          assert.deepStrictEqual(duplicate, { _tag: "DuplicateCompletion", claim })
          assert.strictEqual(completionIdentity(claim, redelivery), "duplicate")
          const conflicting = yield* ledger.transition({
            ...step(after, "completed"),
            completion: { ...redelivery, bodyHash: "c".repeat(64) }
          })
          assert.deepStrictEqual(conflicting, { _tag: "ConflictingCompletion", claim })
          assert.strictEqual(completionIdentity(claim, { ...redelivery, bodyHash: "c".repeat(64) }), "conflict")
          assert.deepStrictEqual(yield* snapshot(record.actionRequestId), before)
          assert.deepStrictEqual(yield* ledger.findCompletion(claim.completionId), Option.some(claim))
        })
      )

      it.effect("the same completion id for another action is a conflict", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const first = yield* existing()
          const second = yield* existing()
          const claim = completion(first.actionRequestId)
          assert.strictEqual(
            (yield* ledger.transition({ ...step(first, "completed"), completion: claim }))._tag,
            "Applied"
          )
          const other = yield* ledger.transition({
            ...step(second, "completed"),
            completion: { ...claim, actionRequestId: second.actionRequestId }
          })
          assert.deepStrictEqual(other, { _tag: "ConflictingCompletion", claim })
          assert.strictEqual(
            completionIdentity(claim, { ...claim, actionRequestId: second.actionRequestId }),
            "conflict"
          )
          assert.strictEqual((yield* load(second.actionRequestId)).version, 1)
        })
      )

      it.effect("a stale transition does not keep its completion claim: the retry at the right version applies", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const record = yield* existing()
          const claim = completion(record.actionRequestId)
          const stale = yield* ledger.transition({
            ...step(record, "completed"),
            expectedVersion: 7,
            completion: claim
          })
          assert.deepStrictEqual(stale, { _tag: "Stale" })
          assert.isTrue(Option.isNone(yield* ledger.findCompletion(claim.completionId)))
          const retried = yield* ledger.transition({ ...step(record, "completed"), completion: claim })
          assert.strictEqual(retried._tag, "Applied")
          assert.deepStrictEqual(yield* ledger.findCompletion(claim.completionId), Option.some(claim))
        })
      )

      it.effect("a transition with an outbox item enqueues it", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const record = yield* existing()
          const item = work({ kind: "completion-delivery" })
          assert.strictEqual(
            (yield* ledger.transition({ ...step(record, "acknowledged"), outbox: item }))._tag,
            "Applied"
          )
          assert.strictEqual(Option.getOrThrow(yield* outbox.findByKey(item.kind, item.dedupeKey)).id, item.id)
        })
      )

      it.effect("a transition whose outbox item already exists is not applied and writes nothing", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const record = yield* existing()
          const taken = work()
          assert.isTrue(yield* outbox.enqueue(taken))
          const before = yield* snapshot(record.actionRequestId)
          const claim = completion(record.actionRequestId)
          const result = yield* ledger.transition({
            ...step(record, "acknowledged"),
            outbox: work({ dedupeKey: taken.dedupeKey }),
            completion: claim
          })
          assert.notStrictEqual(result._tag, "Applied")
          assert.deepStrictEqual(yield* snapshot(record.actionRequestId), before)
          assert.isTrue(Option.isNone(yield* ledger.findCompletion(claim.completionId)))
        })
      )

      it.effect("lastActivityOnRevision is the latest update among the revision's actions", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const connectionId = uid("conn-")
          assert.isTrue(Option.isNone(yield* ledger.lastActivityOnRevision(connectionId, 0)))
          const early = yield* existing({ connectionId, revision: 0, createdAt: T })
          yield* existing({ connectionId, revision: 0, createdAt: T + 50 })
          yield* existing({ connectionId, revision: 1, createdAt: T + 10 })
          yield* existing({ revision: 0, createdAt: T + 99_999 }) // another connection
          assert.deepStrictEqual(yield* ledger.lastActivityOnRevision(connectionId, 0), Option.some(T + 50))
          assert.deepStrictEqual(yield* ledger.lastActivityOnRevision(connectionId, 1), Option.some(T + 10))
          yield* ledger.transition(step(early, "dispatched", T + 500))
          assert.deepStrictEqual(yield* ledger.lastActivityOnRevision(connectionId, 0), Option.some(T + 500))
          assert.isTrue(Option.isNone(yield* ledger.lastActivityOnRevision(connectionId, 2)))
        })
      )

      it.effect("unfinishedOnRevision counts the revision's actions with open work of the given kinds and states", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const connectionId = uid("conn-")
          const openWork = [{ kind: "delivery", whileIn: ["queued", "unsure"] }, { kind: "read" }]
          const count = (revision = 0) => ledger.unfinishedOnRevision({ connectionId, revision, work: openWork })
          /** An action of the revision in `state` with one item of `kind` naming it in its payload. */
          const withItem = (state: string, kind: string, overrides: Partial<NewAction> = {}) =>
            Effect.gen(function* () {
              const record = action({ connectionId, revision: 0, state, ...overrides })
              const item = work({ kind, payload: { actionRequestId: record.actionRequestId } })
              assert.strictEqual(yield* create(record, item), "created")
              return item
            })
          assert.strictEqual(yield* count(), 0)
          yield* withItem("queued", "delivery")
          yield* withItem("unsure", "delivery")
          assert.strictEqual(yield* count(), 2)
          // Not counted: a delivery item while the action is in another state, an item of another
          // kind, another revision or connection, an item naming no action.
          yield* withItem("accepted", "delivery")
          yield* withItem("queued", "other-kind")
          yield* withItem("queued", "delivery", { revision: 1 })
          yield* withItem("queued", "delivery", { connectionId: uid("conn-") })
          assert.isTrue(yield* outbox.enqueue(work({ kind: "read", payload: { n: 1 } })))
          assert.strictEqual(yield* count(), 2)
          assert.strictEqual(yield* count(1), 1)
          // A read counts in any state; an action with two open items counts once.
          const pending = yield* existing({ connectionId, revision: 0, state: "accepted" })
          const read = work({ kind: "read", payload: { actionRequestId: pending.actionRequestId } })
          yield* ledger.transition({ ...step(pending, "pending"), outbox: read })
          yield* outbox.enqueue(work({ kind: "read", payload: { actionRequestId: pending.actionRequestId } }))
          assert.strictEqual(yield* count(), 3)
          // Completed items do not count.
          const leased = yield* outbox.lease({
            owner: "probe",
            now: T + 10_000,
            leaseMillis: 1_000,
            limit: 1_000,
            kinds: ["read"]
          })
          for (const item of leased) yield* outbox.complete({ id: item.id, owner: "probe", now: T + 10_000 })
          assert.strictEqual(yield* count(), 2)
          const unsure = yield* withItem("unsure", "delivery")
          assert.strictEqual(yield* count(), 3)
          const [leasedUnsure] = (yield* outbox.lease({
            owner: "probe",
            now: T + 10_000,
            leaseMillis: 1_000,
            limit: 1_000,
            kinds: ["delivery"]
          })).filter((i) => i.id === unsure.id)
          assert.isTrue(yield* outbox.complete({ id: leasedUnsure!.id, owner: "probe", now: T + 10_000 }))
          assert.strictEqual(yield* count(), 2)
        })
      )

      it.effect("50 concurrent creates with one idempotency key: exactly one is created", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const providerIdempotencyKey = uid("idem-")
          const workspaceId = uid("ws-")
          const attempts = Array.from({ length: 50 }, () => ({
            record: action({ workspaceId, providerIdempotencyKey }),
            item: work()
          }))
          const results = yield* Effect.all(
            attempts.map(({ item, record }) => create(record, item)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(results.filter((r) => r === "created").length, 1)
          const winner = attempts[results.indexOf("created")]!
          assert.strictEqual(
            Option.getOrThrow(yield* ledger.getByIdempotencyKey(providerIdempotencyKey)).actionRequestId,
            winner.record.actionRequestId
          )
          for (const { item } of attempts) {
            assert.strictEqual(Option.isSome(yield* outbox.get(item.id)), item === winner.item)
          }
        })
      )

      it.effect(
        "concurrent creates of distinct actions, one with a taken outbox item: only that one is a duplicate",
        () =>
          Effect.gen(function* () {
            const outbox = yield* Outbox
            const taken = work()
            assert.isTrue(yield* outbox.enqueue(taken))
            const attempts = Array.from({ length: 30 }, (_, i) => ({
              record: action({ accountId: `acct_${i}` }),
              item: i === 17 ? work({ dedupeKey: taken.dedupeKey }) : work()
            }))
            const results = yield* Effect.all(
              attempts.map(({ item, record }) => create(record, item)),
              { concurrency: "unbounded" }
            )
            for (const [i, { item, record }] of attempts.entries()) {
              assert.strictEqual(results[i], i === 17 ? "duplicate" : "created")
              const [stored, history] = yield* snapshot(record.actionRequestId)
              assert.strictEqual(Option.isSome(stored), i !== 17)
              assert.strictEqual(history.length, i === 17 ? 0 : 1)
              if (Option.isSome(stored)) assert.strictEqual(stored.value.accountId, `acct_${i}`)
              assert.strictEqual(Option.isSome(yield* outbox.get(item.id)), i !== 17)
            }
          })
      )

      it.effect("concurrent transitions of distinct actions each apply with their own values and history", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const records = yield* Effect.all(Array.from({ length: 30 }, () => existing()))
          // Every other one moves twice in a row, so its history continues from the first move.
          const results = yield* Effect.all(
            records.map((record, i) =>
              Effect.gen(function* () {
                const first = yield* ledger.transition({
                  ...step(record, `state-${i}`, T + 100 + i),
                  ...(i % 3 === 0 ? { acknowledgement: { n: i } } : {}),
                  ...(i % 3 === 1 ? { sealedContinuation: `sealed-${i}` } : {})
                })
                if (i % 2 === 1 || first._tag !== "Applied") return [first]
                return [first, yield* ledger.transition(step(first.record, `again-${i}`, T + 200 + i))]
              })
            ),
            { concurrency: "unbounded" }
          )
          for (const [i, record] of records.entries()) {
            assert.isTrue(results[i]!.every((r) => r._tag === "Applied"))
            const [stored, history] = yield* snapshot(record.actionRequestId)
            const current = Option.getOrThrow(stored)
            assert.strictEqual(current.state, i % 2 === 0 ? `again-${i}` : `state-${i}`)
            assert.strictEqual(current.version, i % 2 === 0 ? 3 : 2)
            assert.deepStrictEqual(current.acknowledgement, i % 3 === 0 ? { n: i } : null)
            assert.strictEqual(current.sealedContinuation, i % 3 === 1 ? `sealed-${i}` : null)
            assert.deepStrictEqual(
              history.map((h) => [h.seq, h.fromState, h.toState, h.trigger]),
              [
                [1, null, "queued", "intake"],
                [2, "queued", `state-${i}`, `to-state-${i}`],
                ...(i % 2 === 0 ? [[3, `state-${i}`, `again-${i}`, `to-again-${i}`]] : [])
              ]
            )
          }
        })
      )

      it.effect("concurrent reads of stored and unknown actions each get their own answer", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const records = yield* Effect.all(Array.from({ length: 20 }, (_, i) => existing({ accountId: `acct_${i}` })))
          const ids = records.flatMap((r, i) => [r.actionRequestId, `unknown-${i}`, r.actionRequestId])
          const found = yield* Effect.all(
            ids.map((id) => ledger.get(id)),
            { concurrency: "unbounded" }
          )
          for (const [j, id] of ids.entries()) {
            if (id.startsWith("unknown-")) assert.isTrue(Option.isNone(found[j]!))
            else assert.deepStrictEqual(found[j], Option.some(records[Math.floor(j / 3)]!))
          }
        })
      )

      it.effect("20 concurrent transitions from one version: exactly one applies", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const record = yield* existing()
          const results = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) => ledger.transition(step(record, `state-${i}`, T + 100 + i))),
            { concurrency: "unbounded" }
          )
          const applied = results.filter((r) => r._tag === "Applied")
          assert.strictEqual(applied.length, 1)
          assert.isTrue(results.every((r) => r._tag === "Applied" || r._tag === "Stale"))
          const current = yield* load(record.actionRequestId)
          assert.strictEqual(current.version, 2)
          assert.deepStrictEqual(applied[0], { _tag: "Applied", record: current })
          assert.strictEqual((yield* historyOf(record.actionRequestId)).length, 2)
        })
      )

      it.effect("leaseWithActions leases due items of a kind, each with the action its payload names", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const outbox = yield* Outbox
          const kind = uid("kind-")
          const first = action()
          const second = action()
          assert.strictEqual(
            yield* create(first, work({ kind, payload: { actionRequestId: first.actionRequestId } })),
            "created"
          )
          assert.strictEqual(
            yield* create(
              second,
              work({ kind, payload: { actionRequestId: second.actionRequestId }, nextAttemptAt: T + 1 })
            ),
            "created"
          )
          assert.isTrue(
            yield* outbox.enqueue(work({ kind, payload: { actionRequestId: uid("ar-") }, nextAttemptAt: T + 2 }))
          )
          assert.isTrue(yield* outbox.enqueue(work({ kind, nextAttemptAt: T + 10_000 })))
          const leased = yield* ledger.leaseWithActions({
            owner: "w1",
            now: T + 5,
            leaseMillis: 1_000,
            limit: 10,
            kinds: [kind]
          })
          assert.deepStrictEqual(
            leased.map((l) => l.item.leaseOwner),
            ["w1", "w1", "w1"]
          )
          assert.deepStrictEqual(
            leased.map((l) => Option.map(l.action, (a) => a.actionRequestId)),
            [Option.some(first.actionRequestId), Option.some(second.actionRequestId), Option.none()]
          )
          assert.deepStrictEqual(Option.getOrThrow(leased[0]!.action), yield* load(first.actionRequestId))
          // Leased items are not leased again until the lease ends.
          assert.deepStrictEqual(
            yield* ledger.leaseWithActions({ owner: "w2", now: T + 6, leaseMillis: 1_000, limit: 10, kinds: [kind] }),
            []
          )
        })
      )

      it.effect(
        "a transition that completes its leased outbox item does so only when it applies and the lease is held",
        () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const outbox = yield* Outbox
            const kind = uid("kind-")
            const record = action()
            const item = work({ kind, payload: { actionRequestId: record.actionRequestId } })
            assert.strictEqual(yield* create(record, item), "created")
            yield* ledger.leaseWithActions({ owner: "w1", now: T, leaseMillis: 60_000, limit: 1, kinds: [kind] })
            const current = yield* load(record.actionRequestId)
            // Not applied (stale version): the item stays leased.
            const stale = yield* ledger.transition({
              ...step({ ...current, version: current.version + 7 }, "accepted"),
              completeOutboxItem: { id: item.id, owner: "w1" }
            })
            assert.strictEqual(stale._tag, "Stale")
            assert.isNull(Option.getOrThrow(yield* outbox.get(item.id)).completedAt)
            // Applied, but another owner named: the item stays leased to its holder.
            const other = yield* ledger.transition({
              ...step(current, "accepted"),
              completeOutboxItem: { id: item.id, owner: "w2" }
            })
            assert.strictEqual(other._tag, "Applied")
            assert.isNull(Option.getOrThrow(yield* outbox.get(item.id)).completedAt)
            // Applied by the holder: done in the same write.
            const next = yield* load(record.actionRequestId)
            const done = yield* ledger.transition({
              ...step(next, "verified", next.updatedAt + 50),
              completeOutboxItem: { id: item.id, owner: "w1" }
            })
            assert.strictEqual(done._tag, "Applied")
            const finished = Option.getOrThrow(yield* outbox.get(item.id))
            assert.strictEqual(finished.completedAt, next.updatedAt + 50)
            assert.isNull(finished.leaseOwner)
            // With a completion claim (the transaction path) too.
            const record2 = action()
            const item2 = work({ kind, payload: { actionRequestId: record2.actionRequestId } })
            assert.strictEqual(yield* create(record2, item2), "created")
            yield* ledger.leaseWithActions({ owner: "w1", now: T, leaseMillis: 60_000, limit: 1, kinds: [kind] })
            const current2 = yield* load(record2.actionRequestId)
            const claimed = yield* ledger.transition({
              ...step(current2, "accepted"),
              completion: completion(record2.actionRequestId),
              completeOutboxItem: { id: item2.id, owner: "w1" }
            })
            assert.strictEqual(claimed._tag, "Applied")
            assert.isNotNull(Option.getOrThrow(yield* outbox.get(item2.id)).completedAt)
          })
      )

      describe("expediteRetries", () => {
        /** An action of `connectionId`/`revision` whose `kind` item failed with `error` and waits until `waitUntil`. */
        const waiting = (options: {
          readonly kind: string
          readonly connectionId: string
          readonly revision?: number
          readonly error: string
          readonly waitUntil: number
        }) =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const outbox = yield* Outbox
            const record = action({ connectionId: options.connectionId, revision: options.revision ?? 0 })
            const item = work({ kind: options.kind, payload: { actionRequestId: record.actionRequestId } })
            assert.strictEqual(yield* create(record, item), "created")
            const owner = uid("w-")
            assert.strictEqual(
              (yield* ledger.leaseWithActions({ owner, now: T, leaseMillis: 30_000, limit: 1, kinds: [options.kind] }))
                .length,
              1
            )
            assert.isTrue(
              yield* outbox.reschedule({ id: item.id, owner, nextAttemptAt: options.waitUntil, error: options.error })
            )
            return item.id
          })
        const itemOf = (id: string) => Effect.flatMap(Outbox, (outbox) => Effect.map(outbox.get(id), Option.getOrThrow))

        it.effect(
          "makes due at once the revision's waiting items of the kinds whose last error is one named; nothing else",
          () =>
            Effect.gen(function* () {
              const ledger = yield* ActionLedger
              const kind = uid("kind-")
              const connectionId = uid("conn-")
              const later = T + 600_000
              const expedited = yield* waiting({ kind, connectionId, error: "connect", waitUntil: later })
              const alsoExpedited = yield* waiting({ kind, connectionId, error: "reset", waitUntil: later })
              const kept = {
                otherError: yield* waiting({ kind, connectionId, error: "response_wrong_signature", waitUntil: later }),
                otherRevision: yield* waiting({ kind, connectionId, revision: 1, error: "connect", waitUntil: later }),
                otherConnection: yield* waiting({
                  kind,
                  connectionId: uid("conn-"),
                  error: "connect",
                  waitUntil: later
                }),
                otherKind: yield* waiting({ kind: uid("kind-"), connectionId, error: "connect", waitUntil: later }),
                alreadyDue: yield* waiting({ kind, connectionId, error: "connect", waitUntil: T + 500 })
              }
              const before = new Map<string, unknown>()
              for (const id of Object.values(kept)) before.set(id, yield* itemOf(id))
              const now = T + 1_000
              assert.strictEqual(
                yield* ledger.expediteRetries({
                  connectionId,
                  revision: 0,
                  kinds: [kind],
                  errors: ["connect", "reset"],
                  now
                }),
                2
              )
              for (const id of [expedited, alsoExpedited]) {
                const item = yield* itemOf(id)
                assert.strictEqual(item.nextAttemptAt, now)
                // The attempt count and the error stay: a later failure backs off from where it was.
                assert.strictEqual(item.attempts, 1)
                assert.isNull(item.leaseOwner)
              }
              assert.strictEqual((yield* itemOf(alsoExpedited)).lastError, "reset")
              for (const [id, item] of before) assert.deepStrictEqual(yield* itemOf(id), item)
              // Now due: leased at `now`, both of them, before the ones still waiting.
              const leased = yield* ledger.leaseWithActions({
                owner: "w9",
                now,
                leaseMillis: 1_000,
                limit: 10,
                kinds: [kind]
              })
              assert.sameMembers(
                leased.map((l) => l.item.id),
                [expedited, alsoExpedited, kept.alreadyDue]
              )
            })
        )

        it.effect("with a limit, makes due only that many, those due soonest", () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const kind = uid("kind-")
            const connectionId = uid("conn-")
            const third = yield* waiting({ kind, connectionId, error: "connect", waitUntil: T + 30_000 })
            const first = yield* waiting({ kind, connectionId, error: "connect", waitUntil: T + 10_000 })
            const second = yield* waiting({ kind, connectionId, error: "connect", waitUntil: T + 20_000 })
            const options = { connectionId, revision: 0, kinds: [kind], errors: ["connect"], now: T + 1_000, limit: 1 }
            assert.strictEqual(yield* ledger.expediteRetries(options), 1)
            assert.strictEqual((yield* itemOf(first)).nextAttemptAt, T + 1_000)
            assert.strictEqual((yield* itemOf(second)).nextAttemptAt, T + 20_000)
            assert.strictEqual(yield* ledger.expediteRetries({ ...options, now: T + 2_000, limit: 5 }), 2)
            assert.strictEqual((yield* itemOf(second)).nextAttemptAt, T + 2_000)
            assert.strictEqual((yield* itemOf(third)).nextAttemptAt, T + 2_000)
            assert.strictEqual((yield* itemOf(first)).nextAttemptAt, T + 1_000)
          })
        )

        it.effect("leaves completed items, items under a live lease, and those already made due", () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const outbox = yield* Outbox
            const kind = uid("kind-")
            const connectionId = uid("conn-")
            const completed = yield* waiting({ kind, connectionId, error: "connect", waitUntil: T + 10 })
            assert.strictEqual(
              (yield* ledger.leaseWithActions({
                owner: "w1",
                now: T + 10,
                leaseMillis: 60_000,
                limit: 1,
                kinds: [kind]
              })).length,
              1
            )
            assert.isTrue(yield* outbox.complete({ id: completed, owner: "w1", now: T + 20 }))
            // Leased by a worker whose clock runs ahead: its next attempt is still after `now`.
            const leased = yield* waiting({ kind, connectionId, error: "connect", waitUntil: T + 30 })
            assert.strictEqual(
              (yield* ledger.leaseWithActions({
                owner: "w2",
                now: T + 30,
                leaseMillis: 60_000,
                limit: 1,
                kinds: [kind]
              })).length,
              1
            )
            const options = { connectionId, revision: 0, kinds: [kind], errors: ["connect"], now: T + 5 }
            assert.strictEqual(yield* ledger.expediteRetries(options), 0)
            assert.strictEqual((yield* itemOf(leased)).nextAttemptAt, T + 30)
            assert.strictEqual((yield* itemOf(leased)).leaseOwner, "w2")
            assert.strictEqual((yield* itemOf(completed)).completedAt, T + 20)
            const third = yield* waiting({ kind, connectionId, error: "connect", waitUntil: T + 600_000 })
            assert.strictEqual(yield* ledger.expediteRetries(options), 1)
            assert.strictEqual(yield* ledger.expediteRetries(options), 0)
            assert.strictEqual((yield* itemOf(third)).nextAttemptAt, T + 5)
          })
        )
      })

      it.effect("list: a workspace's actions newest first, filtered by state and account, paged by keyset", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const workspaceId = uid("ws-")
          // two share a creation time, so the id decides their order (descending, byte-wise)
          const made = yield* Effect.forEach(
            [
              { actionRequestId: "a-1", createdAt: T + 1, state: "queued", accountId: "acct_a" },
              { actionRequestId: "a-2", createdAt: T + 3, state: "verified", accountId: "acct_b" },
              { actionRequestId: "a-3", createdAt: T + 3, state: "queued", accountId: "acct_a" },
              { actionRequestId: "a-4", createdAt: T + 2, state: "queued", accountId: "acct_b" }
            ],
            ({ actionRequestId, ...rest }) =>
              existing({ workspaceId, actionRequestId: `${workspaceId}-${actionRequestId}`, ...rest })
          )
          yield* existing({ actionRequestId: uid("ar-"), createdAt: T + 5 }) // another workspace
          const ids = (records: ReadonlyArray<ActionRecord>) =>
            records.map((r) => r.actionRequestId.slice(workspaceId.length + 1))
          assert.deepStrictEqual(ids(yield* ledger.list({ workspaceId, limit: 10 })), ["a-3", "a-2", "a-4", "a-1"])
          assert.deepStrictEqual(yield* ledger.list({ workspaceId, limit: 1 }), [made[2]!])
          const first = yield* ledger.list({ workspaceId, limit: 2 })
          const last = first[first.length - 1]!
          const rest = yield* ledger.list({
            workspaceId,
            limit: 10,
            after: { createdAt: last.createdAt, actionRequestId: last.actionRequestId }
          })
          assert.deepStrictEqual(ids(rest), ["a-4", "a-1"])
          assert.deepStrictEqual(ids(yield* ledger.list({ workspaceId, limit: 10, state: "queued" })), [
            "a-3",
            "a-4",
            "a-1"
          ])
          assert.deepStrictEqual(ids(yield* ledger.list({ workspaceId, limit: 10, accountId: "acct_b" })), [
            "a-2",
            "a-4"
          ])
          assert.deepStrictEqual(
            ids(yield* ledger.list({ workspaceId, limit: 10, accountId: "acct_a", state: "verified" })),
            []
          )
          assert.deepStrictEqual(yield* ledger.list({ workspaceId: uid("ws-"), limit: 10 }), [])
        })
      )
    })
  })
