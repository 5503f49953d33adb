/**
 * Approvals bind what runs: the operation and safe terms are the catalog's, the account's trial is
 * the one the host's server named for the session, the review shows them, and a republish that
 * changes them fails closed. Separation of duties: the requester never reviews or resolves its own
 * request, a review is approved only by the session that prepared it, and revoking the requester
 * cancels its pending approvals. One test per refusal, each checking nothing was authorized.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ApprovalRequestBody } from "../../../core/approval/Approvals.ts"
import { executeAuthority, requestAuthority, revoke } from "../../../core/approval/RuntimeSession.ts"
import { decodeStoredRequest } from "../../../core/connector/Action.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { ApprovalStore } from "../../../core/ports/ApprovalStore.ts"
import { RuntimeSessionStore } from "../../../core/ports/RuntimeSessionStore.ts"
import type { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import { publishCatalog } from "../../support/catalog.ts"
import { fixtureCatalog, fixtureTrialRef } from "../../support/deliveries.ts"
import { storageVariants } from "../../support/storage.ts"
import { connect } from "../connector/dispatch/support.ts"
import {
  actionsFor,
  approveAs,
  ask,
  extendTrial,
  layerFor,
  owner,
  prepareAs,
  requester,
  session,
  workspaceId
} from "./support.ts"

const memory = storageVariants.find((v) => v.name === "memory")!

const run = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    Effect.zipRight(connect("https://customer.example/connector"), effect),
    layerFor(memory)
  ) as Effect.Effect<A, E>

const refusal = <A, E extends { readonly reason?: string; readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => e.reason ?? e._tag)

type CatalogAction = CatalogDocument["actions"][number]

/** Republishes the fixture catalog (a new version) with the extend-trial action changed. */
const republishTrial = (change: (action: CatalogAction) => CatalogAction) =>
  publishCatalog(workspaceId, {
    ...fixtureCatalog,
    publishedVersionId: globalThis.crypto.randomUUID(),
    actions: fixtureCatalog.actions.map((a) =>
      a.family === "extend_trial" ? change(a) : a
    ) as unknown as CatalogDocument["actions"]
  })

describe("what runs is the catalog's", () => {
  it("a request naming an operation, safe terms or anything else beside the catalog action is not a request", () => {
    const { action, binding } = extendTrial()
    const decode = Schema.decodeUnknownEither(ApprovalRequestBody)
    assert.isTrue(Either.isRight(decode({ action, binding })))
    for (const extra of [
      { operation: { family: "extend_trial", extensionDays: 365, trialRef: fixtureTrialRef } },
      { safeTerms: { label: "Extend trial", confirmation: "Extend your trial by 1 day?" } }
    ]) {
      assert.isTrue(Either.isLeft(decode({ action: { ...action, ...extra }, binding })), Object.keys(extra)[0])
    }
    assert.isTrue(Either.isLeft(decode({ action, binding, accountId: "acct_other" })), "accountId")
  })

  it.effect("the stored action is the catalog's terms and days with the session's trial; it executes as reviewed", () =>
    run(
      Effect.gen(function* () {
        const asking = yield* session({
          authorities: [requestAuthority],
          subject: "user_viewer",
          role: "viewer",
          trialRef: { entityKey: "sub_mine", entityKind: "subscription", version: 7 }
        })
        const billing = yield* owner()
        const approval = yield* ask(asking)
        const review = yield* prepareAs(billing, approval)
        assert.deepStrictEqual(review.reviewProjection.operation, {
          family: "extend_trial",
          extensionDays: 14,
          target: "subscription sub_mine (version 7)"
        })
        const approved = yield* approveAs(billing, approval, review)
        const record = Option.getOrThrow(yield* (yield* ActionLedger).get(approved.actionRequestId))
        const stored = yield* decodeStoredRequest(record)
        assert.deepStrictEqual(stored.action.operation, {
          family: "extend_trial",
          extensionDays: 14,
          trialRef: { entityKey: "sub_mine", entityKind: "subscription", version: 7 }
        })
        assert.deepStrictEqual(stored.action.safeTerms, {
          label: "Extend trial",
          confirmation: "Extend your trial by 14 days?"
        })
      })
    )
  )

  it.effect("a session the host's server issued without a trialRef cannot ask for an extend-trial action", () =>
    run(
      Effect.gen(function* () {
        const asking = yield* session({ authorities: [requestAuthority], subject: "user_viewer", role: "viewer" })
        assert.strictEqual(yield* refusal(ask(asking)), "approval_action_not_requestable")
        assert.strictEqual(yield* actionsFor(), 0)
      })
    )
  )

  it.effect("a catalog action without safe terms cannot be asked for from the runtime", () =>
    run(
      Effect.gen(function* () {
        yield* republishTrial(({ safeTerms: _, ...rest }) => rest)
        assert.strictEqual(yield* refusal(ask(yield* requester())), "approval_action_not_requestable")
      })
    )
  )

  describe("a republish that changes the terms fails closed (approval_terms_changed)", () => {
    it.effect("other days, at prepare", () =>
      run(
        Effect.gen(function* () {
          const approval = yield* ask(yield* requester())
          yield* republishTrial((a) => ({ ...a, operation: { extensionDays: 30 } }))
          assert.strictEqual(yield* refusal(prepareAs(yield* owner(), approval)), "approval_terms_changed")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )

    it.effect("another confirmation, at resolve", () =>
      run(
        Effect.gen(function* () {
          const billing = yield* owner()
          const approval = yield* ask(yield* requester())
          const review = yield* prepareAs(billing, approval)
          yield* republishTrial((a) => ({
            ...a,
            safeTerms: { label: "Extend trial", confirmation: "Extend your trial by 1 day?" }
          }))
          assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_terms_changed")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
    )
  })
})

describe("separation of duties", () => {
  it.effect(
    "the requesting session, holding both authorities, can neither prepare nor resolve (approval_self_approval)",
    () =>
      run(
        Effect.gen(function* () {
          const both = yield* session({
            authorities: [requestAuthority, executeAuthority],
            subject: "user_both",
            trialRef: fixtureTrialRef
          })
          const approval = yield* ask(both)
          assert.strictEqual(yield* refusal(prepareAs(both, approval)), "approval_self_approval")
          const review = yield* prepareAs(yield* owner(), approval)
          assert.strictEqual(yield* refusal(approveAs(both, approval, review)), "approval_self_approval")
          assert.strictEqual(yield* actionsFor(), 0)
        })
      )
  )

  it.effect("another session of the requester's subject cannot resolve (approval_self_approval)", () =>
    run(
      Effect.gen(function* () {
        const approval = yield* ask(yield* requester())
        const sameSubject = yield* session({ authorities: [executeAuthority], subject: "user_viewer" })
        const review = yield* prepareAs(yield* owner(), approval)
        assert.strictEqual(yield* refusal(approveAs(sameSubject, approval, review)), "approval_self_approval")
        assert.strictEqual(yield* actionsFor(), 0)
      })
    )
  )

  it.effect("a review is bound to the session that prepared it: another owner session must prepare again", () =>
    run(
      Effect.gen(function* () {
        const approval = yield* ask(yield* requester())
        const first = yield* owner()
        const review = yield* prepareAs(first, approval)
        assert.isTrue(yield* (yield* RuntimeSessionStore).revoke(workspaceId, first.sessionId, 1))
        const second = yield* owner()
        assert.strictEqual(yield* refusal(approveAs(second, approval, review)), "approval_not_prepared")
        assert.strictEqual(yield* actionsFor(), 0)
        const own = yield* prepareAs(second, approval)
        assert.strictEqual((yield* approveAs(second, approval, own)).state, "approved")
      })
    )
  )

  it.effect("revoking the requester's session cancels its pending approvals (approval_cancelled)", () =>
    run(
      Effect.gen(function* () {
        const asking = yield* requester()
        const billing = yield* owner()
        const approval = yield* ask(asking)
        const review = yield* prepareAs(billing, approval)
        const other = yield* ask(yield* requester())
        assert.isTrue(yield* revoke(workspaceId, asking.sessionId))
        const store = yield* ApprovalStore
        assert.strictEqual(Option.getOrThrow(yield* store.get(approval.approvalId)).state, "cancelled")
        assert.strictEqual(
          Option.getOrThrow(yield* store.get(other.approvalId)).state,
          "pending",
          "another requester's"
        )
        assert.strictEqual(yield* refusal(approveAs(billing, approval, review)), "approval_cancelled")
        assert.strictEqual(yield* refusal(prepareAs(billing, approval)), "approval_cancelled")
        assert.strictEqual(yield* actionsFor(), 0)
      })
    )
  )

  it.effect("a request whose requester was revoked without the cancel (a race) is cancelled at its next step", () =>
    run(
      Effect.gen(function* () {
        const asking = yield* requester()
        const approval = yield* ask(asking)
        assert.isTrue(yield* (yield* RuntimeSessionStore).revoke(workspaceId, asking.sessionId, 1))
        assert.strictEqual(yield* refusal(prepareAs(yield* owner(), approval)), "approval_cancelled")
        const kept = Option.getOrThrow(yield* (yield* ApprovalStore).get(approval.approvalId))
        assert.strictEqual(kept.state, "cancelled")
      })
    )
  )
})
