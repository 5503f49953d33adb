/**
 * Independent payment reconciliation (spec "Payment reconciliation request", "Payment observation"):
 * for Payment actions the service reads the payment state back from the customer backend before a
 * success claim can be verified. The spec leaves the field names "not shown"; these are Accord's
 * (docs/decisions.md).
 */
import * as Schema from "effect/Schema"
import {
  AccountId,
  Code,
  ExactStruct,
  Nonce,
  NonNegativeInt,
  ObservedIntent,
  PaymentMode,
  ProtocolVersion,
  ProviderIdempotencyKey,
  ProviderReference,
  Sha256Hex,
  Timestamp
} from "./Common.ts"
import { paymentRule } from "../OperationFamily.ts"
import { Uuid } from "../Uuid.ts"

/**
 * A lower-case ISO 4217 currency code, as the payment provider writes it (`usd`, `eur`).
 */
export const Currency: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^[a-z]{3}$/),
  Schema.annotations({ identifier: "Currency" })
)

/**
 * "The exact price amount, currency and reference hash snapshotted at authorization."
 */
export const ExpectedTerms = ExactStruct({
  amountMinor: NonNegativeInt,
  currency: Currency,
  priceReferenceHash: Sha256Hex
}).annotations({ identifier: "ExpectedTerms" })

/** {@inheritDoc ExpectedTerms:var} */
export interface ExpectedTerms extends Schema.Schema.Type<typeof ExpectedTerms> {}

/**
 * The immutable bindings the request carries and the observation echoes under the same names:
 * "the immutable workspace, account, action request, action version, offer version, mode,
 * idempotency key, provider reference hash, nonce ... and the exact price amount, currency and
 * reference hash". The raw provider reference is never sent: "The service hashes the provider
 * event and reference".
 */
const bindingFields = {
  workspaceId: Uuid,
  accountId: AccountId,
  actionRequestId: Uuid,
  actionVersionId: Uuid,
  offerVersionId: Schema.NullOr(Uuid),
  mode: PaymentMode,
  providerIdempotencyKey: ProviderIdempotencyKey,
  providerReferenceHash: Sha256Hex,
  requestNonce: Nonce,
  expected: Schema.NullOr(ExpectedTerms)
}

/**
 * "A non-purchase setup has no priced offer": only a mode whose family is unpriced
 * (`OperationFamily.ts`: `setup_only`) may omit the price snapshot (`expected: null`) or the offer
 * (`offerVersionId: null`), and without an offer there is no price to snapshot.
 */
const unpricedOnlyForSetup = (binding: {
  readonly mode: PaymentMode
  readonly offerVersionId: string | null
  readonly expected: ExpectedTerms | null
}): true | string => {
  const priced = paymentRule(binding.mode).priced
  if (binding.expected === null && priced) return "expected may be null only for setup_only"
  if (binding.offerVersionId === null) {
    if (priced) return "offerVersionId may be null only for setup_only"
    if (binding.expected !== null) return "an unpriced setup (offerVersionId null) has expected null"
  }
  return true
}

/**
 * The payment reconciliation request body (service to customer).
 */
export const PaymentReconciliationRequest = ExactStruct({
  type: Schema.Literal("service.customer_action.payment_reconciliation"),
  protocolVersion: ProtocolVersion,
  ...bindingFields,
  requestedAt: Timestamp
}).pipe(Schema.filter(unpricedOnlyForSetup, { identifier: "PaymentReconciliationRequest" }))

/** {@inheritDoc PaymentReconciliationRequest:var} */
export interface PaymentReconciliationRequest extends Schema.Schema.Type<typeof PaymentReconciliationRequest> {}

/**
 * A subscription's provider state ("A new subscription requires state active or trialing").
 */
export const SubscriptionState = Schema.Literal(
  "incomplete",
  "incomplete_expired",
  "trialing",
  "active",
  "past_due",
  "canceled",
  "unpaid",
  "paused"
)

export type SubscriptionState = typeof SubscriptionState.Type

/**
 * The customer's reading of the payment. "Allowed values of `outcome`: not shown"; `partially_reversed`
 * exists because "A partial refund stays inconclusive", which the service must be able to tell
 * from a full reversal.
 */
export const ObservationOutcome = Schema.Literal(
  "succeeded",
  "failed",
  "pending",
  "reversed",
  "partially_reversed",
  "unknown"
)

export type ObservationOutcome = typeof ObservationOutcome.Type

/**
 * The payment observation body (the reconciliation response). "It echoes every binding, the nonce
 * and every expected term." `eventId` is null when no provider event has been seen;
 * `paymentStatus`, `subscriptionState` and `invoicePaid` are null when the intent has no such
 * state.
 *
 * `chargedCurrency` is Accord's addition beside the spec's fields: the currency of the charge
 * `chargedAmountMinor` counts (null when nothing was charged), so "a successful charge equal to
 * the fixed amount and currency" can be judged on both. It is optional, so an observation without
 * it (a peer that sends only the spec's fields) still decodes; how such an observation is judged
 * is `Judgement.ts`'s (docs/decisions.md, "Charged currency").
 */
export const PaymentObservation = ExactStruct({
  type: Schema.Literal("service.customer_action.payment_observation"),
  protocolVersion: ProtocolVersion,
  ...bindingFields,
  providerReference: ProviderReference,
  eventId: Schema.NullOr(ProviderReference),
  eventSignatureVerified: Schema.Boolean,
  stateReadAt: Timestamp,
  customerBound: Schema.Boolean,
  intent: ObservedIntent,
  paymentStatus: Schema.NullOr(Code),
  subscriptionState: Schema.NullOr(SubscriptionState),
  invoicePaid: Schema.NullOr(Schema.Boolean),
  methodAttached: Schema.Boolean,
  chargedAmountMinor: NonNegativeInt,
  chargedCurrency: Schema.optionalWith(Schema.NullOr(Currency), { exact: true }),
  refundedAmountMinor: NonNegativeInt,
  outcome: ObservationOutcome
}).pipe(Schema.filter(unpricedOnlyForSetup, { identifier: "PaymentObservation" }))

/** {@inheritDoc PaymentObservation:var} */
export interface PaymentObservation extends Schema.Schema.Type<typeof PaymentObservation> {}
