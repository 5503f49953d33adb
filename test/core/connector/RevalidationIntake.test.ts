/**
 * Revalidation at intake, on memory, PGlite and PostgreSQL: one test per
 * reason of `revalidationReasons` an intake can meet. Each refusal is a `RevalidationFailed` whose
 * problem (`ErrorMap.toProblem`, the one map the HTTP edge uses) has the reason's status and names
 * the field in `errors[0].path`, and nothing is stored: no action, no dispatch outbox item.
 *
 * Each test has a workspace of its own with an active connection and the fixture catalog
 * (`dispatch/support.ts` `connect`); a test that needs another catalog publishes it as the next
 * version and binds the intake to it.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { revalidationStatus, toProblem } from "../../../adapters/http/ErrorMap.ts"
import type { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import { type ActionIntake, dispatchOutboxKind, type Authority } from "../../../core/connector/Action.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { revalidationReasons, type RevalidationReason } from "../../../core/connector/Revalidation.ts"
import { AccountProfileStore } from "../../../core/ports/AccountProfileStore.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { ConnectionStore } from "../../../core/ports/ConnectionStore.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import { connectorSecretRef, SecretVault } from "../../../core/ports/SecretVault.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { publishCatalog } from "../../support/catalog.ts"
import { fixtureActionIds, fixtureCatalog, intakeInput, paymentIntake } from "../../support/deliveries.ts"
import { storageVariants, uid } from "../../support/storage.ts"
import { connect, secrets } from "./dispatch/support.ts"

type Json = Record<string, any>

/** A workspace of its own with an active connection and the fixture catalog published (version 1). */
const freshWorkspace = Effect.suspend(() => {
  const as = { workspaceId: uid(), connectionId: uid(), secrets }
  return Effect.as(connect("http://127.0.0.1:1/connector", as), as.workspaceId)
})

/** A workspace with an active connection and no catalog at all. */
const workspaceWithoutCatalog = Effect.gen(function* () {
  const workspaceId = uid()
  const connectionId = uid()
  const store = yield* ConnectionStore
  const vault = yield* SecretVault
  const now = Date.now()
  const { revision } = yield* store.registerRevision({
    workspaceId,
    connectionId,
    endpoint: "http://127.0.0.1:1/connector",
    now
  })
  yield* vault.put(connectorSecretRef(connectionId, revision, "actionSigning"), secrets.actionSigning, now)
  yield* vault.put(connectorSecretRef(connectionId, revision, "completion"), secrets.completion, now)
  yield* store.activate({ connectionId, revision, now })
  return workspaceId
})

/** Publishes the fixture catalog changed by `change` as the workspace's next version; its publishedVersionId. */
const publishChanged = (workspaceId: string, change: (document: Json) => void) => {
  const document = JSON.parse(JSON.stringify(fixtureCatalog)) as Json
  document.publishedVersionId = uid()
  change(document)
  return publishCatalog(workspaceId, document as CatalogDocument)
}

/** `input` bound to another published version. */
const boundTo = (input: ActionIntake, publishedVersionId: string): ActionIntake => ({
  ...input,
  binding: { ...input.binding, publishedVersionId }
})

const trialId = fixtureActionIds["extend_trial"]!
const decisionOf = (document: Json): Json => document.decisions[0]

/** Nothing is stored for the refused account: no action, no dispatch item. */
const assertNothingStored = (workspaceId: string, input: ActionIntake) =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    assert.strictEqual(
      yield* ledger.countForFrequency({ workspaceId, accountId: input.accountId, actionId: input.action.id, since: 0 }),
      0,
      "no action stored"
    )
    // Every dispatch item due by tomorrow (leased for 1 ms only, so other tests are not held up).
    const items = yield* (yield* Outbox).lease({
      owner: uid(),
      now: Date.now() + 86_400_000,
      leaseMillis: 1,
      limit: 10_000,
      kinds: [dispatchOutboxKind]
    })
    for (const item of items) {
      const record = yield* ledger.get((item.payload as { readonly actionRequestId: string }).actionRequestId)
      const mine =
        Option.isSome(record) && record.value.workspaceId === workspaceId && record.value.accountId === input.accountId
      assert.isFalse(mine, "no dispatch item for the account")
    }
  })

/** Intake is refused for `reason`: its status, the field named, nothing stored. */
const assertRefused = (
  workspaceId: string,
  input: ActionIntake,
  reason: RevalidationReason,
  options: { readonly authorizedBy?: Authority } = {}
) =>
  Effect.gen(function* () {
    const result = yield* Effect.either(intake(workspaceId, input, options))
    assert.isTrue(Either.isLeft(result), `intake must be refused with ${reason}`)
    const error = (result as Either.Left<any, unknown>).left
    assert.strictEqual(error._tag, "RevalidationFailed")
    assert.strictEqual(error.reason, reason)
    const problem = toProblem(error)
    assert.strictEqual(problem.status, revalidationStatus[reason])
    assert.strictEqual(problem.code, reason)
    assert.strictEqual(problem.errors?.[0]?.path, revalidationReasons[reason].path)
    yield* assertNothingStored(workspaceId, input)
  })

/** Intake takes it (the positive control of a refusal). */
const assertTaken = (workspaceId: string, input: ActionIntake, options: { readonly authorizedBy?: Authority } = {}) =>
  Effect.map(intake(workspaceId, input, options), (answer) => {
    assert.strictEqual(answer.state, "dispatching")
    return answer.actionRequestId
  })

for (const variant of storageVariants) {
  describe.skipIf(!variant.available)(`revalidation at intake (${variant.name})`, () => {
    layer(Layer.mergeAll(Layer.suspend(variant.layer), NodeCrypto.layer), {
      excludeTestServices: true,
      timeout: "60 seconds"
    })((it) => {
      it.effect("the fixture catalog takes the example intake (control)", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          yield* assertTaken(workspaceId, intakeInput(uid("acct_")))
        })
      )

      it.effect("catalog_not_published (409): the workspace has no catalog", () =>
        Effect.gen(function* () {
          const workspaceId = yield* workspaceWithoutCatalog
          yield* assertRefused(workspaceId, intakeInput(uid("acct_")), "catalog_not_published")
        })
      )

      it.effect("published_version_unknown (422): the binding names no published version", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          yield* assertRefused(workspaceId, boundTo(intakeInput(uid("acct_")), uid()), "published_version_unknown")
        })
      )

      it.effect("published_version_not_current (409): bound to version 1 after version 2 was published", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const second = yield* publishChanged(workspaceId, () => undefined)
          yield* assertRefused(workspaceId, intakeInput(uid("acct_")), "published_version_not_current")
          yield* assertTaken(workspaceId, boundTo(intakeInput(uid("acct_")), second))
        })
      )

      it.effect("decision_unknown (422)", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = intakeInput(uid("acct_"))
          yield* assertRefused(
            workspaceId,
            { ...input, binding: { ...input.binding, decisionId: uid() } },
            "decision_unknown"
          )
        })
      )

      it.effect("journey_mismatch (422): the decision belongs to another journey", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = intakeInput(uid("acct_"))
          yield* assertRefused(
            workspaceId,
            { ...input, binding: { ...input.binding, journeyId: uid() } },
            "journey_mismatch"
          )
        })
      )

      it.effect("decision_expired (409): the decision's validUntil has passed", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const expired = yield* publishChanged(workspaceId, (d) => {
            decisionOf(d).validUntil = formatTimestamp(Date.now() - 1_000)
          })
          yield* assertRefused(workspaceId, boundTo(intakeInput(uid("acct_")), expired), "decision_expired")
          const valid = yield* publishChanged(workspaceId, (d) => {
            decisionOf(d).validUntil = formatTimestamp(Date.now() + 3_600_000)
          })
          yield* assertTaken(workspaceId, boundTo(intakeInput(uid("acct_")), valid))
        })
      )

      it.effect("action_unknown (422): action.id names no catalog action", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = intakeInput(uid("acct_"))
          yield* assertRefused(workspaceId, { ...input, action: { ...input.action, id: uid() } }, "action_unknown")
        })
      )

      it.effect("action_key_mismatch (422): action.key is not the catalog action's key", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = intakeInput(uid("acct_"))
          yield* assertRefused(
            workspaceId,
            { ...input, action: { ...input.action, key: "extend_trial_30" } },
            "action_key_mismatch"
          )
        })
      )

      it.effect("operation_family_mismatch (422): an unknown family (refund_everything) on the trial action", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = intakeInput(uid("acct_"))
          const operation = {
            ...input.action.operation,
            family: "refund_everything"
          } as ActionIntake["action"]["operation"]
          yield* assertRefused(
            workspaceId,
            { ...input, action: { ...input.action, operation } },
            "operation_family_mismatch"
          )
        })
      )

      it.effect(
        "operation_family_mismatch (422): an unknown family carrying a payment snapshot is refused, not guessed",
        () =>
          Effect.gen(function* () {
            const workspaceId = yield* freshWorkspace
            const payment = paymentIntake("one_time_purchase", uid("acct_"))
            const operation = { family: "refund_everything" } as ActionIntake["action"]["operation"]
            yield* assertRefused(
              workspaceId,
              { ...payment, action: { ...payment.action, operation } },
              "operation_family_mismatch"
            )
          })
      )

      it.effect("operation_family_mismatch (422): a Payment family on the trial action", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const payment = paymentIntake("one_time_purchase", uid("acct_"))
          // The one-time purchase request, but naming the trial action (id and key).
          const input = { ...payment, action: { ...payment.action, id: trialId, key: "extend_trial_14" } }
          yield* assertRefused(workspaceId, input, "operation_family_mismatch")
        })
      )

      it.effect("transition_not_allowed (422): the decision does not lead to this catalog action", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const version = yield* publishChanged(workspaceId, (d) => {
            decisionOf(d).actionIds = decisionOf(d).actionIds.filter((id: string) => id !== trialId)
          })
          yield* assertRefused(workspaceId, boundTo(intakeInput(uid("acct_")), version), "transition_not_allowed")
        })
      )

      it.effect("offer_unknown (422): binding.offerId names no offer", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = intakeInput(uid("acct_"))
          yield* assertRefused(
            workspaceId,
            { ...input, binding: { ...input.binding, offerId: uid() } },
            "offer_unknown"
          )
        })
      )

      it.effect("offer_not_offered (422): an offer of the catalog the decision does not present", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const otherOffer = uid()
          const version = yield* publishChanged(workspaceId, (d) => {
            d.offers.push({ offerId: otherOffer, offerVersionId: uid(), price: null })
          })
          const input = boundTo(intakeInput(uid("acct_")), version)
          yield* assertRefused(
            workspaceId,
            { ...input, binding: { ...input.binding, offerId: otherOffer } },
            "offer_not_offered"
          )
        })
      )

      it.effect("offer_not_offered (422): an offer the decision presents, but not the Payment action's own", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const otherOffer = uid()
          const version = yield* publishChanged(workspaceId, (d) => {
            d.offers.push({ offerId: otherOffer, offerVersionId: uid(), price: { amountMinor: 100, currency: "usd" } })
            decisionOf(d).offerIds.push(otherOffer)
          })
          const input = boundTo(paymentIntake("one_time_purchase", uid("acct_")), version)
          yield* assertRefused(
            workspaceId,
            { ...input, binding: { ...input.binding, offerId: otherOffer } },
            "offer_not_offered"
          )
        })
      )

      it.effect("action_version_changed (409): the Payment snapshot names another action version", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = paymentIntake("one_time_purchase", uid("acct_"))
          yield* assertRefused(
            workspaceId,
            { ...input, payment: { ...input.payment!, actionVersionId: uid() } },
            "action_version_changed"
          )
        })
      )

      it.effect("offer_version_changed (409): the Payment snapshot names another offer version", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const input = paymentIntake("one_time_purchase", uid("acct_"))
          yield* assertRefused(
            workspaceId,
            { ...input, payment: { ...input.payment!, offerVersionId: uid() } },
            "offer_version_changed"
          )
        })
      )

      it.effect("offer_price_changed (409): another amount, or another currency, than the offer's exact price", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          for (const change of [{ amountMinor: 4901 }, { currency: "eur" }]) {
            const input = paymentIntake("one_time_purchase", uid("acct_"))
            const payment = { ...input.payment!, expected: { ...input.payment!.expected!, ...change } }
            yield* assertRefused(workspaceId, { ...input, payment }, "offer_price_changed")
          }
        })
      )

      it.effect("account_state_not_eligible (409): the account's account_status is another, or missing", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const version = yield* publishChanged(workspaceId, (d) => {
            decisionOf(d).accountStatuses = ["trialing"]
          })
          const profiles = yield* AccountProfileStore
          const setStatus = (accountId: string, value: string) =>
            profiles.applyFacts(workspaceId, accountId, [
              { name: "account_status", value, observedAt: Date.now(), sourceEventId: uid() }
            ])
          const canceled = uid("acct_")
          yield* setStatus(canceled, "canceled")
          yield* assertRefused(workspaceId, boundTo(intakeInput(canceled), version), "account_state_not_eligible")
          // No profile at all, and a profile without the fact.
          yield* assertRefused(workspaceId, boundTo(intakeInput(uid("acct_")), version), "account_state_not_eligible")
          const otherFact = uid("acct_")
          yield* profiles.applyFacts(workspaceId, otherFact, [
            { name: "plan", value: "pro", observedAt: Date.now(), sourceEventId: uid() }
          ])
          yield* assertRefused(workspaceId, boundTo(intakeInput(otherFact), version), "account_state_not_eligible")
          // Control: the allowed status is taken.
          const trialing = uid("acct_")
          yield* setStatus(trialing, "trialing")
          yield* assertTaken(workspaceId, boundTo(intakeInput(trialing), version))
        })
      )

      it.effect(
        "frequency_exceeded (409): limit 1 per account, the second intake is refused; another account is not",
        () =>
          Effect.gen(function* () {
            const workspaceId = yield* freshWorkspace
            const version = yield* publishChanged(workspaceId, (d) => {
              d.actions[0].frequency = { limit: 1, windowSeconds: 3600 }
            })
            const accountId = uid("acct_")
            const first = yield* assertTaken(workspaceId, boundTo(intakeInput(accountId), version))
            const second = yield* Effect.either(intake(workspaceId, boundTo(intakeInput(accountId), version)))
            assert.isTrue(Either.isLeft(second))
            const error = (second as Either.Left<any, unknown>).left
            assert.strictEqual(error.reason, "frequency_exceeded")
            const problem = toProblem(error)
            assert.deepStrictEqual([problem.status, problem.errors?.[0]?.path], [409, "action.id"])
            // Only the first is stored.
            assert.strictEqual(
              yield* (yield* ActionLedger).countForFrequency({ workspaceId, accountId, actionId: trialId, since: 0 }),
              1
            )
            assert.isTrue(Option.isSome(yield* (yield* ActionLedger).get(first)))
            yield* assertTaken(workspaceId, boundTo(intakeInput(uid("acct_")), version))
          })
      )

      it.effect("authority_revoked (409): the authorizing API key was revoked", () =>
        Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const keys = yield* ApiKeyStore
          const id = uid()
          yield* keys.ensureWorkspace(workspaceId, Date.now())
          yield* keys.create({
            id,
            workspaceId,
            scope: "admin",
            name: null,
            secretHash: uid().replaceAll("-", ""),
            createdAt: Date.now(),
            revokedAt: null
          })
          yield* assertTaken(workspaceId, intakeInput(uid("acct_")), { authorizedBy: { kind: "api_key", id } })
          yield* keys.revoke(workspaceId, id, Date.now())
          yield* assertRefused(workspaceId, intakeInput(uid("acct_")), "authority_revoked", {
            authorizedBy: { kind: "api_key", id }
          })
          // A key the workspace never had is no authority either.
          yield* assertRefused(workspaceId, intakeInput(uid("acct_")), "authority_revoked", {
            authorizedBy: { kind: "api_key", id: uid() }
          })
        })
      )
    })
  })
}
