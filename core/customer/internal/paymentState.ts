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
 * A subscription change is `succeeded` once it took effect (the subscription live, no update
 * pending, its own proration invoice paid or none owed), `failed` when that invoice was voided or
 * the subscription ended, else `pending`. A recovery is read from the one invoice it was bound to:
 * `succeeded` once paid by the bound amount and currency, `failed` when voided or uncollectible.
 *
 * The amount binding ("Keep the original payment, account and amount binding"; "a successful
 * charge equal to the fixed amount and currency"): a payment of a bound amount (a one-time
 * purchase) whose charge is of another amount or currency than the one bound at the claim is
 * `failed`, with `mismatch` naming which (`amount_mismatch`, `currency_mismatch`), never
 * `succeeded` nor, once refunded, `reversed`. `chargedCurrency` is the currency of the charge
 * `chargedAmountMinor` counts, null when nothing was charged.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ObservationOutcome, PaymentObservation } from "../../protocol/messages/Reconciliation.ts"
import { SubscriptionState } from "../../protocol/messages/Reconciliation.ts"
import {
  type InvoiceView,
  metadataKeys,
  type PaymentProviderError,
  type PaymentProviderService
} from "../PaymentProvider.ts"
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
  readonly chargedCurrency: string | null
  readonly refundedAmountMinor: number
  readonly outcome: ObservationOutcome
  /** Why a charge does not count: of another amount or currency than the bound one; null when it does. */
  readonly mismatch: "amount_mismatch" | "currency_mismatch" | null
  /** A `pending` payment whose last attempt was declined: the customer may retry it until the offer expires. */
  readonly declined: boolean
}

const isSubscriptionState = Schema.is(SubscriptionState)

const refundOutcome = (charged: number, refunded: number): ObservationOutcome =>
  refunded <= 0 ? "succeeded" : refunded >= charged ? "reversed" : "partially_reversed"

/** A provider's currency as the observation writes it (lower-case ISO 4217), null when it is none. */
const currencyOf = (currency: string | undefined | null): string | null => {
  const lower = (currency ?? "").toLowerCase()
  return /^[a-z]{3}$/.test(lower) ? lower : null
}

/**
 * Whether a charge is the bound one: the amount and the currency bound at the claim (the currency
 * compared in lower case, as the provider writes it). A payment with no bound
 * amount (a subscription, a setup) has nothing to compare here; the service judges its currency.
 */
export const chargeMismatch = (
  payment: Pick<StoredPayment, "amountMinor" | "currency">,
  chargedAmountMinor: number,
  chargedCurrency: string | null
): PaymentState["mismatch"] =>
  payment.amountMinor === null || payment.currency === null
    ? null
    : chargedAmountMinor !== payment.amountMinor
      ? "amount_mismatch"
      : chargedCurrency === null || chargedCurrency !== currencyOf(payment.currency)
        ? "currency_mismatch"
        : null

/**
 * An invoice's payment: its intent (named by the invoice, else `offeredIntentId`, the one the kit
 * offered) and the charge that paid it, where refunds show. Nothing counts as charged until the
 * invoice is paid; the amount is the charge's, else the invoice's `amount_paid`.
 */
const invoicePayment = (
  provider: PaymentProviderService,
  invoice: InvoiceView | null,
  offeredIntentId: string | null
) =>
  Effect.gen(function* () {
    const intentId = invoice?.paymentIntentId ?? offeredIntentId
    const intent = intentId === null ? null : yield* provider.retrievePaymentIntent(intentId)
    const chargeId = invoice?.chargeId ?? intent?.latestChargeId ?? null
    const charge = chargeId === null ? null : yield* provider.retrieveCharge(chargeId)
    const paid = invoice?.status === "paid"
    const charged = paid ? (charge?.amountMinor ?? invoice.amountPaidMinor) : 0
    const refunded = paid ? (charge?.amountRefundedMinor ?? 0) : 0
    const chargedCurrency = charged > 0 ? currencyOf(charge?.currency ?? invoice?.currency) : null
    return { intent, paid, charged, refunded, chargedCurrency }
  })

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
    if (payment.mode === "recover_payment" && payment.initialInvoiceId !== null) {
      // A recovery: the one open invoice it was bound to, paid by exactly the bound amount.
      const invoice = yield* provider.retrieveInvoice(payment.initialInvoiceId)
      const { charged, chargedCurrency, intent, paid, refunded } = yield* invoicePayment(
        provider,
        invoice,
        payment.intentId
      )
      const mismatch = paid ? chargeMismatch(payment, charged, chargedCurrency) : null
      const outcome: ObservationOutcome =
        mismatch !== null
          ? "failed"
          : paid
            ? refundOutcome(charged, refunded)
            : invoice.status === "void" || invoice.status === "uncollectible"
              ? "failed"
              : "pending"
      return {
        providerReference,
        customerBound:
          invoice.metadata[metadataKeys.accountId] === accountId &&
          (payment.customerId === null || invoice.customerId === payment.customerId),
        intent: "payment",
        paymentStatus: intent?.status ?? invoice.status,
        subscriptionState: null,
        invoicePaid: paid,
        methodAttached: intent?.paymentMethodId != null,
        chargedAmountMinor: charged,
        chargedCurrency,
        refundedAmountMinor: refunded,
        outcome,
        mismatch,
        declined: outcome === "pending" && intent !== null && intent.lastPaymentErrorCode !== null
      }
    }
    if (payment.subscriptionId !== null) {
      const subscription = yield* provider.retrieveSubscription(payment.subscriptionId)
      const change = payment.mode === "existing_subscription_change"
      // A change is judged by its own proration invoice only (none when it owed nothing), never an older one.
      const invoiceId = change ? payment.initialInvoiceId : (payment.initialInvoiceId ?? subscription.latestInvoiceId)
      const invoice = invoiceId === null ? null : yield* provider.retrieveInvoice(invoiceId)
      const state = isSubscriptionState(subscription.status) ? subscription.status : null
      const { charged, chargedCurrency, intent, refunded } = yield* invoicePayment(
        provider,
        invoice,
        payment.intent === "payment" ? payment.intentId : null
      )
      // A trial's continuation is its setup intent: the trial counts once a method is saved.
      const setup =
        payment.intent === "setup" && payment.intentId !== null
          ? yield* provider.retrieveSetupIntent(payment.intentId)
          : null
      const methodAttached =
        subscription.defaultPaymentMethodId !== null ||
        (setup !== null && setup.status === "succeeded" && setup.paymentMethodId !== null)
      const invoiceEnded = invoice !== null && (invoice.status === "void" || invoice.status === "uncollectible")
      const outcome: ObservationOutcome =
        charged > 0 && refunded > 0
          ? refundOutcome(charged, refunded)
          : change
            ? // A change counts once it took effect: its invoice paid (or none owed) and no update pending.
              state === "canceled" || state === "incomplete_expired" || invoiceEnded
              ? "failed"
              : (state === "active" || state === "trialing") &&
                  !subscription.pendingUpdate &&
                  (invoice === null || invoice.status === "paid")
                ? "succeeded"
                : "pending"
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
        chargedCurrency,
        refundedAmountMinor: refunded,
        outcome,
        mismatch: null,
        declined:
          outcome === "pending" &&
          ((intent !== null && intent.lastPaymentErrorCode !== null) ||
            (setup !== null && setup.lastSetupErrorCode !== null))
      }
    }
    if (payment.intent === "setup" && payment.intentId !== null) {
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
        chargedCurrency: null,
        refundedAmountMinor: 0,
        outcome: setup.status === "succeeded" ? "succeeded" : setup.status === "canceled" ? "failed" : "pending",
        mismatch: null,
        declined: setup.status === "requires_payment_method" && setup.lastSetupErrorCode !== null
      }
    }
    if (payment.intentId === null) return yield* Effect.dieMessage("customer kit: a payment without its intent")
    const intent = yield* provider.retrievePaymentIntent(payment.intentId)
    const charge = intent.latestChargeId === null ? null : yield* provider.retrieveCharge(intent.latestChargeId)
    const charged = charge?.amountMinor ?? intent.amountReceivedMinor
    const refunded = charge?.amountRefundedMinor ?? 0
    const chargedCurrency = charged > 0 ? currencyOf(charge?.currency ?? intent.currency) : null
    // A settled charge of another amount or currency than the bound one is no success, refunded or not.
    const mismatch = intent.status === "succeeded" ? chargeMismatch(payment, charged, chargedCurrency) : null
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
      chargedCurrency,
      refundedAmountMinor: refunded,
      outcome:
        mismatch !== null
          ? "failed"
          : intent.status === "succeeded"
            ? refundOutcome(charged, refunded)
            : intent.status === "canceled"
              ? "failed"
              : "pending",
      mismatch,
      declined: intent.status === "requires_payment_method" && intent.lastPaymentErrorCode !== null
    }
  })
