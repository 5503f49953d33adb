/**
 * The action model: which operations are Payment actions, the payment snapshot check, and the
 * stored request decoded once with a typed failure.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import {
  type ActionIntake,
  checkPaymentSnapshot,
  decodeStoredRequest,
  decodeStoredRequestEither,
  isPaymentAction,
  paymentRuleOf,
  type PaymentSnapshot,
  StoredRequestInvalid
} from "../../../core/connector/Action.ts"
import { paymentFamilies } from "../../../core/protocol/OperationFamily.ts"
import { intakeInput } from "../../support/deliveries.ts"

const plain = intakeInput()

const snapshot = (mode: PaymentSnapshot["mode"], priced: boolean): PaymentSnapshot => ({
  mode,
  actionVersionId: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b",
  offerVersionId: null,
  expected: priced ? { amountMinor: 1_000, currency: "usd", priceReferenceHash: "c".repeat(64) } : null
})

/** `plain` with its operation family replaced (the snapshot check reads only the family). */
const withFamily = (family: string, payment?: PaymentSnapshot): ActionIntake =>
  ({
    ...plain,
    action: { ...plain.action, operation: { ...plain.action.operation, family } },
    ...(payment !== undefined ? { payment } : {})
  }) as unknown as ActionIntake

describe("Action", () => {
  it("the payment operation keys are the Payment actions, each with its mode", () => {
    assert.deepStrictEqual(paymentFamilies.map((rule) => rule.family).sort(), [
      "payment.existing_subscription_change",
      "payment.new_subscription",
      "payment.one_time_purchase",
      "payment.setup_only",
      "recover_payment"
    ])
    assert.isFalse(isPaymentAction(plain))
    for (const rule of paymentFamilies) {
      assert.isTrue(isPaymentAction(withFamily(rule.family)), rule.family)
      assert.strictEqual(paymentRuleOf(withFamily(rule.family))?.mode, rule.mode, rule.family)
    }
  })

  it("a family named like an Object.prototype member is no Payment family: no mode, no snapshot asked", () => {
    for (const family of ["constructor", "__proto__", "tostring"]) {
      assert.strictEqual(paymentRuleOf(withFamily(family)), undefined, family)
      assert.isFalse(isPaymentAction(withFamily(family)), family)
      assert.strictEqual(checkPaymentSnapshot(withFamily(family)), undefined, family)
    }
  })

  it("the snapshot check: required for Payment actions, refused for others, mode and terms must fit", () => {
    assert.strictEqual(checkPaymentSnapshot(plain), undefined)
    assert.strictEqual(
      checkPaymentSnapshot(withFamily("extend_trial", snapshot("setup_only", false))),
      "snapshot_not_allowed"
    )
    assert.strictEqual(checkPaymentSnapshot(withFamily("payment.one_time_purchase")), "snapshot_required")
    assert.strictEqual(
      checkPaymentSnapshot(withFamily("payment.one_time_purchase", snapshot("setup_only", false))),
      "mode_mismatch"
    )
    assert.strictEqual(
      checkPaymentSnapshot(withFamily("payment.one_time_purchase", snapshot("one_time_purchase", false))),
      "terms_required"
    )
    assert.strictEqual(
      checkPaymentSnapshot(withFamily("payment.setup_only", snapshot("setup_only", true))),
      "terms_required"
    )
    assert.strictEqual(
      checkPaymentSnapshot(withFamily("payment.one_time_purchase", snapshot("one_time_purchase", true))),
      undefined
    )
    assert.strictEqual(checkPaymentSnapshot(withFamily("payment.setup_only", snapshot("setup_only", false))), undefined)
  })

  it("a family absent from the table is not judged as a payment or not: left to revalidation, which refuses it", () => {
    // Before, a snapshot on an unknown family was "snapshot_not_allowed": the family guessed not a payment.
    assert.strictEqual(
      checkPaymentSnapshot(withFamily("refund_everything", snapshot("one_time_purchase", true))),
      undefined
    )
    assert.isUndefined(paymentRuleOf(withFamily("refund_everything")))
  })

  it.effect("a stored request decodes back to the intake, also after a JSON round trip", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* decodeStoredRequest({ actionRequestId: "a", request: plain }), plain)
      const stored = JSON.parse(JSON.stringify(plain)) as unknown
      assert.deepStrictEqual(yield* decodeStoredRequest({ actionRequestId: "a", request: stored }), plain)
    })
  )

  it.effect("a stored request that is not one fails with StoredRequestInvalid naming the action", () =>
    Effect.gen(function* () {
      for (const request of [null, "x", { ...plain, accountId: "" }, { ...plain, unexpected: true }]) {
        const exit = yield* Effect.exit(decodeStoredRequest({ actionRequestId: "act_9", request }))
        assert.deepStrictEqual(exit, Exit.fail(new StoredRequestInvalid({ actionRequestId: "act_9" })))
      }
    })
  )

  it.effect("the plain form answers as the effect form, for stored requests and for what is not one", () =>
    Effect.gen(function* () {
      const payment = withFamily("payment.one_time_purchase", snapshot("one_time_purchase", true))
      const requests: ReadonlyArray<unknown> = [
        plain,
        JSON.parse(JSON.stringify(plain)),
        { ...plain, authorizedBy: { kind: "api_key", id: "key_1" } },
        payment,
        null,
        "x",
        { ...plain, accountId: "" },
        { ...plain, unexpected: true },
        { ...plain, action: { ...plain.action, operation: 7 } }
      ]
      for (const request of requests) {
        const record = { actionRequestId: "act_9", request }
        const plainForm = decodeStoredRequestEither(record)
        const effectForm = yield* Effect.either(decodeStoredRequest(record))
        assert.deepStrictEqual(plainForm, effectForm)
      }
      assert.isTrue(Either.isRight(decodeStoredRequestEither({ actionRequestId: "a", request: payment })))
      assert.isTrue(Either.isLeft(decodeStoredRequestEither({ actionRequestId: "a", request: null })))
    })
  )
})
