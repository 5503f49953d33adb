/**
 * The payment verification rules for an observation (spec "Payment verification rules for the
 * observation"): one test per reason an observation does not verify, the reversal rules, and
 * properties over generated observations: nothing verifies without a signed provider event, a
 * fresh read, a customer-bound payment and the completion's provider reference.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import { judgeObservation, readSkewMillis } from "../../../../core/connector/Judgement.ts"
import type { PaymentSnapshot } from "../../../../core/connector/Action.ts"
import type { PaymentMode } from "../../../../core/protocol/messages/Common.ts"
import type { PaymentObservation } from "../../../../core/protocol/messages/Reconciliation.ts"
import { formatTimestamp } from "../../../../core/protocol/Timestamp.ts"

const now = Date.parse("2026-11-23T12:00:00.000Z")
/** The read was sent 2 s before its answer arrived (`now`). */
const span = { requestedAt: now - 2_000, receivedAt: now }
const referenceHash = "a".repeat(64)
const expected = { amountMinor: 4900, currency: "usd", priceReferenceHash: "c".repeat(64) }

const snapshot = (mode: PaymentMode): PaymentSnapshot => ({
  mode,
  actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",
  offerVersionId: mode === "setup_only" ? null : "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e",
  expected: mode === "setup_only" ? null : expected
})

const intentFor = (mode: PaymentMode): PaymentObservation["intent"] =>
  mode === "setup_only"
    ? "setup"
    : mode === "one_time_purchase" || mode === "recover_payment"
      ? "payment"
      : "subscription"

/** A matching observation of a settled payment in `mode`. */
const good = (mode: PaymentMode): PaymentObservation => ({
  type: "service.customer_action.payment_observation",
  protocolVersion: 1,
  workspaceId: "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20",
  accountId: "acct_42",
  actionRequestId: "1f0c2e4a-6b8d-4f0a-9c2e-4a6b8d0f2a4c",
  actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",
  offerVersionId: mode === "setup_only" ? null : "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e",
  mode,
  providerIdempotencyKey: "pva_" + "b".repeat(64),
  providerReferenceHash: referenceHash,
  requestNonce: "n".repeat(32),
  expected: mode === "setup_only" ? null : expected,
  providerReference: "pi_3Nv0FGQ9RKHgCVdK",
  eventId: "evt_1Nv0FGQ9RKHgCVdK",
  eventSignatureVerified: true,
  stateReadAt: formatTimestamp(now - 1_000),
  customerBound: true,
  intent: intentFor(mode),
  paymentStatus: mode === "setup_only" ? null : "succeeded",
  subscriptionState: mode === "new_subscription" || mode === "existing_subscription_change" ? "active" : null,
  invoicePaid:
    mode === "new_subscription" || mode === "existing_subscription_change" || mode === "recover_payment" ? true : null,
  methodAttached: true,
  chargedAmountMinor: mode === "setup_only" ? 0 : 4900,
  refundedAmountMinor: 0,
  outcome: "succeeded"
})

const judge = (mode: PaymentMode, change: Partial<PaymentObservation> = {}, hash = referenceHash) =>
  judgeObservation(snapshot(mode), { ...good(mode), ...change }, hash, span)

const modes: ReadonlyArray<PaymentMode> = [
  "one_time_purchase",
  "new_subscription",
  "existing_subscription_change",
  "setup_only",
  "recover_payment"
]

describe("judgeObservation: verified", () => {
  it("a matching, signed, fresh observation verifies every mode, each with its reason", () => {
    assert.deepStrictEqual(
      modes.map((mode) => [mode, judge(mode)]),
      [
        ["one_time_purchase", { verdict: "verified", reason: "charge_matches", retry: false }],
        ["new_subscription", { verdict: "verified", reason: "initial_invoice_paid", retry: false }],
        ["existing_subscription_change", { verdict: "verified", reason: "subscription_changed", retry: false }],
        ["setup_only", { verdict: "verified", reason: "method_attached", retry: false }],
        ["recover_payment", { verdict: "verified", reason: "payment_recovered", retry: false }]
      ]
    )
  })

  it("a new subscription in a valid trial verifies without a paid invoice", () => {
    assert.deepStrictEqual(judge("new_subscription", { subscriptionState: "trialing", invoicePaid: false }), {
      verdict: "verified",
      reason: "trial_started",
      retry: false
    })
  })

  it("a read up to the skew outside the read's own time span still counts", () => {
    assert.strictEqual(
      judge("one_time_purchase", { stateReadAt: formatTimestamp(now + readSkewMillis) }).verdict,
      "verified"
    )
    assert.strictEqual(
      judge("one_time_purchase", { stateReadAt: formatTimestamp(span.requestedAt - readSkewMillis) }).verdict,
      "verified"
    )
  })
})

describe("judgeObservation: inconclusive, one test per reason", () => {
  const cases: ReadonlyArray<readonly [string, PaymentMode, Partial<PaymentObservation>, string, boolean]> = [
    [
      "a read made before the request (a cached reading)",
      "one_time_purchase",
      { stateReadAt: formatTimestamp(span.requestedAt - readSkewMillis - 1) },
      "state_read_before_request",
      true
    ],
    [
      "a read claiming to be from the future",
      "one_time_purchase",
      { stateReadAt: formatTimestamp(now + readSkewMillis + 1) },
      "state_read_in_future",
      true
    ],
    ["a payment not bound to the customer", "one_time_purchase", { customerBound: false }, "not_customer_bound", false],
    [
      "another provider object than the mode uses",
      "one_time_purchase",
      { intent: "setup" },
      "intent_does_not_fit_mode",
      false
    ],
    ["a payment still processing", "one_time_purchase", { outcome: "pending" }, "outcome_pending", true],
    ["an outcome the customer cannot tell", "one_time_purchase", { outcome: "unknown" }, "outcome_unknown", true],
    ["a failed payment", "one_time_purchase", { outcome: "failed" }, "payment_failed", false],
    [
      "a partial refund",
      "one_time_purchase",
      { outcome: "partially_reversed", refundedAmountMinor: 900 },
      "partial_refund",
      false
    ],
    ["no provider event", "one_time_purchase", { eventId: null }, "provider_event_unverified", true],
    [
      "a provider event whose signature was not verified",
      "one_time_purchase",
      { eventSignatureVerified: false },
      "provider_event_unverified",
      true
    ],
    ["another amount charged", "one_time_purchase", { chargedAmountMinor: 4800 }, "amount_mismatch", false],
    [
      "a charge the provider has not marked succeeded",
      "one_time_purchase",
      { paymentStatus: "processing" },
      "charge_not_succeeded",
      true
    ],
    ["a recovery of another amount", "recover_payment", { chargedAmountMinor: 1 }, "amount_mismatch", false],
    ["a new subscription canceled", "new_subscription", { subscriptionState: "canceled" }, "subscription_ended", false],
    [
      "a changed subscription expired incomplete",
      "existing_subscription_change",
      { subscriptionState: "incomplete_expired" },
      "subscription_ended",
      false
    ],
    [
      "a subscription reversed only in part",
      "new_subscription",
      { outcome: "reversed", refundedAmountMinor: 1 },
      "partial_refund",
      false
    ],
    ["a succeeded charge partly refunded", "one_time_purchase", { refundedAmountMinor: 100 }, "partial_refund", false],
    [
      "a new subscription not active",
      "new_subscription",
      { subscriptionState: "incomplete" },
      "subscription_not_active",
      true
    ],
    [
      "a new subscription, active, with its initial invoice unpaid",
      "new_subscription",
      { invoicePaid: false },
      "initial_invoice_unpaid",
      true
    ],
    [
      "a changed subscription past due",
      "existing_subscription_change",
      { subscriptionState: "past_due" },
      "subscription_not_active",
      true
    ],
    [
      "a changed subscription with an unpaid invoice",
      "existing_subscription_change",
      { invoicePaid: false },
      "invoice_unpaid",
      true
    ],
    ["a setup with no method attached", "setup_only", { methodAttached: false }, "method_not_attached", true],
    ["a setup that charged", "setup_only", { chargedAmountMinor: 100 }, "setup_charged", false],
    [
      "a recovery neither paid nor succeeded",
      "recover_payment",
      { invoicePaid: false, paymentStatus: "requires_payment_method" },
      "not_recovered",
      true
    ],
    [
      "a full refund of another amount",
      "one_time_purchase",
      { outcome: "reversed", chargedAmountMinor: 4800, refundedAmountMinor: 4800 },
      "amount_mismatch",
      false
    ],
    [
      "a charge of another amount (4900 expected, 100 charged)",
      "one_time_purchase",
      { chargedAmountMinor: 100 },
      "amount_mismatch",
      false
    ],
    [
      "a charge of the expected amount in another currency (usd expected, eur charged)",
      "one_time_purchase",
      { chargedCurrency: "eur" },
      "currency_mismatch",
      false
    ],
    [
      "a charge that names no currency though something was charged",
      "one_time_purchase",
      { chargedCurrency: null },
      "currency_mismatch",
      false
    ],
    [
      "a subscription's initial invoice paid in another currency",
      "new_subscription",
      { chargedCurrency: "eur" },
      "currency_mismatch",
      false
    ],
    [
      "a full refund of a charge in another currency",
      "one_time_purchase",
      { outcome: "reversed", refundedAmountMinor: 4900, chargedCurrency: "eur" },
      "currency_mismatch",
      false
    ]
  ]
  for (const [what, mode, change, reason, retry] of cases) {
    it(`${what}: ${reason}`, () => {
      assert.deepStrictEqual(judge(mode, change), { verdict: "inconclusive", reason, retry })
    })
  }

  it("a provider reference other than the one the completion named: provider_reference_mismatch", () => {
    assert.deepStrictEqual(judge("one_time_purchase", {}, "d".repeat(64)), {
      verdict: "inconclusive",
      reason: "provider_reference_mismatch",
      retry: false
    })
  })
})

describe("judgeObservation: the charged currency", () => {
  it("the expected currency reported verifies every priced mode", () => {
    for (const mode of modes.filter((m) => m !== "setup_only")) {
      assert.strictEqual(judge(mode, { chargedCurrency: "usd" }).verdict, "verified", mode)
    }
  })
  it("an observation without chargedCurrency (a peer sending only the spec's fields) is judged by the echoed expected currency", () => {
    const { chargedCurrency: _none, ...older } = { ...good("one_time_purchase"), chargedCurrency: "usd" }
    assert.isFalse(Object.hasOwn(older, "chargedCurrency"))
    assert.strictEqual(judgeObservation(snapshot("one_time_purchase"), older, referenceHash, span).verdict, "verified")
  })
  it("a setup that charged nothing names no currency and verifies", () => {
    assert.strictEqual(judge("setup_only", { chargedCurrency: null }).verdict, "verified")
  })
})

describe("judgeObservation: reversal", () => {
  it("a signed full refund of the expected charge is a reversal", () => {
    assert.deepStrictEqual(judge("one_time_purchase", { outcome: "reversed", refundedAmountMinor: 4900 }), {
      verdict: "reversed",
      reason: "full_refund",
      retry: false
    })
  })

  it("a reversal needs a signed provider event too", () => {
    assert.strictEqual(
      judge("one_time_purchase", { outcome: "reversed", refundedAmountMinor: 4900, eventSignatureVerified: false })
        .verdict,
      "inconclusive"
    )
  })

  it("a subscription whose charge was refunded in full is a reversal", () => {
    assert.strictEqual(
      judge("new_subscription", { outcome: "reversed", subscriptionState: "canceled", refundedAmountMinor: 4900 })
        .verdict,
      "reversed"
    )
  })
})

/** Mostly the matching value, sometimes any other: generated observations often verify, so the properties bite. */
const mostly = <A>(good: A, other: fc.Arbitrary<A>): fc.Arbitrary<A> =>
  fc.oneof({ arbitrary: fc.constant(good), weight: 4 }, { arbitrary: other, weight: 1 })

const observation = (mode: PaymentMode) => {
  const base = good(mode)
  return fc
    .record({
      eventId: mostly(base.eventId, fc.constant(null)),
      eventSignatureVerified: mostly(true, fc.constant(false)),
      stateReadAt: mostly(
        base.stateReadAt,
        fc.integer({ min: -10 * readSkewMillis, max: 2 * readSkewMillis }).map((d) => formatTimestamp(now + d))
      ),
      customerBound: mostly(true, fc.constant(false)),
      intent: mostly(base.intent, fc.constantFrom("payment" as const, "setup" as const, "subscription" as const)),
      paymentStatus: mostly(
        base.paymentStatus,
        fc.option(fc.constantFrom("succeeded", "processing", "requires_payment_method"), { nil: null })
      ),
      subscriptionState: mostly(
        base.subscriptionState,
        fc.option(fc.constantFrom("active" as const, "trialing" as const, "past_due" as const, "canceled" as const), {
          nil: null
        })
      ),
      invoicePaid: mostly(base.invoicePaid, fc.option(fc.boolean(), { nil: null })),
      methodAttached: mostly(true, fc.constant(false)),
      chargedAmountMinor: mostly(base.chargedAmountMinor, fc.constantFrom(0, 100, 4800, 4900)),
      // Absent (a peer sending only the spec's fields), the expected currency, or another one.
      chargedCurrency: mostly<string | null | undefined>(
        undefined,
        fc.constantFrom<string | null | undefined>("usd", "eur", "jpy", null)
      ),
      refundedAmountMinor: mostly(0, fc.constantFrom(100, 4800, 4900)),
      outcome: mostly(
        "succeeded" as PaymentObservation["outcome"],
        fc.constantFrom(
          "failed" as const,
          "pending" as const,
          "reversed" as const,
          "partially_reversed" as const,
          "unknown" as const
        )
      )
    })
    .map(
      ({ chargedCurrency, ...change }): PaymentObservation => ({
        ...base,
        ...change,
        ...(chargedCurrency !== undefined ? { chargedCurrency } : {})
      })
    )
}

const withMode = fc
  .constantFrom(...modes)
  .chain((mode) => fc.tuple(fc.constant(mode), observation(mode), mostly(true, fc.constant(false))))

describe("judgeObservation: properties", () => {
  it.prop(
    "nothing verifies or reverses without a signed event, a fresh read, a bound payment and the completion's reference",
    [withMode],
    ([[mode, o, sameReference]]) => {
      const judged = judgeObservation(snapshot(mode), o, sameReference ? referenceHash : "d".repeat(64), span)
      if (judged.verdict === "inconclusive") return true
      // Rule 1 for every verdict that changes anything: a signed provider event, a fresh read of a
      // customer-bound payment of the completion's provider object.
      const readAt = Date.parse(o.stateReadAt)
      assert.isTrue(o.eventId !== null && o.eventSignatureVerified, "signed provider event")
      assert.isTrue(
        readAt >= span.requestedAt - readSkewMillis && readAt <= span.receivedAt + readSkewMillis,
        "a read made for this request"
      )
      assert.strictEqual(
        o.refundedAmountMinor === 0 || o.refundedAmountMinor === o.chargedAmountMinor,
        true,
        "no partial refund"
      )
      assert.isTrue(o.customerBound && sameReference, "bound, same reference")
      assert.notStrictEqual(o.outcome, "partially_reversed")
      if (judged.verdict === "verified") {
        assert.strictEqual(o.outcome, "succeeded")
        assert.strictEqual(o.refundedAmountMinor, 0)
        if (mode === "one_time_purchase")
          assert.isTrue(o.chargedAmountMinor === 4900 && o.paymentStatus === "succeeded")
        if (mode === "recover_payment") assert.strictEqual(o.chargedAmountMinor, 4900)
        if (mode === "setup_only") assert.isTrue(o.methodAttached && o.chargedAmountMinor === 0)
        if (mode === "new_subscription")
          assert.isTrue(
            o.subscriptionState === "trialing" || (o.subscriptionState === "active" && o.invoicePaid === true)
          )
      } else {
        assert.strictEqual(o.outcome, "reversed")
        assert.strictEqual(o.refundedAmountMinor, o.chargedAmountMinor)
        if (mode === "one_time_purchase" || mode === "recover_payment") assert.strictEqual(o.chargedAmountMinor, 4900)
      }
      return true
    },
    { fastCheck: { numRuns: 1_000 } }
  )

  it.prop(
    "every family: a charge of another currency than the expected one, or of another amount where the amount is fixed, never verifies nor reverses",
    [withMode],
    ([[mode, o]]) => {
      const judged = judgeObservation(snapshot(mode), o, referenceHash, span)
      const expectedTerms = snapshot(mode).expected
      const otherCurrency =
        expectedTerms !== null &&
        o.chargedAmountMinor > 0 &&
        o.chargedCurrency !== undefined &&
        o.chargedCurrency !== expectedTerms.currency
      const otherAmount = (mode === "one_time_purchase" || mode === "recover_payment") && o.chargedAmountMinor !== 4900
      if (otherCurrency || otherAmount) assert.strictEqual(judged.verdict, "inconclusive", JSON.stringify(o))
      if (otherCurrency && judged.verdict === "inconclusive" && judged.reason === "currency_mismatch")
        assert.isFalse(judged.retry)
      return true
    },
    { fastCheck: { numRuns: 1_000 } }
  )

  it.prop("a verdict that may still change is read again; a final one never is", [withMode], ([[mode, o]]) => {
    const judged = judgeObservation(snapshot(mode), o, referenceHash, span)
    return judged.verdict === "inconclusive" || judged.retry === false
  })
})
