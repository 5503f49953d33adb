/**
 * A Payment action's state as the provider reports it now (spec "Handler rules" 5: "Read the
 * provider resource independently when reconciling the final outcome"; "Payment verification
 * rules"): the one reading behind both the completions the kit sends after a webhook and the
 * observations it answers reconciliation reads with. The webhook body is never read here.
 *
 * Outcomes: a payment `succeeded` with nothing refunded is `succeeded`; everything charged
 * refunded is `reversed`; part of it `partially_reversed` ("a partial refund stays inconclusive");
 * `canceled` is `failed`; anything else (a declined attempt the customer may retry, processing,
 * awaiting action) is `pending`, with `declined` set when the last attempt was declined. A
 * subscription is `succeeded` when active, or trialing with the method its trial's setup intent
 * collects saved (a trial without one is `pending`), `failed` when it can never become active,
 * else `pending`; once its initial invoice's charge is refunded, in full `reversed`, in part
 * `partially_reversed` (the charge is found through the invoice's payment, in either of the
 * provider's shapes, `PaymentProvider.InvoiceView`). A setup is `succeeded` once a method is attached.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ObservationOutcome, PaymentObservation } from "../../protocol/messages/Reconciliation.ts"
import { SubscriptionState } from "../../protocol/messages/Reconciliation.ts"
import { metadataKeys, type PaymentProviderError, type PaymentProviderService } from "../PaymentProvider.ts"
import { providerReferenceOf, type StoredPayment } from "./paymentRecord.ts"

export interface PaymentState {
  readonly providerReference: string
  readonly customerBound: boolean
  readonly intent: PaymentObservation["intent"]
  readonly paymentStatus: string | null
  readonly subscriptionState: PaymentObservation["subscriptionState"]
  readonly invoicePaid: boolean | null
  readonly methodAttached: boolean
  readonly chargedAmountMinor: number
  readonly refundedAmountMinor: number
  readonly outcome: ObservationOutcome
  /** A `pending` payment whose last attempt was declined: the customer may retry it until the offer expires. */
  readonly declined: boolean
}

const isSubscriptionState = Schema.is(SubscriptionState)

const refundOutcome = (charged: number, refunded: number): ObservationOutcome =>
  refunded <= 0 ? "succeeded" : refunded >= charged ? "reversed" : "partially_reversed"

/**
 * Reads the action's provider objects now. `accountId` is the action's account: an object whose
 * metadata names another is not customer-bound.
 */
export const readPaymentState = (
  provider: PaymentProviderService,
  payment: StoredPayment,
  accountId: string
): Effect.Effect<PaymentState, PaymentProviderError> =>
  Effect.gen(function* () {
    const providerReference = providerReferenceOf(payment)
    if (payment.subscriptionId !== null) {
      const subscription = yield* provider.retrieveSubscription(payment.subscriptionId)
      const invoiceId = payment.initialInvoiceId ?? subscription.latestInvoiceId
      const invoice = invoiceId === null ? null : yield* provider.retrieveInvoice(invoiceId)
      const state = isSubscriptionState(subscription.status) ? subscription.status : null
      // The initial invoice's payment: its intent (named by the invoice, else the one the kit
      // offered) and the charge that paid it, where refunds show.
      const intentId = invoice?.paymentIntentId ?? (payment.intent === "payment" ? payment.intentId : null)
      const intent = intentId === null ? null : yield* provider.retrievePaymentIntent(intentId)
      const chargeId = invoice?.chargeId ?? intent?.latestChargeId ?? null
      const charge = chargeId === null ? null : yield* provider.retrieveCharge(chargeId)
      const paid = invoice?.status === "paid"
      const charged = paid ? (charge?.amountMinor ?? invoice.amountPaidMinor) : 0
      const refunded = paid ? (charge?.amountRefundedMinor ?? 0) : 0
      // A trial's continuation is its setup intent: the trial counts once a method is saved.
      const setup = payment.intent === "setup" ? yield* provider.retrieveSetupIntent(payment.intentId) : null
      const methodAttached =
        subscription.defaultPaymentMethodId !== null ||
        (setup !== null && setup.status === "succeeded" && setup.paymentMethodId !== null)
      const outcome: ObservationOutcome =
        charged > 0 && refunded > 0
          ? refundOutcome(charged, refunded)
          : state === "trialing" && setup !== null && !methodAttached
            ? "pending"
            : state === "active" || state === "trialing"
              ? "succeeded"
              : state === "canceled" || state === "incomplete_expired"
                ? "failed"
                : "pending"
      return {
        providerReference,
        customerBound:
          subscription.metadata[metadataKeys.accountId] === accountId &&
          (payment.customerId === null || subscription.customerId === payment.customerId),
        intent: "subscription",
        paymentStatus: invoice?.status ?? null,
        subscriptionState: state,
        invoicePaid: invoice === null ? null : invoice.status === "paid",
        methodAttached,
        chargedAmountMinor: charged,
        refundedAmountMinor: refunded,
        outcome,
        declined:
          outcome === "pending" &&
          ((intent !== null && intent.lastPaymentErrorCode !== null) ||
            (setup !== null && setup.lastSetupErrorCode !== null))
      }
    }
    if (payment.intent === "setup") {
      const setup = yield* provider.retrieveSetupIntent(payment.intentId)
      return {
        providerReference,
        customerBound:
          setup.metadata[metadataKeys.accountId] === accountId &&
          (payment.customerId === null || setup.customerId === payment.customerId),
        intent: "setup",
        paymentStatus: setup.status,
        subscriptionState: null,
        invoicePaid: null,
        methodAttached: setup.status === "succeeded" && setup.paymentMethodId !== null,
        chargedAmountMinor: 0,
        refundedAmountMinor: 0,
        outcome: setup.status === "succeeded" ? "succeeded" : setup.status === "canceled" ? "failed" : "pending",
        declined: setup.status === "requires_payment_method" && setup.lastSetupErrorCode !== null
      }
    }
    const intent = yield* provider.retrievePaymentIntent(payment.intentId)
    const charge = intent.latestChargeId === null ? null : yield* provider.retrieveCharge(intent.latestChargeId)
    const charged = charge?.amountMinor ?? intent.amountReceivedMinor
    const refunded = charge?.amountRefundedMinor ?? 0
    // The amount binding: the intent still asks for the amount and currency it was created with.
    const bound = intent.amountMinor === payment.amountMinor && intent.currency === payment.currency
    return {
      providerReference,
      customerBound:
        bound &&
        intent.metadata[metadataKeys.accountId] === accountId &&
        (payment.customerId === null || intent.customerId === payment.customerId),
      intent: "payment",
      paymentStatus: intent.status,
      subscriptionState: null,
      invoicePaid: null,
      methodAttached: intent.paymentMethodId !== null,
      chargedAmountMinor: charged,
      refundedAmountMinor: refunded,
      outcome:
        intent.status === "succeeded"
          ? refundOutcome(charged, refunded)
          : intent.status === "canceled"
            ? "failed"
            : "pending",
      declined: intent.status === "requires_payment_method" && intent.lastPaymentErrorCode !== null
    }
  })
