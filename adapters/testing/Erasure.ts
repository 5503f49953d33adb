import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AccountProfileStore } from "../../core/ports/AccountProfileStore.ts"
import { ActionLedger, type ActionRecord, erasedField, redactedRequest } from "../../core/ports/ActionLedger.ts"
import { type ApprovalRecord, ApprovalStore } from "../../core/ports/ApprovalStore.ts"
import { EventStore, type StoredEvent } from "../../core/ports/EventStore.ts"
import { FeatureGateStore } from "../../core/ports/FeatureGateStore.ts"
import { type RuntimeSessionRecord, RuntimeSessionStore } from "../../core/ports/RuntimeSessionStore.ts"
import type { StoragePorts } from "../../core/ports/StoragePorts.ts"
import { noCounts, SuppressionStore } from "../../core/ports/SuppressionStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000

const event = (workspaceId: string, accountId: string, userId?: string): StoredEvent => {
  const eventId = uid("evt-")
  return {
    id: uid("row-"),
    workspaceId,
    eventId,
    accountId,
    eventName: "feature_used",
    occurredAt: T,
    receivedAt: T + 1,
    payloadHash: "a".repeat(64),
    body: {
      event_name: "feature_used",
      account_id: accountId,
      event_id: eventId,
      timestamp: "2023-11-14T22:13:20.000Z",
      ...(userId === undefined ? {} : { user_id: userId })
    }
  }
}

const session = (workspaceId: string, accountId: string, subject: string): RuntimeSessionRecord => ({
  sessionId: uid("rts-"),
  workspaceId,
  accountId,
  subject,
  role: "billing_owner",
  authorities: ["funnels.actions.request"],
  tokenHash: uid("hash-"),
  issuedBy: uid("key-"),
  createdAt: T,
  expiresAt: T + 900_000,
  revokedAt: null
})

const approval = (workspaceId: string, accountId: string, subject: string): ApprovalRecord => ({
  approvalId: uid("apr-"),
  workspaceId,
  accountId,
  tokenHash: uid("hash-"),
  requester: { sessionId: uid("rts-"), subject, role: "viewer" },
  request: { binding: { actionKey: "upgrade_plan" } },
  state: "pending",
  revision: 0,
  expiresAt: T + 86_400_000,
  createdAt: T,
  prepared: null,
  claimedAt: null,
  resolvedBy: null,
  resolvedAt: null,
  actionRequestId: null
})

const action = (
  workspaceId: string,
  accountId: string,
  subjectId: string,
  state: string
): Omit<ActionRecord, "version" | "updatedAt"> => ({
  actionRequestId: uid("ar-"),
  workspaceId,
  accountId,
  connectionId: uid("conn-"),
  revision: 1,
  providerIdempotencyKey: uid("idem-"),
  state,
  request: {
    accountId,
    action: { id: uid("act-"), key: "extend_trial", operation: { family: "extend_trial", days: 7 } },
    actor: { authority: "billing_owner", roleKey: "owner", subjectId },
    binding: { journeyId: uid("j-") }
  },
  acknowledgement: { state: "accepted" },
  sealedContinuation: "sealed-continuation",
  createdAt: T
})

/**
 * The contract of erasure over the storage ports: each store's subject operation (events,
 * profiles, gates, sessions, approvals, the ledger's redaction) removes the subject's rows and only
 * them, and the `SuppressionStore` keeps one audited suppression per subject. One store per suite;
 * each test uses workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<StoragePorts, unknown>) =>
  describe(`Erasure contract (${name})`, () => {
    onOneStore(layer, (it) => {
      it.effect("a suppression is created once; a later run adds its counts and becomes the last", () =>
        Effect.gen(function* () {
          const store = yield* SuppressionStore
          const workspaceId = uid("ws-")
          const subject = { kind: "account" as const, id: "acct_gone" }
          assert.isTrue(Option.isNone(yield* store.get(workspaceId, subject)))
          const first = yield* store.record({
            workspaceId,
            subject,
            at: T,
            by: "api_key:1",
            removed: { ...noCounts, events: 3, users: 1 }
          })
          assert.deepStrictEqual(first, {
            workspaceId,
            subject,
            createdAt: T,
            createdBy: "api_key:1",
            removed: { ...noCounts, events: 3, users: 1 },
            lastErasedAt: T,
            lastErasedBy: "api_key:1"
          })
          const again = yield* store.record({
            workspaceId,
            subject,
            at: T + 5,
            by: "api_key:2",
            removed: { ...noCounts, events: 1 }
          })
          assert.deepStrictEqual(again, {
            ...first,
            removed: { ...noCounts, events: 4, users: 1 },
            lastErasedAt: T + 5,
            lastErasedBy: "api_key:2"
          })
          assert.deepStrictEqual(yield* store.get(workspaceId, subject), Option.some(again))
          assert.isTrue(Option.isNone(yield* store.get(workspaceId, { kind: "user", id: "acct_gone" })))
        })
      )

      it.effect("suppressions are listed newest first and paged; createdSince reads every workspace's", () =>
        Effect.gen(function* () {
          const store = yield* SuppressionStore
          const workspaceId = uid("ws-")
          const at = T + 10_000_000
          for (const [kind, id, t] of [
            ["account", "a1", at],
            ["user", "u1", at + 1],
            ["account", "a2", at + 1]
          ] as const) {
            yield* store.record({ workspaceId, subject: { kind, id }, at: t, by: "api_key:1", removed: noCounts })
          }
          const page = yield* store.list({ workspaceId, limit: 2 })
          assert.deepStrictEqual(
            page.map((s) => `${s.subject.kind}/${s.subject.id}`),
            ["user/u1", "account/a2"]
          )
          const last = page[1]!
          const rest = yield* store.list({
            workspaceId,
            limit: 2,
            after: { createdAt: last.createdAt, kind: last.subject.kind, id: last.subject.id }
          })
          assert.deepStrictEqual(
            rest.map((s) => s.subject.id),
            ["a1"]
          )
          const since = (yield* store.createdSince(at + 1)).filter((s) => s.workspaceId === workspaceId)
          assert.deepStrictEqual(since.map((s) => s.subject.id).sort(), ["a2", "u1"])
        })
      )

      it.effect("an account's events are removed, and only them; its event ids may be used again", () =>
        Effect.gen(function* () {
          const events = yield* EventStore
          const workspaceId = uid("ws-")
          const gone = [event(workspaceId, "acct_gone", "u1"), event(workspaceId, "acct_gone")]
          const kept = [event(workspaceId, "acct_kept", "u1"), event(uid("ws-"), "acct_gone")]
          yield* events.append([...gone, ...kept])
          const erased = yield* events.eraseSubject(workspaceId, { kind: "account", id: "acct_gone" })
          assert.deepStrictEqual(
            erased.map((e) => `${e.id}:${e.userId}`).sort(),
            [`${gone[0]!.id}:u1`, `${gone[1]!.id}:null`].sort()
          )
          assert.deepStrictEqual(yield* events.listAll({ workspaceId, accountId: "acct_gone" }), [])
          assert.strictEqual((yield* events.listAll({ workspaceId, accountId: "acct_kept" })).length, 1)
          assert.strictEqual((yield* events.listAll({ workspaceId: kept[1]!.workspaceId })).length, 1)
          const [again] = yield* events.append([{ ...gone[0]!, id: uid("row-") }])
          assert.strictEqual(again!._tag, "Stored")
        })
      )

      it.effect("a user's events are removed in every account of the workspace", () =>
        Effect.gen(function* () {
          const events = yield* EventStore
          const workspaceId = uid("ws-")
          const gone = [event(workspaceId, "acct_1", "user_gone"), event(workspaceId, "acct_2", "user_gone")]
          yield* events.append([...gone, event(workspaceId, "acct_1", "user_kept"), event(workspaceId, "acct_1")])
          const erased = yield* events.eraseSubject(workspaceId, { kind: "user", id: "user_gone" })
          assert.deepStrictEqual(erased.map((e) => e.id).sort(), gone.map((e) => e.id).sort())
          assert.isTrue(erased.every((e) => e.userId === "user_gone"))
          assert.strictEqual((yield* events.listAll({ workspaceId })).length, 2)
        })
      )

      it.effect("an account's profile: its facts, logins and the user records of its users are removed", () =>
        Effect.gen(function* () {
          const profiles = yield* AccountProfileStore
          const workspaceId = uid("ws-")
          const fact = { name: "plan", value: "pro", observedAt: T, sourceEventId: uid("row-") }
          const field = { value: "Ada", observedAt: T, sourceEventId: uid("row-") }
          yield* profiles.applyFacts(workspaceId, "acct_gone", [fact, { ...fact, name: "seat_count", value: 3 }])
          yield* profiles.applyFacts(workspaceId, "acct_kept", [fact])
          for (const userId of ["u_login", "u_event", "u_other"]) {
            yield* profiles.upsertUser({ workspaceId, userId, name: field, email: { ...field, value: "a@b.test" } })
          }
          const login = { workspaceId, observedAt: T, sourceEventId: uid("row-") }
          yield* profiles.recordLogins([
            { ...login, accountId: "acct_gone", userId: "u_login" },
            { ...login, accountId: "acct_kept", userId: "u_other" }
          ])
          const removed = yield* profiles.eraseSubject({
            workspaceId,
            subject: { kind: "account", id: "acct_gone" },
            userIds: ["u_event"],
            sourceEventIds: []
          })
          assert.deepStrictEqual(removed, { profileFacts: 2, users: 2, logins: 1 })
          assert.isTrue(Option.isNone(yield* profiles.get(workspaceId, "acct_gone")))
          assert.deepStrictEqual(yield* profiles.listLogins(workspaceId, "acct_gone"), [])
          assert.isTrue(Option.isNone(yield* profiles.getUser(workspaceId, "u_login")))
          assert.isTrue(Option.isNone(yield* profiles.getUser(workspaceId, "u_event")))
          assert.isTrue(Option.isSome(yield* profiles.getUser(workspaceId, "u_other")))
          assert.isTrue(Option.isSome(yield* profiles.get(workspaceId, "acct_kept")))
          assert.strictEqual((yield* profiles.listLogins(workspaceId, "acct_kept")).length, 1)
        })
      )

      it.effect("a user's profile: its record, its logins everywhere and the facts its events set are removed", () =>
        Effect.gen(function* () {
          const profiles = yield* AccountProfileStore
          const workspaceId = uid("ws-")
          const byUser = uid("row-")
          const fact = { name: "plan", value: "pro", observedAt: T, sourceEventId: byUser }
          yield* profiles.applyFacts(workspaceId, "acct_1", [fact, { ...fact, name: "seat_count", sourceEventId: "x" }])
          yield* profiles.upsertUser({
            workspaceId,
            userId: "user_gone",
            name: { value: "Ada", observedAt: T, sourceEventId: byUser }
          })
          const login = { workspaceId, observedAt: T, sourceEventId: byUser, userId: "user_gone" }
          yield* profiles.recordLogins([
            { ...login, accountId: "acct_1" },
            { ...login, accountId: "acct_2" },
            { ...login, accountId: "acct_2", userId: "user_kept" }
          ])
          const removed = yield* profiles.eraseSubject({
            workspaceId,
            subject: { kind: "user", id: "user_gone" },
            userIds: [],
            sourceEventIds: [byUser]
          })
          assert.deepStrictEqual(removed, { profileFacts: 1, users: 1, logins: 2 })
          assert.isTrue(Option.isNone(yield* profiles.getUser(workspaceId, "user_gone")))
          const facts = Option.getOrThrow(yield* profiles.get(workspaceId, "acct_1")).facts
          assert.deepStrictEqual(
            facts.map((f) => f.name),
            ["seat_count"]
          )
          assert.deepStrictEqual(
            (yield* profiles.listLogins(workspaceId, "acct_2")).map((l) => l.userId),
            ["user_kept"]
          )
        })
      )

      it.effect("an account's gates, and a subject's runtime sessions and approvals, are removed", () =>
        Effect.gen(function* () {
          const gates = yield* FeatureGateStore
          const sessions = yield* RuntimeSessionStore
          const approvals = yield* ApprovalStore
          const workspaceId = uid("ws-")
          const gate = {
            workspaceId,
            journeyId: uid("j-"),
            versionId: "v1",
            featureKey: "exports.csv",
            startedAt: T,
            createdAt: T
          }
          yield* gates.create({ ...gate, id: uid("gate-"), accountId: "acct_gone" })
          yield* gates.create({ ...gate, id: uid("gate-"), accountId: "acct_kept" })
          assert.strictEqual(yield* gates.eraseAccount(workspaceId, "acct_gone"), 1)
          assert.deepStrictEqual(yield* gates.listByAccount(workspaceId, "acct_gone"), [])
          assert.strictEqual((yield* gates.listByAccount(workspaceId, "acct_kept")).length, 1)

          const ofAccount = session(workspaceId, "acct_gone", "u1")
          const ofUser = session(workspaceId, "acct_kept", "user_gone")
          const kept = session(workspaceId, "acct_kept", "u1")
          for (const s of [ofAccount, ofUser, kept]) assert.isTrue(yield* sessions.create(s))
          assert.strictEqual(yield* sessions.eraseSubject(workspaceId, { kind: "account", id: "acct_gone" }), 1)
          assert.strictEqual(yield* sessions.eraseSubject(workspaceId, { kind: "user", id: "user_gone" }), 1)
          assert.isTrue(Option.isNone(yield* sessions.get(ofAccount.sessionId)))
          assert.isTrue(Option.isNone(yield* sessions.get(ofUser.sessionId)))
          assert.isTrue(Option.isSome(yield* sessions.get(kept.sessionId)))

          const a1 = approval(workspaceId, "acct_gone", "u1")
          const a2 = approval(workspaceId, "acct_kept", "user_gone")
          const a3 = approval(workspaceId, "acct_kept", "u1")
          for (const a of [a1, a2, a3]) assert.isTrue(yield* approvals.create(a))
          assert.strictEqual(yield* approvals.eraseSubject(workspaceId, { kind: "account", id: "acct_gone" }), 1)
          assert.strictEqual(yield* approvals.eraseSubject(workspaceId, { kind: "user", id: "user_gone" }), 1)
          assert.isTrue(Option.isNone(yield* approvals.get(a1.approvalId)))
          assert.isTrue(Option.isNone(yield* approvals.get(a2.approvalId)))
          assert.isTrue(Option.isSome(yield* approvals.get(a3.approvalId)))
        })
      )

      it.effect("an account's actions in flight refuse the redaction, and nothing changes", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const workspaceId = uid("ws-")
          const open = action(workspaceId, "acct_gone", "u1", "dispatching")
          const done = action(workspaceId, "acct_gone", "u1", "verified")
          for (const record of [open, done]) {
            yield* ledger.create({ record, history: { at: T, trigger: "intake", detail: {} } })
          }
          const result = yield* ledger.redactSubject({
            workspaceId,
            subject: { kind: "account", id: "acct_gone" },
            pseudonym: "erased:abc",
            openStates: ["dispatching"]
          })
          assert.deepStrictEqual(result, { _tag: "Open", count: 1 })
          assert.deepStrictEqual(Option.getOrThrow(yield* ledger.get(done.actionRequestId)).request, done.request)
        })
      )

      it.effect("an account's settled actions keep id, state and history; personal fields are removed", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const workspaceId = uid("ws-")
          const mine = action(workspaceId, "acct_gone", "u1", "verified")
          const other = action(workspaceId, "acct_kept", "u1", "verified")
          const intakeKey = {
            claim: {
              workspaceId,
              idempotencyKey: uid("key-"),
              bodyHash: "b".repeat(64),
              actionRequestId: mine.actionRequestId,
              createdAt: T
            },
            liveSince: 0
          }
          yield* ledger.create({ record: mine, history: { at: T, trigger: "intake", detail: {} }, intakeKey })
          yield* ledger.create({ record: other, history: { at: T, trigger: "intake", detail: {} } })
          const subject = { kind: "account" as const, id: "acct_gone" }
          const result = yield* ledger.redactSubject({
            workspaceId,
            subject,
            pseudonym: "erased:abc",
            openStates: ["dispatching"]
          })
          assert.deepStrictEqual(result, { _tag: "Redacted", count: 1 })
          const redacted = Option.getOrThrow(yield* ledger.get(mine.actionRequestId))
          assert.strictEqual(redacted.accountId, "erased:abc")
          assert.strictEqual(redacted.state, "verified")
          assert.strictEqual(redacted.providerIdempotencyKey, mine.providerIdempotencyKey)
          assert.isNull(redacted.sealedContinuation)
          assert.deepStrictEqual(redacted.acknowledgement, mine.acknowledgement)
          assert.deepStrictEqual(redacted.request, redactedRequest(mine.request, subject, "erased:abc"))
          assert.deepStrictEqual((redacted.request as { actor: unknown }).actor, {
            authority: "billing_owner",
            roleKey: "owner",
            subjectId: erasedField
          })
          assert.strictEqual((yield* ledger.history(mine.actionRequestId)).length, 1)
          assert.isTrue(
            Option.isNone(
              yield* ledger.findIntakeKey({ workspaceId, idempotencyKey: intakeKey.claim.idempotencyKey, liveSince: 0 })
            )
          )
          assert.deepStrictEqual(Option.getOrThrow(yield* ledger.get(other.actionRequestId)).request, other.request)
        })
      )

      it.effect("a user's actions keep everything but the actor's subjectId, which becomes the pseudonym", () =>
        Effect.gen(function* () {
          const ledger = yield* ActionLedger
          const workspaceId = uid("ws-")
          const mine = action(workspaceId, "acct_1", "user_gone", "failed")
          yield* ledger.create({ record: mine, history: { at: T, trigger: "intake", detail: {} } })
          const subject = { kind: "user" as const, id: "user_gone" }
          const result = yield* ledger.redactSubject({
            workspaceId,
            subject,
            pseudonym: "erased:u",
            openStates: ["dispatching"]
          })
          assert.deepStrictEqual(result, { _tag: "Redacted", count: 1 })
          const redacted = Option.getOrThrow(yield* ledger.get(mine.actionRequestId))
          assert.strictEqual(redacted.accountId, "acct_1")
          assert.strictEqual(redacted.sealedContinuation, "sealed-continuation")
          assert.deepStrictEqual(redacted.request, redactedRequest(mine.request, subject, "erased:u"))
        })
      )
    })
  })
