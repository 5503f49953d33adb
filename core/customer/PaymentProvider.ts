/**
 * The customer kit's payment provider port (spec "Payment continuation object", "Payment
 * observation", "Handler rules", "Authentication" 7): what the kit needs from the provider that
 * owns the money, in the provider's own terms but with no provider library in sight.
 *
 * - create an intent "with dynamic payment methods and `automatic_payment_methods.allow_redirects=never`",
 *   never naming `payment_method_types` (there is no way to pass them through this port);
 * - move a subscription to another price (prorated, applied only once its invoice is paid), write
 *   an action's bindings on an invoice it pays, void an invoice left unpaid;
 * - read a payment intent, charge, invoice, subscription or setup intent back ("Read the provider
 *   resource independently when reconciling the final outcome");
 * - verify a webhook "against the unmodified raw body with that endpoint's own webhook signing
 *   secret", which only the adapter holds.
 *
 * Every create takes an idempotency key, which the kit sets to the action's
 * `providerIdempotencyKey`: two concurrent deliveries of one execution create one intent.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"

/**
 * Metadata the kit writes on every object it creates: the action's bindings ("Keep the original
 * payment, account and amount binding"). A webhook is matched to its action through these, read
 * back from the provider, never from the webhook body.
 */
export const metadataKeys = {
  workspaceId: "accord_workspace_id",
  accountId: "accord_account_id",
  actionRequestId: "accord_action_request_id",
  actionId: "accord_action_id",
  providerIdempotencyKey: "accord_idempotency_key",
  decisionId: "accord_decision_id",
  journeyId: "accord_journey_id",
  offerId: "accord_offer_id",
  publishedVersionId: "accord_published_version_id"
} as const

/**
 * Key-value metadata stored with a provider object; the kit writes the action's identifiers there.
 */
export type Metadata = Readonly<Record<string, string>>

/**
 * What the kit reads of a payment intent: status, amounts, currency, customer, latest charge,
 * invoice and metadata.
 */
export interface PaymentIntentView {
  readonly id: string
  /** `requires_payment_method`, `requires_confirmation`, `requires_action`, `processing`, `succeeded`, `canceled`, … */
  readonly status: string
  readonly amountMinor: number
  readonly amountReceivedMinor: number
  readonly currency: string
  readonly customerId: string | null
  readonly latestChargeId: string | null
  readonly paymentMethodId: string | null
  readonly clientSecret: string | null
  /** What the provider reports for `automatic_payment_methods.allow_redirects` (null when unset). */
  readonly allowRedirects: string | null
  /**
   * The code of the last declined attempt (`card_declined`, …), null when none failed: a declined
   * intent is back at `requires_payment_method`, and the customer may retry it with another method.
   */
  readonly lastPaymentErrorCode: string | null
  /** The invoice the intent pays, where the provider still names it on the intent (older API versions). */
  readonly invoiceId: string | null
  readonly livemode: boolean
  readonly metadata: Metadata
}

/**
 * What the kit reads of a charge: the intent and invoice it paid, status, amount, refunds and
 * currency.
 */
export interface ChargeView {
  readonly id: string
  readonly paymentIntentId: string | null
  readonly status: string
  /** The amount captured. */
  readonly amountMinor: number
  readonly amountRefundedMinor: number
  readonly currency: string
  /** The invoice the charge pays, where the provider still names it on the charge (older API versions). */
  readonly invoiceId: string | null
  readonly livemode: boolean
}

/**
 * What the kit reads of an invoice: its subscription, status, billing reason, amount paid and the
 * payment behind it.
 */
export interface InvoiceView {
  readonly id: string
  readonly subscriptionId: string | null
  /** `draft`, `open`, `paid`, `uncollectible`, `void`. */
  readonly status: string
  /** `subscription_create` for a subscription's initial invoice, `subscription_cycle` for a renewal, … */
  readonly billingReason: string | null
  readonly amountPaidMinor: number
  /** What is still owed: an open invoice's amount to collect. */
  readonly amountDueMinor: number
  readonly currency: string
  readonly customerId: string | null
  /**
   * The invoice's own metadata: the kit writes an action's bindings here when the action pays this
   * very invoice (a recovery, a subscription change's proration invoice).
   */
  readonly metadata: Metadata
  /**
   * The payment intent that pays the invoice: newer API versions name it in the invoice's payments
   * (`payments.data[].payment.payment_intent`), older ones on the invoice (`payment_intent`).
   */
  readonly paymentIntentId: string | null
  /** The charge that paid the invoice, where the provider names one (`payments.data[].payment.charge`, or `charge` on older versions). */
  readonly chargeId: string | null
  readonly livemode: boolean
}

/**
 * What the kit reads of a subscription: status, customer, latest invoice, payment method, trial end
 * and metadata.
 */
export interface SubscriptionView {
  readonly id: string
  readonly status: string
  readonly customerId: string | null
  readonly latestInvoiceId: string | null
  readonly defaultPaymentMethodId: string | null
  readonly trialEnd: number | null
  /** The prices its items subscribe to now. */
  readonly priceIds: ReadonlyArray<string>
  /** A change still waiting for its invoice to be paid (applied only then). */
  readonly pendingUpdate: boolean
  readonly livemode: boolean
  readonly metadata: Metadata
}

/** What the kit reads of a setup intent: id, status, customer, payment method and metadata. */
export interface SetupIntentView {
  readonly id: string
  /** `requires_payment_method`, `requires_confirmation`, `requires_action`, `processing`, `succeeded`, `canceled`. */
  readonly status: string
  readonly customerId: string | null
  readonly paymentMethodId: string | null
  readonly clientSecret: string | null
  /** The code of the last failed setup attempt, null when none failed (the customer may retry). */
  readonly lastSetupErrorCode: string | null
  readonly livemode: boolean
  readonly metadata: Metadata
}

/**
 * A subscription created incomplete, with the client secret the payment element confirms: the
 * initial invoice's payment, or a setup intent when the subscription starts with a trial.
 */
export interface CreatedSubscription {
  readonly subscription: SubscriptionView
  readonly intent: "payment" | "setup"
  readonly intentId: string
  readonly clientSecret: string
}

/**
 * A subscription moved to another price (`existing_subscription_change`), with the proration
 * invoice the change made and, when that invoice asks for a payment, the client secret the payment
 * element confirms. `clientSecret` is null when nothing is owed now (a downgrade, a credit, or
 * prorations left for the next invoice): the change is then applied at once.
 */
export interface ChangedSubscription {
  readonly subscription: SubscriptionView
  readonly invoiceId: string | null
  readonly intentId: string | null
  readonly clientSecret: string | null
}

/**
 * An invoice with the intent that collects it and that intent's client secret (a recovery pays an
 * open invoice through them); both null when the invoice asks for no payment.
 */
export interface InvoicePayment {
  readonly invoice: InvoiceView
  readonly intentId: string | null
  readonly clientSecret: string | null
}

/** How a subscription change is prorated (the catalog operation's `proration`). */
export type ProrationBehavior = "always_invoice" | "create_prorations" | "none"

/**
 * A webhook event whose signature verified. Only what locates the provider object to read back:
 * "Neither a browser success screen nor an unverified webhook is payment evidence", and a verified
 * one is evidence only that something happened to that object.
 */
export interface VerifiedEvent {
  readonly id: string
  readonly type: string
  readonly livemode: boolean
  /** Seconds since the epoch, as the provider writes it. */
  readonly created: number
  readonly objectId: string
  readonly objectType: string
}

/**
 * The provider refused or could not answer a call. `reason`: `unavailable` (network, 5xx, rate
 * limit: try again later), `not_found`, `refused` (the provider rejected the request). Never
 * carries a key or a client secret.
 */
export class PaymentProviderError extends Data.TaggedError("PaymentProviderError")<{
  readonly operation: string
  readonly reason: "unavailable" | "not_found" | "refused"
  readonly code: string | null
}> {}

/**
 * A webhook that is not the provider's: no or a malformed signature header, a signature that does
 * not match the raw body, a timestamp outside the tolerance, or a body that is not a JSON event.
 */
export class WebhookRejected extends Data.TaggedError("WebhookRejected")<{
  readonly reason: "missing_signature" | "bad_signature" | "stale_timestamp" | "not_json"
}> {}

/**
 * The provider account behind the credentials (with a connected account: the one they act for).
 */
export interface AccountView {
  readonly id: string
  readonly chargesEnabled: boolean | null
}

/**
 * The payment provider port: the browser-safe key, creating and reading intents, charges, invoices
 * and subscriptions, and verifying webhooks.
 */
export interface PaymentProviderService {
  /** Browser-safe key the payment element is mounted with. */
  readonly publishableKey: string
  /** The connected account intents are created on, or `null` for platform-owned intents. */
  readonly connectedAccountId: string | null
  /** Whether the secret key is a live key. */
  readonly livemode: boolean
  /** The request header carrying the webhook signature (`stripe-signature`). */
  readonly webhookSignatureHeader: string
  /**
   * Reads the account the credentials act for (the capability proof's account,
   * `ProviderAccount.ts`); an unreachable provider or a refused key fails.
   */
  readonly retrieveAccount: Effect.Effect<AccountView, PaymentProviderError>
  /** Creates a payment intent for the action's price, idempotently under the action's key. */
  readonly createPaymentIntent: (input: {
    readonly amountMinor: number
    readonly currency: string
    readonly customerId: string | null
    readonly metadata: Metadata
    readonly idempotencyKey: string
  }) => Effect.Effect<PaymentIntentView, PaymentProviderError>
  /** Creates a setup intent (saving a payment method), idempotently under the action's key. */
  readonly createSetupIntent: (input: {
    readonly customerId: string | null
    readonly metadata: Metadata
    readonly idempotencyKey: string
  }) => Effect.Effect<SetupIntentView, PaymentProviderError>
  /**
   * Creates a subscription to a price, with an optional trial, idempotently under the action's key.
   */
  readonly createSubscription: (input: {
    readonly customerId: string
    readonly priceId: string
    readonly trialDays: number | null
    readonly metadata: Metadata
    readonly idempotencyKey: string
  }) => Effect.Effect<CreatedSubscription, PaymentProviderError>
  /**
   * Moves the subscription's one item to `priceId`, prorated as `proration`. The change waits for
   * its invoice to be paid (`pending_if_incomplete`): an unpaid change never takes effect. The
   * action's bindings are written on the proration invoice (the subscription's stay those of the
   * action that made it), so the events of that invoice reach this action.
   */
  readonly changeSubscription: (input: {
    readonly subscriptionId: string
    readonly priceId: string
    readonly proration: ProrationBehavior
    readonly metadata: Metadata
    readonly idempotencyKey: string
  }) => Effect.Effect<ChangedSubscription, PaymentProviderError>
  /** An invoice with the intent that collects it and its client secret. */
  readonly retrieveInvoicePayment: (invoiceId: string) => Effect.Effect<InvoicePayment, PaymentProviderError>
  /** Writes the action's bindings on an invoice it pays (a recovery). */
  readonly bindInvoice: (input: {
    readonly invoiceId: string
    readonly metadata: Metadata
    readonly idempotencyKey: string
  }) => Effect.Effect<InvoiceView, PaymentProviderError>
  /** Ends an invoice left unpaid when its offer expired (idempotent; refused once paid). */
  readonly voidInvoice: (id: string) => Effect.Effect<InvoiceView, PaymentProviderError>
  /** Reads a payment intent's current state from the provider. */
  readonly retrievePaymentIntent: (id: string) => Effect.Effect<PaymentIntentView, PaymentProviderError>
  /** Reads a charge's current state from the provider. */
  readonly retrieveCharge: (id: string) => Effect.Effect<ChargeView, PaymentProviderError>
  /** Reads an invoice's current state from the provider. */
  readonly retrieveInvoice: (id: string) => Effect.Effect<InvoiceView, PaymentProviderError>
  /** Reads a subscription's current state from the provider. */
  readonly retrieveSubscription: (id: string) => Effect.Effect<SubscriptionView, PaymentProviderError>
  /** Reads a setup intent's current state from the provider. */
  readonly retrieveSetupIntent: (id: string) => Effect.Effect<SetupIntentView, PaymentProviderError>
  /**
   * The invoice a payment intent pays, if any (a subscription's invoice payment carries no kit
   * metadata of its own): on newer API versions looked up through the provider's invoice payments.
   */
  readonly findInvoiceOfPaymentIntent: (paymentIntentId: string) => Effect.Effect<string | null, PaymentProviderError>
  /**
   * Ends an offer that expired unpaid (`Payments.ts`, continuation expiry): cancels the intent, or
   * the incomplete subscription, so a late attempt cannot charge. Idempotent; refused when the
   * object can no longer be canceled (it succeeded or is processing meanwhile).
   */
  readonly cancelPaymentIntent: (id: string) => Effect.Effect<PaymentIntentView, PaymentProviderError>
  /**
   * Cancels a setup intent whose offer expired unconfirmed, so a late attempt cannot complete it.
   */
  readonly cancelSetupIntent: (id: string) => Effect.Effect<SetupIntentView, PaymentProviderError>
  /** Cancels a subscription whose offer expired unpaid, so a late attempt cannot charge. */
  readonly cancelSubscription: (id: string) => Effect.Effect<SubscriptionView, PaymentProviderError>
  /**
   * Verifies a webhook over the unmodified raw body with the webhook signing secret (a third
   * secret, apart from both connector secrets) and decodes the event.
   */
  readonly verifyWebhook: (input: {
    readonly body: Uint8Array
    readonly signature: string | undefined
  }) => Effect.Effect<VerifiedEvent, WebhookRejected>
}

/** The service tag of the kit's payment provider (Stripe in `accord/kit/stripe`). */
export class PaymentProvider extends Context.Tag("@accord/core/customer/PaymentProvider")<
  PaymentProvider,
  PaymentProviderService
>() {}
