/**
 * The payment verification rules for a reconciliation observation (spec "Payment verification
 * rules for the observation"): the verdict on one signed observation whose bindings already matched
 * its read. "Observation failed, missing, late or mismatched: stays inconclusive; the payment claim
 * is not promoted."
 */
import type { PaymentObservation } from "../protocol/messages/Reconciliation.ts"
import { paymentRule } from "../protocol/OperationFamily.ts"
import { parseTimestamp } from "../protocol/Timestamp.ts"
import type { PaymentSnapshot } from "./Action.ts"

/**
 * How far a state read may sit outside the read's own time span (clock drift between the customer
 * and the service): a read must be made after the request was sent and before its answer arrived
 * (rule 1: "a fresh state read"), give or take this much.
 */
export const readSkewMillis = 60_000

/**
 * The verdict on one observation. `retry` says whether reading again later may change it (a
 * payment still processing, a provider event not seen yet, a late read); a definite mismatch is
 * not read again.
 */
export interface Judgement {
  readonly verdict: "verified" | "reversed" | "inconclusive"
  readonly reason: string
  readonly retry: boolean
}

const verified = (reason: string): Judgement => ({ verdict: "verified", reason, retry: false })
const reversed = (reason: string): Judgement => ({ verdict: "reversed", reason, retry: false })
/**
 * An inconclusive verdict; `retry` when reading again later may change it.
 */
export const inconclusive = (reason: string, retry: boolean): Judgement => ({ verdict: "inconclusive", reason, retry })

const subscriptionLive = (state: PaymentObservation["subscriptionState"]) => state === "active" || state === "trialing"

/** Subscription states that never become active again. */
const endedSubscription = (state: PaymentObservation["subscriptionState"]) =>
  state === "canceled" || state === "incomplete_expired"

/**
 * Judges an observation whose bindings already matched the read (spec "Payment verification rules
 * for the observation"), in this order, the first failure naming the reason:
 *
 * 1. the state read was made for this read: `stateReadAt` not before `requestedAt` and not after
 *    `receivedAt`, give or take `readSkewMillis`; the payment is bound to the customer, the
 *    provider object is one its family's read may name (`OperationFamily.ts` `read.intents`), and
 *    the raw provider reference hashes to the one the completion named (`providerReferenceHash`);
 * 2. the outcome: `pending`/`unknown` may still change (read again), `failed` and a partial refund
 *    stay inconclusive ("a partial refund stays inconclusive");
 * 3. "a verified result requires a matching signed provider event": `eventId` present and
 *    `eventSignatureVerified`;
 * 4. the currency: a charge in another currency than the expected one never verifies nor
 *    reverses (`currency_mismatch`, final) in any priced mode. An observation that names no
 *    `chargedCurrency` (a peer sending only the spec's fields) is judged by the echoed expected
 *    currency: its `succeeded` asserts "a successful charge equal to the fixed amount and currency"
 *    (docs/decisions.md, "Charged currency");
 * 5. per mode: a one-time purchase a succeeded charge of exactly the expected amount, nothing
 *    refunded; a new subscription active or trialing with a
 *    paid initial invoice, or trialing; a subscription change active or trialing and no unpaid
 *    invoice; setup-only a method attached and nothing charged ("records no revenue"); a recovery
 *    a paid invoice or a succeeded payment of the expected amount. A reversal is a full refund:
 *    everything charged refunded (for a family whose read has a `fixedAmount`: a one-time
 *    purchase or a recovery, the expected amount).
 */
export const judgeObservation = (
  snapshot: PaymentSnapshot,
  observation: PaymentObservation,
  observedReferenceHash: string,
  span: { readonly requestedAt: number; readonly receivedAt: number }
): Judgement => {
  const readAt = parseTimestamp(observation.stateReadAt)
  if (readAt === undefined || readAt > span.receivedAt + readSkewMillis)
    return inconclusive("state_read_in_future", true)
  if (readAt < span.requestedAt - readSkewMillis) return inconclusive("state_read_before_request", true)
  if (!observation.customerBound) return inconclusive("not_customer_bound", false)
  const read = paymentRule(snapshot.mode).read
  if (!read.intents.includes(observation.intent)) return inconclusive("intent_does_not_fit_mode", false)
  if (observedReferenceHash !== observation.providerReferenceHash)
    return inconclusive("provider_reference_mismatch", false)
  switch (observation.outcome) {
    case "pending":
    case "unknown":
      return inconclusive(`outcome_${observation.outcome}`, true)
    case "failed":
      return inconclusive("payment_failed", false)
    case "partially_reversed":
      return inconclusive("partial_refund", false)
    case "reversed":
    case "succeeded":
      break
  }
  if (observation.eventId === null || !observation.eventSignatureVerified)
    return inconclusive("provider_event_unverified", true)
  const expected = snapshot.expected
  const amountFixed = read.fixedAmount
  if (
    expected !== null &&
    observation.chargedAmountMinor > 0 &&
    observation.chargedCurrency !== undefined &&
    observation.chargedCurrency !== expected.currency
  ) {
    return inconclusive("currency_mismatch", false)
  }
  if (observation.outcome === "reversed") {
    // "A full refund may reverse it": everything charged refunded, for a fixed price the expected
    // amount; "a partial refund stays inconclusive" in every mode.
    if (amountFixed && (expected === null || observation.chargedAmountMinor !== expected.amountMinor)) {
      return inconclusive("amount_mismatch", false)
    }
    return observation.refundedAmountMinor === observation.chargedAmountMinor
      ? reversed("full_refund")
      : inconclusive("partial_refund", false)
  }
  if (observation.refundedAmountMinor > 0) return inconclusive("partial_refund", false)
  switch (snapshot.mode) {
    case "one_time_purchase":
      if (observation.paymentStatus !== "succeeded") return inconclusive("charge_not_succeeded", true)
      if (expected === null || observation.chargedAmountMinor !== expected.amountMinor)
        return inconclusive("amount_mismatch", false)
      return verified("charge_matches")
    case "new_subscription":
      if (endedSubscription(observation.subscriptionState)) return inconclusive("subscription_ended", false)
      if (!subscriptionLive(observation.subscriptionState)) return inconclusive("subscription_not_active", true)
      return observation.invoicePaid === true || observation.subscriptionState === "trialing"
        ? verified(observation.invoicePaid === true ? "initial_invoice_paid" : "trial_started")
        : inconclusive("initial_invoice_unpaid", true)
    case "existing_subscription_change":
      if (endedSubscription(observation.subscriptionState)) return inconclusive("subscription_ended", false)
      if (!subscriptionLive(observation.subscriptionState)) return inconclusive("subscription_not_active", true)
      return observation.invoicePaid === false ? inconclusive("invoice_unpaid", true) : verified("subscription_changed")
    case "setup_only":
      if (!observation.methodAttached) return inconclusive("method_not_attached", true)
      return observation.chargedAmountMinor === 0 ? verified("method_attached") : inconclusive("setup_charged", false)
    case "recover_payment":
      if (observation.invoicePaid !== true && observation.paymentStatus !== "succeeded")
        return inconclusive("not_recovered", true)
      if (expected === null || observation.chargedAmountMinor !== expected.amountMinor)
        return inconclusive("amount_mismatch", false)
      return verified("payment_recovered")
  }
}
