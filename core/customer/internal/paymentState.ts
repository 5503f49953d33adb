/**
 * A Payment action's state as the provider reports it now (spec "Handler rules" 5: "Read the
 * provider resource independently when reconciling the final outcome"; "Payment verification
 * rules"): the one reading behind both the completions the kit sends after a webhook and the
 * observations it answers reconciliation reads with. The webhook body is never read here.
 *
 * Outcomes: a payment `succeeded` with nothing refunded is `succeeded`; everything charged
 * refunded is `reversed`; part of it `partially_reversed` ("a partial refund stays inconclusive");
 * `canceled` is `failed`; anything else (a declined attempt the customer may retry, processing,
 * awaiting action) is `pending`. A subscription is `succeeded` when active or trialing, `failed`
 * when it can never become active, else `pending`; a setup is `succeeded` once a method is attached.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ObservationOutcome, PaymentObservation } from "../../protocol/messages/Reconciliation.ts"
import { SubscriptionState } from "../../protocol/messages/Reconciliation.ts"
import { metadataKeys, type PaymentProviderError, type PaymentProviderService } from "../PaymentProvider.ts"
import { providerReferenceOf, type StoredPayment } from "./paymentRecord.ts"

/**
 * @since 0.1.0
 */
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
}

const isSubscriptionState = Schema.is(SubscriptionState)

const refundOutcome = (charged: number, refunded: number): ObservationOutcome =>
  refunded <= 0 ? "succeeded" : refunded >= charged ? "reversed" : "partially_reversed"

/**
 * Reads the action's provider objects now. `accountId` is the action's account: an object whose
 * metadata names another is not customer-bound.
 *
 * @since 0.1.0
 */
export const readPaymentState = (
  provider: PaymentProviderService,
  payment: StoredPayment,
  accountId: string
): Effect.Effect<PaymentState, PaymentProviderError> =>
  Effect.gen(function*() {
    const providerReference = providerReferenceOf(payment)
    if (payment.subscriptionId !== null) {
      const subscription = yield* provider.retrieveSubscription(payment.subscriptionId)
      const invoiceId = payment.initialInvoiceId ?? subscription.latestInvoiceId
      const invoice = invoiceId === null ? null : yield* provider.retrieveInvoice(invoiceId)
      const state = isSubscriptionState(subscription.status) ? subscription.status : null
      const outcome: ObservationOutcome = state === "active" || state === "trialing"
        ? "succeeded"
        : state === "canceled" || state === "incomplete_expired"
        ? "failed"
        : "pending"
      return {
        providerReference,
        customerBound: subscription.metadata[metadataKeys.accountId] === accountId &&
          (payment.customerId === null || subscription.customerId === payment.customerId),
        intent: "subscription",
        paymentStatus: invoice?.status ?? null,
        subscriptionState: state,
        invoicePaid: invoice === null ? null : invoice.status === "paid",
        methodAttached: subscription.defaultPaymentMethodId !== null,
        chargedAmountMinor: invoice?.amountPaidMinor ?? 0,
        refundedAmountMinor: 0,
        outcome
      }
    }
    if (payment.intent === "setup") {
      const setup = yield* provider.retrieveSetupIntent(payment.intentId)
      return {
        providerReference,
        customerBound: setup.metadata[metadataKeys.accountId] === accountId &&
          (payment.customerId === null || setup.customerId === payment.customerId),
        intent: "setup",
        paymentStatus: setup.status,
        subscriptionState: null,
        invoicePaid: null,
        methodAttached: setup.status === "succeeded" && setup.paymentMethodId !== null,
        chargedAmountMinor: 0,
        refundedAmountMinor: 0,
        outcome: setup.status === "succeeded" ? "succeeded" : setup.status === "canceled" ? "failed" : "pending"
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
      customerBound: bound && intent.metadata[metadataKeys.accountId] === accountId &&
        (payment.customerId === null || intent.customerId === payment.customerId),
      intent: "payment",
      paymentStatus: intent.status,
      subscriptionState: null,
      invoicePaid: null,
      methodAttached: intent.paymentMethodId !== null,
      chargedAmountMinor: charged,
      refundedAmountMinor: refunded,
      outcome: intent.status === "succeeded"
        ? refundOutcome(charged, refunded)
        : intent.status === "canceled"
        ? "failed"
        : "pending"
    }
  })
