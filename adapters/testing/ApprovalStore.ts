import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fc from "fast-check"
import {
  type ApprovalRecord,
  ApprovalStore,
  type ApprovalStoreService,
  type PreparedReview
} from "../../core/ports/ApprovalStore.ts"
import { make as makeMemory } from "../memory/ApprovalStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const t0 = 1_700_000_000_000

const approval = (overrides: Partial<ApprovalRecord> = {}): ApprovalRecord => ({
  approvalId: uid("apr-"),
  workspaceId: uid("ws-"),
  accountId: uid("acct-"),
  tokenHash: uid("hash-"),
  requester: { sessionId: uid("rts-"), subject: "user-1", role: "viewer" },
  request: {
    catalogVersion: 3,
    binding: { publishedVersionId: "pv-1", decisionKey: "upgrade", offerKey: "pro-annual", actionKey: "upgrade_plan" },
    safeTerms: { amountMinor: 12_000, currency: "EUR", note: "ünïcödé ✓" }
  },
  state: "pending",
  revision: 0,
  expiresAt: t0 + 86_400_000,
  createdAt: t0,
  prepared: null,
  claimedAt: null,
  resolvedBy: null,
  resolvedAt: null,
  actionRequestId: null,
  ...overrides
})

const review = (n: number): Omit<PreparedReview, "revision"> => ({
  projection: {
    action: { key: "upgrade_plan", label: `Upgrade ${n}` },
    offer: { price: { amountMinor: 12_000 + n } },
    list: [1, "two", null]
  },
  projectionHash: `${n}`.repeat(64).slice(0, 64),
  reviewValidUntil: t0 + 600_000 + n,
  preparedBy: `rts-owner-${n}`,
  preparedAt: t0 + n
})

/** One operation of the property test, on the approval `a` or `b`. */
type Operation =
  | { readonly op: "prepare"; readonly target: "a" | "b"; readonly revision: number; readonly n: number }
  | {
      readonly op: "claim"
      readonly target: "a" | "b"
      readonly revision: number
      readonly session: string
      readonly now: number
      readonly staleBefore: number
    }
  | { readonly op: "complete"; readonly target: "a" | "b"; readonly session: string; readonly now: number }
  | { readonly op: "release"; readonly target: "a" | "b"; readonly session: string }
  | { readonly op: "deny"; readonly target: "a" | "b"; readonly session: string; readonly now: number }

const target = fc.constantFrom("a" as const, "b" as const)
const revision = fc.nat({ max: 4 })
const session = fc.constantFrom("s1", "s2", "s3")
const time = fc.nat({ max: 100 }).map((n) => t0 + n)
const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ op: fc.constant("prepare" as const), target, revision, n: fc.nat({ max: 9 }) }),
  fc.record({ op: fc.constant("claim" as const), target, revision, session, now: time, staleBefore: time }),
  fc.record({ op: fc.constant("complete" as const), target, session, now: time }),
  fc.record({ op: fc.constant("release" as const), target, session }),
  fc.record({ op: fc.constant("deny" as const), target, session, now: time })
)

const apply = (store: ApprovalStoreService, ids: { readonly a: string; readonly b: string }, o: Operation) => {
  const approvalId = ids[o.target]
  switch (o.op) {
    case "prepare":
      return store.prepare({ approvalId, revision: o.revision, review: review(o.n) })
    case "claim":
      return store.claim({
        approvalId,
        revision: o.revision,
        sessionId: o.session,
        now: o.now,
        staleBefore: o.staleBefore
      })
    case "complete":
      return store.complete({ approvalId, sessionId: o.session, actionRequestId: `act-${o.now}`, now: o.now })
    case "release":
      return store.release({ approvalId, sessionId: o.session })
    case "deny":
      return store.deny({ approvalId, sessionId: o.session, now: o.now })
  }
}

/**
 * The ApprovalStore contract: every change is a compare-and-set on `state` and `revision`. One
 * store per suite; each test works on approvals of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<ApprovalStore, unknown>) =>
  describe(`ApprovalStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      /** A created approval. */
      const created = (overrides: Partial<ApprovalRecord> = {}) =>
        Effect.gen(function* () {
          const record = approval(overrides)
          assert.isTrue(yield* (yield* ApprovalStore).create(record))
          return record
        })
      const current = (approvalId: string) =>
        Effect.flatMap(ApprovalStore, (store) => Effect.flatMap(store.get(approvalId), Effect.orDie))
      const claim = (approvalId: string, revision: number, sessionId: string, now = t0 + 1_000, staleBefore = t0) =>
        Effect.flatMap(ApprovalStore, (store) => store.claim({ approvalId, revision, sessionId, now, staleBefore }))

      it.effect("a created approval is read back exactly as stored; an unknown id is None", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          assert.deepStrictEqual(yield* store.get(record.approvalId), Option.some(record))
          assert.isTrue(Option.isNone(yield* store.get(uid("apr-"))))
          const resolved = yield* created({
            state: "approved",
            revision: 3,
            request: "a bare JSON string",
            prepared: { ...review(7), revision: 3 },
            claimedAt: t0 + 5,
            resolvedBy: "rts-owner",
            resolvedAt: t0 + 6,
            actionRequestId: "act-1"
          })
          assert.deepStrictEqual(yield* store.get(resolved.approvalId), Option.some(resolved))
        })
      )

      it.effect("list: a workspace's approvals newest first, by state and expiry, paged by keyset", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const workspaceId = uid("ws-")
          const id = (n: number) => `${workspaceId}-apr-${n}`
          // 2 and 3 share a creation time: the larger id comes first; 1 expired at t0 + 100
          const one = yield* created({ workspaceId, approvalId: id(1), createdAt: t0, expiresAt: t0 + 100 })
          yield* created({ workspaceId, approvalId: id(2), createdAt: t0 + 10 })
          const three = yield* created({
            workspaceId,
            approvalId: id(3),
            createdAt: t0 + 10,
            state: "approved",
            resolvedBy: "rts-owner",
            resolvedAt: t0 + 20,
            actionRequestId: "act-3"
          })
          yield* created({ workspaceId, approvalId: id(4), createdAt: t0 + 30, state: "denied" })
          yield* created({ createdAt: t0 + 15 })
          const ids = (listed: ReadonlyArray<ApprovalRecord>) => listed.map((a) => a.approvalId)
          assert.deepStrictEqual(ids(yield* store.list({ workspaceId, limit: 10 })), [id(4), id(3), id(2), id(1)])
          assert.deepStrictEqual(yield* store.list({ workspaceId, limit: 10, state: "approved" }), [three])
          const now = t0 + 100
          const pending = (passed: boolean) =>
            store.list({ workspaceId, limit: 10, state: "pending", expiry: { now, passed } })
          assert.deepStrictEqual(yield* pending(true), [one])
          assert.deepStrictEqual(ids(yield* pending(false)), [id(2)])
          const first = yield* store.list({ workspaceId, limit: 2 })
          assert.deepStrictEqual(ids(first), [id(4), id(3)])
          const after = { createdAt: first[1]!.createdAt, id: first[1]!.approvalId }
          assert.deepStrictEqual(ids(yield* store.list({ workspaceId, limit: 10, after })), [id(2), id(1)])
          assert.deepStrictEqual(yield* store.list({ workspaceId: uid("ws-"), limit: 10 }), [])
        })
      )

      it.effect("a duplicate id in the workspace is refused and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const first = yield* created()
          assert.isFalse(
            yield* store.create(
              approval({
                workspaceId: first.workspaceId,
                approvalId: first.approvalId,
                accountId: "other",
                revision: 9
              })
            )
          )
          assert.deepStrictEqual(yield* store.get(first.approvalId), Option.some(first))
        })
      )

      it.effect("prepare at the current revision bumps it and replaces the review; a stale revision gets None", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          const first = yield* store.prepare({ approvalId: record.approvalId, revision: 0, review: review(1) })
          const afterFirst = { ...record, revision: 1, prepared: { ...review(1), revision: 1 } }
          assert.deepStrictEqual(first, Option.some(afterFirst))
          assert.isTrue(
            Option.isNone(yield* store.prepare({ approvalId: record.approvalId, revision: 0, review: review(2) }))
          )
          assert.isTrue(
            Option.isNone(yield* store.prepare({ approvalId: record.approvalId, revision: 2, review: review(2) }))
          )
          assert.deepStrictEqual(yield* current(record.approvalId), afterFirst)
          const second = yield* store.prepare({ approvalId: record.approvalId, revision: 1, review: review(2) })
          const afterSecond = { ...record, revision: 2, prepared: { ...review(2), revision: 2 } }
          assert.deepStrictEqual(second, Option.some(afterSecond))
          assert.deepStrictEqual(yield* current(record.approvalId), afterSecond)
          assert.isTrue(
            Option.isNone(yield* store.prepare({ approvalId: uid("apr-"), revision: 0, review: review(1) }))
          )
        })
      )

      it.effect("prepare of an approval that is not pending gets None and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const claimed = yield* created()
          assert.isTrue(yield* claim(claimed.approvalId, 0, "rts-owner"))
          const before = yield* current(claimed.approvalId)
          assert.isTrue(
            Option.isNone(yield* store.prepare({ approvalId: claimed.approvalId, revision: 0, review: review(1) }))
          )
          assert.deepStrictEqual(yield* current(claimed.approvalId), before)
          const denied = yield* created()
          assert.isTrue(yield* store.deny({ approvalId: denied.approvalId, sessionId: "rts-owner", now: t0 + 5 }))
          assert.isTrue(
            Option.isNone(yield* store.prepare({ approvalId: denied.approvalId, revision: 0, review: review(1) }))
          )
          for (const state of ["approved", "approving"] as const) {
            const other = yield* created({ state, claimedAt: t0, resolvedBy: "rts-x" })
            assert.isTrue(
              Option.isNone(yield* store.prepare({ approvalId: other.approvalId, revision: 0, review: review(1) }))
            )
            assert.deepStrictEqual(yield* current(other.approvalId), other)
          }
        })
      )

      it.effect(
        "claim takes a pending approval at its revision once; a wrong revision or a second claim is refused",
        () =>
          Effect.gen(function* () {
            const store = yield* ApprovalStore
            const record = yield* created()
            yield* store.prepare({ approvalId: record.approvalId, revision: 0, review: review(1) })
            assert.isFalse(yield* claim(record.approvalId, 0, "rts-owner"))
            assert.isFalse(yield* claim(record.approvalId, 2, "rts-owner"))
            assert.isTrue(yield* claim(record.approvalId, 1, "rts-owner", t0 + 1_000))
            assert.deepStrictEqual(yield* current(record.approvalId), {
              ...record,
              revision: 1,
              prepared: { ...review(1), revision: 1 },
              state: "approving",
              claimedAt: t0 + 1_000,
              resolvedBy: "rts-owner"
            })
            assert.isFalse(yield* claim(record.approvalId, 1, "rts-owner", t0 + 1_001))
            assert.isFalse(yield* claim(record.approvalId, 1, "rts-other", t0 + 1_001))
            assert.strictEqual((yield* current(record.approvalId)).resolvedBy, "rts-owner")
            assert.isFalse(yield* claim(uid("apr-"), 0, "rts-owner"))
          })
      )

      it.effect(
        "a stale approving claim is taken over only by its own session, and only when taken before staleBefore",
        () =>
          Effect.gen(function* () {
            const record = yield* created()
            assert.isTrue(yield* claim(record.approvalId, 0, "rts-first", t0 + 1_000))
            // Taken exactly at staleBefore, or after it: still held, even for its own session.
            assert.isFalse(yield* claim(record.approvalId, 0, "rts-first", t0 + 70_000, t0 + 1_000))
            assert.isFalse(yield* claim(record.approvalId, 0, "rts-first", t0 + 70_000, t0 + 500))
            // Another session never takes it over, however stale.
            assert.isFalse(yield* claim(record.approvalId, 0, "rts-second", t0 + 70_000, t0 + 60_000))
            // At a moved revision, even a stale claim is kept.
            assert.isFalse(yield* claim(record.approvalId, 1, "rts-first", t0 + 70_000, t0 + 60_000))
            assert.isTrue(yield* claim(record.approvalId, 0, "rts-first", t0 + 70_000, t0 + 1_001))
            const taken = yield* current(record.approvalId)
            assert.strictEqual(taken.state, "approving")
            assert.strictEqual(taken.claimedAt, t0 + 70_000)
            assert.strictEqual(taken.resolvedBy, "rts-first")
            const store = yield* ApprovalStore
            assert.isFalse(
              yield* store.complete({
                approvalId: record.approvalId,
                sessionId: "rts-second",
                actionRequestId: "act-1",
                now: t0 + 70_001
              })
            )
            assert.isTrue(
              yield* store.complete({
                approvalId: record.approvalId,
                sessionId: "rts-first",
                actionRequestId: "act-1",
                now: t0 + 70_001
              })
            )
            assert.strictEqual((yield* current(record.approvalId)).state, "approved")
          })
      )

      it.effect("a finished approval is never claimed, however old", () =>
        Effect.gen(function* () {
          for (const state of ["approved", "denied"] as const) {
            const record = yield* created({ state, claimedAt: t0, resolvedBy: "rts-x", resolvedAt: t0 })
            assert.isFalse(yield* claim(record.approvalId, 0, "rts-owner", t0 + 1_000_000, t0 + 999_999))
            assert.deepStrictEqual(yield* current(record.approvalId), record)
          }
        })
      )

      it.effect("complete is the claiming session's only, and only while it holds the claim", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          assert.isFalse(
            yield* store.complete({
              approvalId: record.approvalId,
              sessionId: "rts-owner",
              actionRequestId: "act-1",
              now: t0 + 2_000
            })
          )
          assert.isTrue(yield* claim(record.approvalId, 0, "rts-owner", t0 + 1_000))
          assert.isFalse(
            yield* store.complete({
              approvalId: record.approvalId,
              sessionId: "rts-other",
              actionRequestId: "act-1",
              now: t0 + 2_000
            })
          )
          assert.isTrue(
            yield* store.complete({
              approvalId: record.approvalId,
              sessionId: "rts-owner",
              actionRequestId: "act-1",
              now: t0 + 2_000
            })
          )
          const approved = {
            ...record,
            state: "approved" as const,
            claimedAt: t0 + 1_000,
            resolvedBy: "rts-owner",
            resolvedAt: t0 + 2_000,
            actionRequestId: "act-1"
          }
          assert.deepStrictEqual(yield* current(record.approvalId), approved)
          assert.isFalse(
            yield* store.complete({
              approvalId: record.approvalId,
              sessionId: "rts-owner",
              actionRequestId: "act-2",
              now: t0 + 3_000
            })
          )
          assert.isFalse(yield* store.release({ approvalId: record.approvalId, sessionId: "rts-owner" }))
          assert.isFalse(yield* store.deny({ approvalId: record.approvalId, sessionId: "rts-owner", now: t0 + 3_000 }))
          assert.deepStrictEqual(yield* current(record.approvalId), approved)
          assert.isFalse(
            yield* store.complete({
              approvalId: uid("apr-"),
              sessionId: "rts-owner",
              actionRequestId: "act-1",
              now: t0
            })
          )
        })
      )

      it.effect("release returns a failed claim to pending at the next revision, its review void", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          yield* store.prepare({ approvalId: record.approvalId, revision: 0, review: review(1) })
          assert.isFalse(yield* store.release({ approvalId: record.approvalId, sessionId: "rts-owner" }))
          assert.isTrue(yield* claim(record.approvalId, 1, "rts-owner"))
          assert.isFalse(yield* store.release({ approvalId: record.approvalId, sessionId: "rts-other" }))
          assert.isTrue(yield* store.release({ approvalId: record.approvalId, sessionId: "rts-owner" }))
          assert.deepStrictEqual(yield* current(record.approvalId), { ...record, revision: 2 })
          assert.isFalse(yield* store.release({ approvalId: record.approvalId, sessionId: "rts-owner" }))
          // The old review's revision is gone; the next resolve needs a fresh prepare.
          assert.isFalse(yield* claim(record.approvalId, 1, "rts-owner"))
          assert.deepStrictEqual(
            Option.map(
              yield* store.prepare({ approvalId: record.approvalId, revision: 2, review: review(2) }),
              (a) => a.prepared
            ),
            Option.some({ ...review(2), revision: 3 })
          )
          assert.isTrue(yield* claim(record.approvalId, 3, "rts-other"))
          assert.isFalse(yield* store.release({ approvalId: uid("apr-"), sessionId: "rts-owner" }))
        })
      )

      it.effect("deny finishes a pending approval once; a claimed one cannot be denied", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          yield* store.prepare({ approvalId: record.approvalId, revision: 0, review: review(1) })
          assert.isTrue(yield* store.deny({ approvalId: record.approvalId, sessionId: "rts-owner", now: t0 + 5 }))
          const denied = {
            ...record,
            revision: 1,
            prepared: { ...review(1), revision: 1 },
            state: "denied" as const,
            resolvedBy: "rts-owner",
            resolvedAt: t0 + 5
          }
          assert.deepStrictEqual(yield* current(record.approvalId), denied)
          assert.isFalse(yield* store.deny({ approvalId: record.approvalId, sessionId: "rts-other", now: t0 + 6 }))
          assert.isFalse(yield* claim(record.approvalId, 1, "rts-owner"))
          assert.deepStrictEqual(yield* current(record.approvalId), denied)

          const claimed = yield* created()
          assert.isTrue(yield* claim(claimed.approvalId, 0, "rts-owner"))
          assert.isFalse(yield* store.deny({ approvalId: claimed.approvalId, sessionId: "rts-other", now: t0 + 5 }))
          assert.strictEqual((yield* current(claimed.approvalId)).state, "approving")
          assert.isFalse(yield* store.deny({ approvalId: uid("apr-"), sessionId: "rts-owner", now: t0 }))
        })
      )

      it.effect(
        "cancelForRequester cancels the session's pending approvals in its workspace only, and nothing else",
        () =>
          Effect.gen(function* () {
            const store = yield* ApprovalStore
            const workspaceId = uid("ws-")
            const requester = { sessionId: uid("rts-"), subject: "user-1", role: "viewer" }
            const pending = yield* created({ workspaceId, requester })
            const prepared = yield* created({ workspaceId, requester })
            yield* store.prepare({ approvalId: prepared.approvalId, revision: 0, review: review(1) })
            const claimed = yield* created({ workspaceId, requester })
            assert.isTrue(yield* claim(claimed.approvalId, 0, "rts-owner"))
            const denied = yield* created({ workspaceId, requester })
            assert.isTrue(yield* store.deny({ approvalId: denied.approvalId, sessionId: "rts-owner", now: t0 + 1 }))
            const otherRequester = yield* created({ workspaceId })
            const otherWorkspace = yield* created({ requester })

            assert.strictEqual(
              yield* store.cancelForRequester({ workspaceId, sessionId: requester.sessionId, now: t0 + 9 }),
              2
            )
            assert.deepStrictEqual(yield* current(pending.approvalId), {
              ...pending,
              state: "cancelled",
              resolvedAt: t0 + 9
            })
            const cancelledReview = yield* current(prepared.approvalId)
            assert.deepStrictEqual([cancelledReview.state, cancelledReview.revision], ["cancelled", 1])
            assert.strictEqual((yield* current(claimed.approvalId)).state, "approving", "a claim is left to finish")
            assert.strictEqual((yield* current(denied.approvalId)).state, "denied")
            assert.deepStrictEqual(yield* current(otherRequester.approvalId), otherRequester)
            assert.deepStrictEqual(yield* current(otherWorkspace.approvalId), otherWorkspace)
            // A cancelled approval is finished: never prepared, claimed or denied, and not cancelled twice.
            assert.isTrue(
              Option.isNone(yield* store.prepare({ approvalId: pending.approvalId, revision: 0, review: review(2) }))
            )
            assert.isFalse(yield* claim(pending.approvalId, 0, "rts-owner"))
            assert.isFalse(yield* store.deny({ approvalId: pending.approvalId, sessionId: "rts-owner", now: t0 + 10 }))
            assert.strictEqual(
              yield* store.cancelForRequester({ workspaceId, sessionId: requester.sessionId, now: t0 + 11 }),
              0
            )
          })
      )

      it.effect("of 50 concurrent claims at one revision exactly one succeeds", () =>
        Effect.gen(function* () {
          const record = yield* created()
          const sessions = Array.from({ length: 50 }, (_, i) => `rts-${i}`)
          const results = yield* Effect.all(
            sessions.map((s) => claim(record.approvalId, 0, s)),
            { concurrency: 50 }
          )
          assert.strictEqual(results.filter((won) => won).length, 1)
          const after = yield* current(record.approvalId)
          assert.strictEqual(after.state, "approving")
          assert.strictEqual(after.resolvedBy, sessions[results.indexOf(true)])
        })
      )

      it.effect("of 50 concurrent denies and claims exactly one wins, and the row says which", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          const attempts = Array.from({ length: 50 }, (_, i) => ({ sessionId: `rts-${i}`, deny: i % 2 === 0 }))
          const results = yield* Effect.all(
            attempts.map((a) =>
              a.deny
                ? store.deny({ approvalId: record.approvalId, sessionId: a.sessionId, now: t0 + 1_000 })
                : claim(record.approvalId, 0, a.sessionId)
            ),
            { concurrency: 50 }
          )
          assert.strictEqual(results.filter((won) => won).length, 1)
          const winner = attempts[results.indexOf(true)]!
          const after = yield* current(record.approvalId)
          assert.strictEqual(after.state, winner.deny ? "denied" : "approving")
          assert.strictEqual(after.resolvedBy, winner.sessionId)
        })
      )

      const caps = { account: 4, action: 2, subject: 3 }
      const within = (record: ApprovalRecord, actionKey = "extend_trial_14", now = t0) =>
        Effect.flatMap(ApprovalStore, (store) => store.createWithinCaps({ record, actionKey, caps, now }))

      it.effect("createWithinCaps inserts up to the action's cap, then names the action and its earliest expiry", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const scope = { workspaceId: uid("ws-"), accountId: uid("acct-") }
          const first = approval({ ...scope, expiresAt: t0 + 5_000 })
          assert.deepStrictEqual(yield* within(first), { _tag: "Created" })
          assert.deepStrictEqual(yield* store.get(first.approvalId), Option.some(first))
          assert.deepStrictEqual(yield* within(approval({ ...scope, expiresAt: t0 + 9_000 })), { _tag: "Created" })
          const refused = approval({ ...scope, requester: { sessionId: "rts-2", subject: "user-2", role: "viewer" } })
          assert.deepStrictEqual(yield* within(refused), { _tag: "Full", scope: "action", freesAt: t0 + 5_000 })
          assert.isTrue(Option.isNone(yield* store.get(refused.approvalId)))
          // Another action of the same account still has room; the same id is never inserted twice.
          assert.deepStrictEqual(yield* within(refused, "upgrade_plan"), { _tag: "Created" })
          assert.deepStrictEqual(yield* within(refused, "upgrade_plan"), { _tag: "Exists" })
        })
      )

      it.effect("createWithinCaps counts the requester's subject, then the whole account", () =>
        Effect.gen(function* () {
          const scope = { workspaceId: uid("ws-"), accountId: uid("acct-") }
          for (const key of ["a", "b", "c"])
            assert.deepStrictEqual(yield* within(approval(scope), key), { _tag: "Created" })
          assert.deepStrictEqual(yield* within(approval({ ...scope, expiresAt: t0 + 1 }), "d"), {
            _tag: "Full",
            scope: "subject",
            freesAt: t0 + 86_400_000
          })
          const other = { sessionId: "rts-2", subject: "user-2", role: "viewer" }
          assert.deepStrictEqual(yield* within(approval({ ...scope, requester: other }), "d"), { _tag: "Created" })
          assert.deepStrictEqual(
            yield* within(approval({ ...scope, requester: { ...other, subject: "user-3" } }), "e"),
            {
              _tag: "Full",
              scope: "account",
              freesAt: t0 + 86_400_000
            }
          )
        })
      )

      it.effect("createWithinCaps counts only open, unexpired approvals of the same workspace and account", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const scope = { workspaceId: uid("ws-"), accountId: uid("acct-") }
          const finished = yield* Effect.all([within(approval(scope)), within(approval(scope))])
          assert.deepStrictEqual(finished, [{ _tag: "Created" }, { _tag: "Created" }])
          // One expiring at t0 + 10: open before then, not counted from then on.
          const expiring = approval({ ...scope, expiresAt: t0 + 10 })
          assert.deepStrictEqual(yield* within(expiring, "other"), { _tag: "Created" })
          assert.deepStrictEqual(yield* within(approval(scope), "third"), {
            _tag: "Full",
            scope: "subject",
            freesAt: t0 + 10
          })
          assert.deepStrictEqual(yield* within(approval(scope), "third", t0 + 10), { _tag: "Created" })
          // Denied and approved approvals leave the count.
          const denied = approval({ ...scope, accountId: uid("acct-") })
          yield* within(denied)
          yield* within(approval({ ...denied, approvalId: uid("apr-") }))
          assert.strictEqual((yield* within(approval({ ...denied, approvalId: uid("apr-") })))._tag, "Full")
          assert.isTrue(yield* store.deny({ approvalId: denied.approvalId, sessionId: "rts-owner", now: t0 }))
          assert.deepStrictEqual(yield* within(approval({ ...denied, approvalId: uid("apr-") })), { _tag: "Created" })
          // Another workspace, and another account, start from nothing.
          assert.deepStrictEqual(yield* within(approval({ accountId: scope.accountId })), { _tag: "Created" })
          assert.deepStrictEqual(yield* within(approval({ workspaceId: scope.workspaceId })), { _tag: "Created" })
        })
      )

      it.effect("of 12 concurrent createWithinCaps for one account's last places, exactly the cap succeed", () =>
        Effect.gen(function* () {
          const scope = { workspaceId: uid("ws-"), accountId: uid("acct-") }
          const results = yield* Effect.all(
            Array.from({ length: 12 }, (_, i) =>
              within(
                approval({ ...scope, requester: { sessionId: `rts-${i}`, subject: `user-${i}`, role: "viewer" } }),
                `key-${i}`
              )
            ),
            { concurrency: 12 }
          )
          assert.strictEqual(results.filter((r) => r._tag === "Created").length, caps.account)
          for (const r of results)
            if (r._tag !== "Created")
              assert.deepStrictEqual(r, { _tag: "Full", scope: "account", freesAt: t0 + 86_400_000 })
        })
      )

      it.effect("getUnlocked hides an approval once it has the most wrong tokens, as an unknown id", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          const unlocked = (max: number) => store.getUnlocked({ approvalId: record.approvalId, maxWrongTokens: max })
          assert.deepStrictEqual(yield* unlocked(1), Option.some(record))
          yield* store.recordWrongToken({ workspaceId: record.workspaceId, approvalId: record.approvalId })
          assert.isTrue(Option.isNone(yield* unlocked(1)))
          assert.deepStrictEqual(yield* unlocked(2), Option.some(record))
          yield* store.recordWrongToken({ workspaceId: record.workspaceId, approvalId: record.approvalId })
          assert.isTrue(Option.isNone(yield* unlocked(2)))
          // `get` still reads it; the record itself is unchanged.
          assert.deepStrictEqual(yield* store.get(record.approvalId), Option.some(record))
          assert.isTrue(Option.isNone(yield* store.getUnlocked({ approvalId: uid("apr-"), maxWrongTokens: 5 })))
        })
      )

      it.effect("a wrong token from another workspace, or for an unknown id, counts for nothing", () =>
        Effect.gen(function* () {
          const store = yield* ApprovalStore
          const record = yield* created()
          yield* store.recordWrongToken({ workspaceId: uid("ws-"), approvalId: record.approvalId })
          yield* store.recordWrongToken({ workspaceId: record.workspaceId, approvalId: uid("apr-") })
          assert.deepStrictEqual(
            yield* store.getUnlocked({ approvalId: record.approvalId, maxWrongTokens: 1 }),
            Option.some(record)
          )
        })
      )

      it.effect.prop(
        "any sequence of operations leaves the store where the memory model is, with the same answers",
        [fc.array(operation, { maxLength: 25 })],
        ([operations]) =>
          Effect.gen(function* () {
            const store = yield* ApprovalStore
            const model = makeMemory()
            const a = approval()
            const b = approval({ state: "approving", claimedAt: t0 + 50, resolvedBy: "s1" })
            for (const record of [a, b]) {
              assert.isTrue(yield* store.create(record))
              assert.isTrue(yield* model.create(record))
            }
            const ids = { a: a.approvalId, b: b.approvalId }
            for (const o of operations) {
              assert.deepStrictEqual(yield* apply(store, ids, o), yield* apply(model, ids, o), JSON.stringify(o))
            }
            for (const id of [a.approvalId, b.approvalId])
              assert.deepStrictEqual(yield* store.get(id), yield* model.get(id))
          }),
        { fastCheck: { numRuns: 40, seed: 16 } }
      )
    })
  })
