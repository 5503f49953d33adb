/**
 * Approvals through core: the request, the review, the fresh preflight, and
 * one test per reason an approval fails closed, each checking that nothing was authorized. Time is
 * the `TestClock`, so expiries are exact. Memory storage (the SQL adapters pass the same port
 * contract; the HTTP and end-to-end suites run on PGlite and PostgreSQL).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { actionStatus } from "../../../core/approval/ActionStatus.ts"
import { authenticate, executeAuthority } from "../../../core/approval/RuntimeSession.ts"
import type { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import { decodeStoredRequest } from "../../../core/connector/Action.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { Revalidation } from "../../../core/connector/Revalidation.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { ApprovalNotifier } from "../../../core/ports/ApprovalNotifier.ts"
import { ApprovalStore } from "../../../core/ports/ApprovalStore.ts"
import { CapabilityRegistry } from "../../../core/ports/CapabilityRegistry.ts"
import { RuntimeSessionStore } from "../../../core/ports/RuntimeSessionStore.ts"
import { Cipher } from "../../../core/protocol/Cipher.ts"
import { publishCatalog } from "../../support/catalog.ts"
import { fixtureActionIds, fixtureCatalog, paymentIntake } from "../../support/deliveries.ts"
import { storageVariants } from "../../support/storage.ts"
import { connect, connectionId, intakeInput } from "../connector/dispatch/support.ts"
import {
  actionsFor,
  approveAs,
  ask,
  denyAs,
  extendTrial,
  layerFor,
  owner,
  prepareAs,
  requester,
  resolveAs,
  session,
  workspaceId
} from "./support.ts"

const memory = storageVariants.find((v) => v.name === "memory")!

const run = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    Effect.zipRight(connect("https://customer.example/connector"), effect),
    layerFor(memory)
  ) as Effect.Effect<A, E>

/** The refusal an effect fails with, as `reason` (approvals and sessions alike). */
const refusal = <A, E extends { readonly reason?: string; readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => e.reason ?? e._tag)

const republish = (change: (doc: CatalogDocument) => CatalogDocument) =>
  publishCatalog(workspaceId, change({ ...fixtureCatalog, publishedVersionId: globalThis.crypto.randomUUID() }))

/** A requested and prepared approval, with its owner. */
const prepared = Effect.gen(function* () {
  const asking = yield* requester()
  const billing = yield* owner()
  const approval = yield* ask(asking)
  const review = yield* prepareAs(billing, approval)
  return { asking, billing, approval, review }
})

describe("approvals", () => {
  it.effect(
    "request, prepare, approve: one action authorized through intake with approval_recorded, acted by the owner",
    () =>
      run(
        Effect.gen(function* () {
          const asking = yield* requester()
          const billing = yield* owner()
          const approval = yield* ask(asking)
          assert.strictEqual(approval.state, "pending")
          assert.strictEqual(yield* actionsFor(), 0, "a request authorizes nothing")
          const review = yield* prepareAs(billing, approval)
          assert.strictEqual(review.revision, 1)
          assert.match(review.projectionHash, /^[0-9a-f]{64}$/)
          assert.deepStrictEqual(review.reviewProjection.action, {
            key: "extend_trial_14",
            label: "Extend trial",
            confirmation: "Extend your trial by 14 days?"
          })
          assert.deepStrictEqual(review.reviewProjection.offer, {
            offerId: intakeInput().binding.offerId,
            label: "Extend trial",
            priceDisplay: "49.00 USD"
          })
          assert.deepStrictEqual(review.reviewProjection.requester, { roleKey: "viewer" })
          assert.strictEqual(review.reviewProjection.approvalExpiresAt, "1970-01-02T00:00:00.000Z")
          assert.strictEqual(review.reviewValidUntil, "1970-01-01T00:10:00.000Z")
          const text = JSON.stringify(review)
          assert.notInclude(text, approval.approvalToken, "never the approval token")
          assert.notInclude(text, "trialRef", "never a mutation payload")
          assert.deepStrictEqual(
            review.reviewProjection.operation,
            { family: "extend_trial", extensionDays: 14, target: "subscription sub_1 (version 3)" },
            "what will run: the catalog's days and the session's trial"
          )

          const approved = yield* approveAs(billing, approval, review)
          assert.strictEqual(approved.state, "approved")
          assert.strictEqual(yield* actionsFor(), 1)
          const ledger = yield* ActionLedger
          const record = Option.getOrThrow(yield* ledger.get(approved.actionRequestId))
          const stored = yield* decodeStoredRequest(record)
          assert.deepStrictEqual(stored.authorizedBy, { kind: "runtime_session", id: billing.sessionId })
          assert.deepStrictEqual(stored.actor, {
            authority: executeAuthority,
            roleKey: "billing_owner",
            subjectId: "user_owner"
          })
          const [first] = yield* ledger.history(approved.actionRequestId)
          assert.strictEqual(first!.trigger, "approval_recorded")
          assert.deepInclude(first!.detail as object, { approvalId: approval.approvalId, approvalRevision: 1 })
          const kept = Option.getOrThrow(yield* (yield* ApprovalStore).get(approval.approvalId))
          assert.strictEqual(kept.state, "approved")
          assert.strictEqual(kept.actionRequestId, approved.actionRequestId)
          assert.deepStrictEqual(
            kept.requester,
            { sessionId: asking.sessionId, subject: "user_viewer", role: "viewer" },
            "requester provenance"
          )
        })
      )
  )

  it.effect(
    "revoking the approving session withdraws its authority before delivery (authority_revoked); its expiry does not",
    () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          const { actionRequestId } = yield* approveAs(billing, approval, review)
          const record = Option.getOrThrow(yield* (yield* ActionLedger).get(actionRequestId))
          const request = yield* decodeStoredRequest(record)
          const check = (now: number) =>
            Effect.flatMap(Revalidation, (r) => r.check({ workspaceId, request, now, stored: record }))
          yield* TestClock.adjust("1 hour")
          yield* check(3_600_000)
          assert.isTrue(yield* (yield* RuntimeSessionStore).revoke(workspaceId, billing.sessionId, 3_600_000))
          const refused = yield* Effect.flip(check(3_600_000))
          assert.strictEqual(refused._tag === "RevalidationFailed" ? refused.reason : refused._tag, "authority_revoked")
        })
      )
  )

  it.effect("the approval token is collected once", () =>
    run(
      Effect.gen(function* () {
        const approval = yield* ask(yield* requester())
        assert.isTrue(Option.isNone(yield* (yield* ApprovalNotifier).collect(approval.approvalId)))
      })
    )
  )

  it.effect("a request whose action the catalog does not allow is refused and stores nothing", () =>
    run(
      Effect.gen(function* () {
        const body = extendTrial()
        const reason = yield* refusal(
          ask(yield* requester(), { ...body, action: { ...body.action, key: "not_the_key" } })
        )
        assert.strictEqual(reason, "action_key_mismatch")
      })
    )
  )

  describe("fails closed before authorization", () => {
    it.effect("changed terms: the catalog was republished with another price", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          yield* republish((doc) => ({
            ...doc,
            offers: doc.offers.map((o) => ({ ...o, price: { amountMinor: 9900, currency: "usd" } }))
          }))
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_terms_changed")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("stale dependency: the catalog was republished with the same terms", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          yield* republish((doc) => doc)
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_dependency_stale")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("revision drift: the approval was prepared again since", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          const again = yield* prepareAs(billing, approval)
          assert.strictEqual(again.revision, review.revision + 1)
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_revision_drift")
          assert.strictEqual(yield* actionsFor(), 0)
          assert.strictEqual((yield* approveAs(billing, approval, again)).state, "approved")
        })
      )
    )

    it.effect("wrong account: a billing owner of another account can neither prepare nor resolve", () =>
      run(
        Effect.gen(function* () {
          const { approval, review } = yield* prepared
          const stranger = yield* owner("acct_other")
          assert.strictEqual(yield* refusal(prepareAs(stranger, approval)), "approval_account_mismatch")
          assert.strictEqual(yield* refusal(approveAs(stranger, approval, review)), "approval_account_mismatch")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("expired session", () =>
      run(
        Effect.gen(function* () {
          const approval = yield* ask(yield* requester())
          const shortLived = yield* session({ authorities: [executeAuthority], expiresInSeconds: 60 })
          const review = yield* prepareAs(shortLived, approval)
          yield* TestClock.adjust("61 seconds")
          assert.strictEqual(yield* refusal(approveAs(shortLived, approval, review)), "runtime_session_expired")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("revoked session", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          assert.isTrue(yield* (yield* RuntimeSessionStore).revoke(workspaceId, billing.sessionId, 1))
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "runtime_session_revoked")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("a session without funnels.actions.execute (the requester's own)", () =>
      run(
        Effect.gen(function* () {
          const { approval, asking, review } = yield* prepared
          assert.strictEqual(yield* refusal(prepareAs(asking, approval)), "runtime_authority_missing")
          assert.strictEqual(yield* refusal(approveAs(asking, approval, review)), "runtime_authority_missing")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("a session without funnels.actions.request cannot ask", () =>
      run(
        Effect.gen(function* () {
          assert.strictEqual(yield* refusal(ask(yield* owner())), "runtime_authority_missing")
        })
      )
    )

    it.effect("expired capability for a Payment action", () =>
      run(
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          yield* registry.record({
            connectionId,
            revision: 0,
            modes: ["one_time_purchase"],
            livemode: false,
            connectedAccountReferenceHash: "a".repeat(64),
            responseFingerprint: "fp-1",
            providerConnectionGeneration: "gen-1",
            recordedAt: 0,
            expiresAt: 5 * 60_000
          })
          const base = intakeInput()
          const family = "payment.one_time_purchase"
          const paymentActionId = fixtureActionIds[family]!
          const body = {
            binding: base.binding,
            action: { ...base.action, id: paymentActionId, key: "pay_one_time_purchase", operation: { family } }
          }
          const billing = yield* owner()
          const approval = yield* ask(yield* requester(), body)
          const review = yield* prepareAs(billing, approval)
          yield* TestClock.adjust("6 minutes")
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_capability_expired")
          assert.strictEqual(yield* refusal(prepareAs(billing, approval)), "approval_capability_expired")
          assert.strictEqual(yield* actionsFor("acct_42", paymentActionId), 0)
        })
      )
    )

    it.effect("hash mismatch", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          const wrong = review.projectionHash.replace(/^./, (c) => (c === "0" ? "1" : "0"))
          assert.strictEqual(
            yield* refusal(approveAs(billing, approval, { ...review, projectionHash: wrong })),
            "approval_hash_mismatch"
          )
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("reviewValidUntil passed", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          yield* TestClock.adjust("10 minutes")
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_review_expired")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("approval expiry passed", () =>
      run(
        Effect.gen(function* () {
          const billing = yield* owner()
          const approval = yield* ask(yield* requester(), { ...extendTrial(), expiresInSeconds: 300 })
          const review = yield* prepareAs(billing, approval)
          assert.strictEqual(
            review.reviewValidUntil,
            "1970-01-01T00:05:00.000Z",
            "a review never outlives its approval"
          )
          yield* TestClock.adjust("300 seconds")
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_expired")
          assert.strictEqual(yield* refusal(prepareAs(billing, approval)), "approval_expired")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("a second resolve of the same approval", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          yield* approveAs(billing, approval, review)
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_already_resolved")
          assert.strictEqual(yield* refusal(denyAs(billing, approval)), "approval_already_resolved")
          assert.strictEqual(yield* refusal(prepareAs(billing, approval)), "approval_already_resolved")
          assert.strictEqual(yield* actionsFor(), 1)
        })
      )
    )

    it.effect("an unknown approval and a wrong approval token look alike", () =>
      run(
        Effect.gen(function* () {
          const { approval, billing, review } = yield* prepared
          const unknown = { approvalId: globalThis.crypto.randomUUID(), approvalToken: approval.approvalToken }
          const wrongToken = { approvalId: approval.approvalId, approvalToken: `acc_apt_${"A".repeat(43)}` }
          const malformed = { approvalId: approval.approvalId, approvalToken: "x" }
          for (const target of [unknown, wrongToken, malformed]) {
            const error = yield* Effect.flip(approveAs(billing, target, review))
            assert.strictEqual(
              error._tag === "ApprovalRefused" ? error.detail : "",
              "no such approval, or the approval token does not match"
            )
          }
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect(
      "an intake refusal at resolve releases the claim and voids the review (frequency used up meanwhile)",
      () =>
        run(
          Effect.gen(function* () {
            yield* republish((doc) => ({
              ...doc,
              publishedVersionId: "6b8dae2f-4a5c-4e7f-9b9d-1c3e5f7a9b1d",
              actions: doc.actions.map((a) =>
                a.family === "extend_trial" ? { ...a, frequency: { limit: 1, windowSeconds: 86_400 } } : a
              ) as unknown as CatalogDocument["actions"]
            }))
            const body = extendTrial()
            const bound = {
              ...body,
              binding: { ...body.binding, publishedVersionId: "6b8dae2f-4a5c-4e7f-9b9d-1c3e5f7a9b1d" }
            }
            const billing = yield* owner()
            const approval = yield* ask(yield* requester(), bound)
            const review = yield* prepareAs(billing, approval)
            // Meanwhile a trusted server caller takes the one allowed action.
            yield* intake(workspaceId, { ...intakeInput(), binding: bound.binding })
            assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "frequency_exceeded")
            const kept = Option.getOrThrow(yield* (yield* ApprovalStore).get(approval.approvalId))
            assert.strictEqual(kept.state, "pending")
            assert.strictEqual(kept.revision, review.revision + 1)
            assert.isNull(kept.prepared)
            assert.strictEqual(yield* actionsFor(), 1, "only the server caller's action")
          })
        )
    )
  })

  it.effect("denial never authorizes, and nothing resolves a denied approval", () =>
    run(
      Effect.gen(function* () {
        const { approval, billing, review } = yield* prepared
        assert.deepStrictEqual(yield* denyAs(billing, approval), { approvalId: approval.approvalId, state: "denied" })
        assert.strictEqual(yield* actionsFor(), 0)
        assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_already_resolved")
        assert.strictEqual(yield* actionsFor(), 0)
      })
    )
  )

  it.effect("deny without a prepare is allowed; a deny at another revision is drift", () =>
    run(
      Effect.gen(function* () {
        const billing = yield* owner()
        const approval = yield* ask(yield* requester())
        const drift = yield* refusal(
          resolveAs(billing, { ...approval, runtimeToken: billing.token, decision: "deny", revision: 3 })
        )
        assert.strictEqual(drift, "approval_revision_drift")
        assert.strictEqual((yield* denyAs(billing, approval)).state, "denied")
      })
    )
  )

  describe("the actor-bound action status", () => {
    /** An action of the owner's account and actor, stored as the dispatcher leaves it, with a sealed continuation. */
    const storedAction = (options: {
      readonly state: string
      readonly payment: boolean
      readonly expiresInMinutes: number
    }) =>
      Effect.gen(function* () {
        const id = globalThis.crypto.randomUUID()
        const base = options.payment ? paymentIntake("one_time_purchase") : intakeInput()
        const continuation = {
          kind: "provider_payment_element",
          intent: "payment",
          clientSecret: "pi_123_secret_456",
          publishableKey: "pk_test_123",
          connectedAccountId: null,
          expiresAt: new Date(options.expiresInMinutes * 60_000).toISOString(),
          allowRedirects: "never"
        }
        const sealed = yield* (yield* Cipher).seal(JSON.stringify(continuation), `continuation:${id}`)
        yield* (yield* ActionLedger).create({
          record: {
            actionRequestId: id,
            workspaceId,
            accountId: "acct_42",
            connectionId,
            revision: 0,
            providerIdempotencyKey: `pva_${id}`,
            state: options.state,
            request: {
              ...base,
              actor: { authority: executeAuthority, roleKey: "billing_owner", subjectId: "user_owner" },
              authorizedBy: { kind: "api_key", id: "k1" }
            },
            acknowledgement: null,
            sealedContinuation: sealed,
            createdAt: 0
          },
          history: { at: 0, trigger: "intake", detail: {} }
        })
        return { id, continuation }
      })

    it.effect(
      "the continuation of an accepted Payment action is served, opened from its sealed form, until it expires",
      () =>
        run(
          Effect.gen(function* () {
            const billing = yield* owner()
            const { continuation, id } = yield* storedAction({ state: "accepted", payment: true, expiresInMinutes: 10 })
            const as = () =>
              Effect.map(
                Effect.flatMap(authenticate(billing.token, undefined), (s) => actionStatus(s, id)),
                Option.map((read) => read.status)
              )
            assert.deepStrictEqual(Option.getOrThrow(yield* as()), {
              actionRequestId: id,
              state: "accepted",
              mayAdvance: false,
              continuation
            } as never)
            yield* TestClock.adjust("10 minutes")
            assert.deepStrictEqual(
              Option.getOrThrow(yield* as()),
              { actionRequestId: id, state: "accepted", mayAdvance: false },
              "never once expired"
            )
          })
        )
    )

    it.effect("no continuation for an action that is not accepted, or not a Payment action", () =>
      run(
        Effect.gen(function* () {
          const billing = yield* owner()
          for (const [state, payment] of [
            ["pending", true],
            ["verified", true],
            ["accepted", false]
          ] as const) {
            const { id } = yield* storedAction({ state, payment, expiresInMinutes: 30 })
            const seen = Option.getOrThrow(
              yield* Effect.flatMap(authenticate(billing.token, undefined), (s) => actionStatus(s, id))
            )
            assert.deepStrictEqual(seen.status, { actionRequestId: id, state, mayAdvance: state === "verified" })
            assert.strictEqual(seen.pollAfterSeconds === undefined, state === "verified", "no poll hint once final")
          }
        })
      )
    )

    it.effect("the owner sees state and mayAdvance; the requester, another account and an unknown id see nothing", () =>
      run(
        Effect.gen(function* () {
          const { approval, asking, billing, review } = yield* prepared
          const { actionRequestId } = yield* approveAs(billing, approval, review)
          const as = (token: string) =>
            Effect.flatMap(authenticate(token, undefined), (s) => actionStatus(s, actionRequestId))
          const seen = Option.getOrThrow(yield* as(billing.token))
          assert.deepStrictEqual(seen.status, { actionRequestId, state: "dispatching", mayAdvance: false })
          assert.isTrue(Option.isNone(yield* as(asking.token)), "another actor")
          assert.isTrue(Option.isNone(yield* as((yield* owner("acct_other")).token)), "another account")
          const unknown = yield* Effect.flatMap(authenticate(billing.token, undefined), (s) =>
            actionStatus(s, globalThis.crypto.randomUUID())
          )
          assert.isTrue(Option.isNone(unknown))
          const malformed = yield* Effect.flatMap(authenticate(billing.token, undefined), (s) =>
            actionStatus(s, "not-a-uuid")
          )
          assert.isTrue(Option.isNone(malformed))
        })
      )
    )
  })
})
