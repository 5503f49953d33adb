/**
 * What the kit keeps of a Payment action's intent, inside the acknowledgement it stores with the
 * claim (spec "Payment continuation object", "Handler rules" 3: "Keep the original payment, account
 * and amount binding"): which intent was created, for which amount, currency and customer, on which
 * account, and until when its continuation is offered. The client secret is not stored: a duplicate
 * delivery reads it back from the provider.
 */
import * as Schema from "effect/Schema"
import { PaymentMode } from "../../protocol/messages/Common.ts"

/**
 * The payment the kit stored for an accepted Payment action: mode, intent kind, provider ids and
 * terms.
 */
export const StoredPayment = Schema.Struct({
  mode: PaymentMode,
  intent: Schema.Literal("payment", "setup"),
  /** The intent the continuation confirms; null when the action asked for no payment (a change owing nothing). */
  intentId: Schema.NullOr(Schema.String),
  subscriptionId: Schema.NullOr(Schema.String),
  /**
   * The invoice this action pays: a new subscription's initial invoice (renewals create no further
   * completion), a change's proration invoice, the open invoice a recovery pays.
   */
  initialInvoiceId: Schema.NullOr(Schema.String),
  customerId: Schema.NullOr(Schema.String),
  amountMinor: Schema.NullOr(Schema.Number),
  currency: Schema.NullOr(Schema.String),
  connectedAccountId: Schema.NullOr(Schema.String),
  expiresAt: Schema.String
})

/** {@inheritDoc StoredPayment:var} */
export type StoredPayment = typeof StoredPayment.Type

/**
 * The provider reference a Payment action's completion and observation name: the invoice a recovery
 * pays, the subscription for a subscription, else the intent.
 */
export const providerReferenceOf = (payment: StoredPayment): string =>
  payment.mode === "recover_payment"
    ? (payment.initialInvoiceId ?? payment.intentId ?? "")
    : (payment.subscriptionId ?? payment.intentId ?? "")

/**
 * The outbox kind of a verified provider webhook waiting to be reconciled (dedupe key: the event id).
 */
export const paymentEventOutboxKind = "customer.payment_event"

/**
 * The history trigger of a verified provider event applied to an action.
 */
export const paymentEventTrigger = "customer.payment_event_verified"
