/**
 * The `PaymentProvider` port on the official `stripe` package: every call goes through the Stripe
 * client (no hand-written HTTP), and webhooks are verified by `stripe.webhooks.constructEventAsync`
 * over the unmodified raw body (no hand-written signature code). The async form runs on Node, Bun,
 * Deno and edge runtimes alike.
 *
 * Intents are created "with dynamic payment methods and `automatic_payment_methods.allow_redirects=never`"
 * and never with `payment_method_types`; every create carries the kit's idempotency key, so a
 * second create under one key returns the first intent.
 *
 * `apiBase` (`STRIPE_API_BASE` in the reference backend) points the client at another host, for
 * tests against a local fake: the client's `host`, `port` and `protocol` options.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { createRequire } from "node:module"
import type Stripe from "stripe"
import {
  type AccountView,
  type ChangedSubscription,
  type ChargeView,
  type CreatedSubscription,
  type InvoicePayment,
  type InvoiceView,
  type Metadata,
  type PaymentIntentView,
  PaymentProvider,
  PaymentProviderError,
  type PaymentProviderService,
  type SetupIntentView,
  type SubscriptionView,
  type VerifiedEvent,
  WebhookRejected
} from "../../core/customer/PaymentProvider.ts"

/**
 * The Stripe account the kit charges through: its secret and publishable keys, webhook secret and
 * API settings.
 */
export interface StripeProviderConfig {
  /** `sk_test_…` / `sk_live_…` (or a restricted `rk_…` key). */
  readonly secretKey: Redacted.Redacted<string>
  /** `pk_test_…` / `pk_live_…`: sent to the browser in every continuation. */
  readonly publishableKey: string
  /** The webhook endpoint's signing secret (`whsec_…`), a third secret apart from both connector secrets. */
  readonly webhookSecret: Redacted.Redacted<string>
  /** A connected account (`acct_…`) to create intents on (`Stripe-Account`); absent for platform-owned intents. */
  readonly connectedAccountId?: string
  /** Another API base URL (a local fake in tests): `http://127.0.0.1:12111`. */
  readonly apiBase?: string
  /**
   * The Stripe API version to request (default: the `stripe` package's own). Versions before
   * `2025-03-31` name an invoice's payment intent and charge on the invoice itself (`payment_intent`,
   * `charge`) and have no invoice payments; the adapter reads both shapes.
   */
  readonly apiVersion?: string
  /** Seconds a webhook timestamp may be old (default 300, the library's default). */
  readonly webhookToleranceSeconds?: number
  /** Network retries of the client (default 1); every create is idempotent. */
  readonly maxNetworkRetries?: number
  /** Per-request time-out of the client in milliseconds (default 10 s). */
  readonly timeoutMillis?: number
}

type Json = Readonly<Record<string, unknown>>

const str = (value: unknown): string | null => (typeof value === "string" ? value : null)
const num = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0)
/** An expandable field: the id whether the object was expanded or not. */
const idOf = (value: unknown): string | null =>
  typeof value === "string" ? value : typeof value === "object" && value !== null ? str((value as Json).id) : null
/** The `code` (else `decline_code`, else `type`) of a `last_payment_error` / `last_setup_error`. */
const errorCodeOf = (value: unknown): string | null => {
  if (typeof value !== "object" || value === null) return null
  const e = value as Json
  return (str(e.code) ?? str(e.decline_code) ?? str(e.type) ?? "declined").slice(0, 64)
}
const metadataOf = (value: unknown): Metadata => {
  const out: Record<string, string> = {}
  if (typeof value === "object" && value !== null) {
    for (const [key, entry] of Object.entries(value)) if (typeof entry === "string") out[key] = entry
  }
  return out
}

const paymentIntentView = (o: Json): PaymentIntentView => ({
  id: str(o.id) ?? "",
  status: str(o.status) ?? "unknown",
  amountMinor: num(o.amount),
  amountReceivedMinor: num(o.amount_received),
  currency: str(o.currency) ?? "",
  customerId: idOf(o.customer),
  latestChargeId: idOf(o.latest_charge),
  paymentMethodId: idOf(o.payment_method),
  clientSecret: str(o.client_secret),
  lastPaymentErrorCode: errorCodeOf(o.last_payment_error),
  invoiceId: idOf(o.invoice),
  allowRedirects:
    typeof o.automatic_payment_methods === "object" && o.automatic_payment_methods !== null
      ? str((o.automatic_payment_methods as Json).allow_redirects)
      : null,
  livemode: o.livemode === true,
  metadata: metadataOf(o.metadata)
})

const chargeView = (o: Json): ChargeView => ({
  id: str(o.id) ?? "",
  paymentIntentId: idOf(o.payment_intent),
  status: str(o.status) ?? "unknown",
  amountMinor: num(o.amount_captured),
  amountRefundedMinor: num(o.amount_refunded),
  currency: str(o.currency) ?? "",
  invoiceId: idOf(o.invoice),
  livemode: o.livemode === true
})

/** The subscription of an invoice: `parent.subscription_details.subscription` (older API versions: `subscription`). */
const invoiceSubscription = (o: Json): string | null => {
  const parent = typeof o.parent === "object" && o.parent !== null ? (o.parent as Json) : undefined
  const details =
    parent !== undefined && typeof parent.subscription_details === "object" && parent.subscription_details !== null
      ? (parent.subscription_details as Json)
      : undefined
  return idOf(details?.subscription) ?? idOf(o.subscription)
}

/**
 * The payment that paid an invoice. Newer API versions list it in the invoice's payments
 * (`payments.data[].payment`, the paid one first, else the default one); older versions name
 * `payment_intent` and `charge` on the invoice itself.
 */
const invoicePayment = (o: Json): { readonly paymentIntentId: string | null; readonly chargeId: string | null } => {
  const list = typeof o.payments === "object" && o.payments !== null ? (o.payments as Json) : undefined
  const data = Array.isArray(list?.data)
    ? (list.data as ReadonlyArray<unknown>).filter((x): x is Json => typeof x === "object" && x !== null)
    : []
  const chosen = data.find((p) => p.status === "paid") ?? data.find((p) => p.is_default === true) ?? data[0]
  const payment =
    chosen !== undefined && typeof chosen.payment === "object" && chosen.payment !== null
      ? (chosen.payment as Json)
      : undefined
  return {
    paymentIntentId: idOf(payment?.payment_intent) ?? idOf(o.payment_intent),
    chargeId: idOf(payment?.charge) ?? idOf(o.charge)
  }
}

const invoiceView = (o: Json): InvoiceView => ({
  id: str(o.id) ?? "",
  subscriptionId: invoiceSubscription(o),
  status: str(o.status) ?? "unknown",
  billingReason: str(o.billing_reason),
  amountPaidMinor: num(o.amount_paid),
  amountDueMinor: num(o.amount_due),
  currency: str(o.currency) ?? "",
  customerId: idOf(o.customer),
  metadata: metadataOf(o.metadata),
  ...invoicePayment(o),
  livemode: o.livemode === true
})

/** A subscription's items (`items.data`). */
const subscriptionItems = (o: Json): ReadonlyArray<Json> => {
  const items = typeof o.items === "object" && o.items !== null ? (o.items as Json) : undefined
  return Array.isArray(items?.data)
    ? (items.data as ReadonlyArray<unknown>).filter((x): x is Json => typeof x === "object" && x !== null)
    : []
}

/**
 * The client secret of the intent that collects an invoice, and that intent's id: the invoice's
 * `confirmation_secret` (API versions from 2025-03-31), else its expanded `payment_intent` (older).
 */
const invoiceConfirmation = (o: Json): { readonly intentId: string | null; readonly clientSecret: string | null } => {
  const clientSecret =
    typeof o.confirmation_secret === "object" && o.confirmation_secret !== null
      ? str((o.confirmation_secret as Json).client_secret)
      : typeof o.payment_intent === "object" && o.payment_intent !== null
        ? str((o.payment_intent as Json).client_secret)
        : null
  // A payment intent's client secret is `{intent id}_secret_{…}`.
  return { intentId: clientSecret === null ? null : (clientSecret.split("_secret_")[0] ?? null), clientSecret }
}

const subscriptionView = (o: Json): SubscriptionView => ({
  id: str(o.id) ?? "",
  status: str(o.status) ?? "unknown",
  customerId: idOf(o.customer),
  latestInvoiceId: idOf(o.latest_invoice),
  defaultPaymentMethodId: idOf(o.default_payment_method),
  trialEnd: typeof o.trial_end === "number" ? o.trial_end : null,
  priceIds: subscriptionItems(o).flatMap((item) => {
    const price = idOf(item.price)
    return price === null ? [] : [price]
  }),
  pendingUpdate: typeof o.pending_update === "object" && o.pending_update !== null,
  livemode: o.livemode === true,
  metadata: metadataOf(o.metadata)
})

const setupIntentView = (o: Json): SetupIntentView => ({
  id: str(o.id) ?? "",
  status: str(o.status) ?? "unknown",
  customerId: idOf(o.customer),
  paymentMethodId: idOf(o.payment_method),
  clientSecret: str(o.client_secret),
  lastSetupErrorCode: errorCodeOf(o.last_setup_error),
  livemode: o.livemode === true,
  metadata: metadataOf(o.metadata)
})

/** A Stripe error as the port's error: its type and code only, never its message (it may echo input). */
const providerError =
  (operation: string) =>
  (error: unknown): PaymentProviderError => {
    const e = error as { readonly type?: unknown; readonly statusCode?: unknown; readonly code?: unknown }
    const status = typeof e.statusCode === "number" ? e.statusCode : undefined
    const code = typeof e.code === "string" ? e.code.slice(0, 64) : null
    const reason =
      e.type === "StripeConnectionError" ||
      e.type === "StripeAPIError" ||
      e.type === "StripeRateLimitError" ||
      status === undefined ||
      status >= 500 ||
      status === 429
        ? "unavailable"
        : status === 404
          ? "not_found"
          : "refused"
    return new PaymentProviderError({ operation, reason, code })
  }

const apiOptions = (apiBase: string | undefined): Partial<Stripe.StripeConfig> => {
  if (apiBase === undefined) return {}
  const url = new URL(apiBase)
  const protocol = url.protocol === "http:" ? "http" : "https"
  return {
    host: url.hostname,
    port: url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port),
    protocol
  }
}

/**
 * The `stripe` package, loaded on first use: it is an optional peer dependency, so a kit without
 * Stripe payments (and anything else importing this module) never loads it nor needs it installed.
 */
let stripePackage: typeof Stripe | undefined
const loadStripe = (): typeof Stripe => {
  stripePackage ??= createRequire(import.meta.url)("stripe") as typeof Stripe
  return stripePackage
}

/**
 * The Stripe client for a configuration (also used by the doctor's checks).
 */
export const client = (
  config: Pick<StripeProviderConfig, "secretKey" | "apiBase" | "maxNetworkRetries" | "timeoutMillis">
): Stripe =>
  new (loadStripe())(Redacted.value(config.secretKey), {
    maxNetworkRetries: config.maxNetworkRetries ?? 1,
    timeout: config.timeoutMillis ?? 10_000,
    ...apiOptions(config.apiBase)
  })

/**
 * The provider account behind a secret key (`GET /v1/account`): the payment capability proof's
 * `providerAccountId`, and the doctor's installation check 1. With `connectedAccountId` (Stripe
 * Connect: a platform key acting for a connected account) the request carries `Stripe-Account`,
 * so the answer is the connected account, and an account the key may not act for is an error.
 */
export const accountOf = (
  config: Pick<
    StripeProviderConfig,
    "secretKey" | "apiBase" | "maxNetworkRetries" | "timeoutMillis" | "connectedAccountId"
  >
): Effect.Effect<AccountView, PaymentProviderError> =>
  Effect.tryPromise({
    // With a connected account, the account the credentials act for (`Stripe-Account`): the
    // connected one if the platform's key may act for it, else an error.
    try: () =>
      config.connectedAccountId === undefined
        ? client(config).accounts.retrieveCurrent()
        : client(config).accounts.retrieveCurrent({}, { stripeAccount: config.connectedAccountId }),
    catch: providerError("retrieve_account")
  }).pipe(
    Effect.map((account) => {
      const o = account as unknown as Json
      return { id: str(o.id) ?? "", chargesEnabled: typeof o.charges_enabled === "boolean" ? o.charges_enabled : null }
    })
  )

/**
 * Whether a Stripe key is a live key (`sk_live_`, `rk_live_`, `pk_live_`).
 */
export const isLiveKey = (key: string): boolean => /^(sk|rk|pk)_live_/.test(key)

/**
 * Builds the provider over one Stripe client.
 */
export const make = (config: StripeProviderConfig): PaymentProviderService => {
  const stripe = client(config)
  const connected = config.connectedAccountId
  const requestOptions = (idempotencyKey?: string): Stripe.RequestOptions => ({
    ...(connected !== undefined ? { stripeAccount: connected } : {}),
    ...(config.apiVersion !== undefined ? { apiVersion: config.apiVersion } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {})
  })
  // Before 2025-03-31 ("basil") an invoice names its payment intent and charge itself and has no payments to expand.
  const legacyInvoices = config.apiVersion !== undefined && config.apiVersion < "2025-03-31"
  /** What to expand on an invoice for the client secret of its payment, in this API version's shape. */
  const invoiceSecret = legacyInvoices ? "payment_intent" : "confirmation_secret"
  const call = <A>(
    operation: string,
    run: () => Promise<unknown>,
    view: (o: Json) => A
  ): Effect.Effect<A, PaymentProviderError> =>
    Effect.map(Effect.tryPromise({ try: run, catch: providerError(operation) }), (o) => view(o as Json))
  const tolerance = config.webhookToleranceSeconds ?? 300
  const cryptoProvider = loadStripe().createSubtleCryptoProvider()

  return {
    publishableKey: config.publishableKey,
    connectedAccountId: connected ?? null,
    livemode: isLiveKey(Redacted.value(config.secretKey)),
    webhookSignatureHeader: "stripe-signature",
    retrieveAccount: accountOf(config),
    createPaymentIntent: ({ amountMinor, currency, customerId, idempotencyKey, metadata }) =>
      call(
        "create_payment_intent",
        () =>
          stripe.paymentIntents.create(
            {
              amount: amountMinor,
              currency,
              ...(customerId !== null ? { customer: customerId } : {}),
              // Dynamic payment methods, no redirects; `payment_method_types` is never sent.
              automatic_payment_methods: { enabled: true, allow_redirects: "never" },
              metadata: { ...metadata }
            },
            requestOptions(idempotencyKey)
          ),
        paymentIntentView
      ),
    createSetupIntent: ({ customerId, idempotencyKey, metadata }) =>
      call(
        "create_setup_intent",
        () =>
          stripe.setupIntents.create(
            {
              ...(customerId !== null ? { customer: customerId } : {}),
              automatic_payment_methods: { enabled: true, allow_redirects: "never" },
              usage: "off_session",
              metadata: { ...metadata }
            },
            requestOptions(idempotencyKey)
          ),
        setupIntentView
      ),
    createSubscription: ({ customerId, idempotencyKey, metadata, priceId, trialDays }) =>
      Effect.flatMap(
        call(
          "create_subscription",
          () =>
            stripe.subscriptions.create(
              {
                customer: customerId,
                items: [{ price: priceId }],
                payment_behavior: "default_incomplete",
                payment_settings: { save_default_payment_method: "on_subscription" },
                ...(trialDays !== null ? { trial_period_days: trialDays } : {}),
                metadata: { ...metadata },
                expand: [`latest_invoice.${invoiceSecret}`, "pending_setup_intent"]
              },
              requestOptions(idempotencyKey)
            ),
          (o) => o
        ),
        (o): Effect.Effect<CreatedSubscription, PaymentProviderError> => {
          const subscription = subscriptionView(o)
          const setup =
            typeof o.pending_setup_intent === "object" && o.pending_setup_intent !== null
              ? setupIntentView(o.pending_setup_intent as Json)
              : undefined
          if (setup !== undefined && setup.clientSecret !== null) {
            return Effect.succeed({
              subscription,
              intent: "setup",
              intentId: setup.id,
              clientSecret: setup.clientSecret
            })
          }
          const invoice =
            typeof o.latest_invoice === "object" && o.latest_invoice !== null ? (o.latest_invoice as Json) : {}
          const { clientSecret: confirmation, intentId } = invoiceConfirmation(invoice)
          if (confirmation === null || intentId === null) {
            return Effect.fail(
              new PaymentProviderError({
                operation: "create_subscription",
                reason: "refused",
                code: "no_client_secret"
              })
            )
          }
          return Effect.succeed({ subscription, intent: "payment", intentId, clientSecret: confirmation })
        }
      ),
    changeSubscription: ({ idempotencyKey, metadata, priceId, proration, subscriptionId }) =>
      Effect.gen(function* () {
        const current = yield* call(
          "retrieve_subscription",
          () => stripe.subscriptions.retrieve(subscriptionId, {}, requestOptions()),
          (o) => o
        )
        const [item, ...others] = subscriptionItems(current)
        // Only a subscription of one item has one obvious item to move to the new price.
        if (item === undefined || others.length > 0 || str(item.id) === null) {
          return yield* new PaymentProviderError({
            operation: "update_subscription",
            reason: "refused",
            code: "not_one_item"
          })
        }
        const updated = yield* call(
          "update_subscription",
          () =>
            stripe.subscriptions.update(
              subscriptionId,
              {
                items: [{ id: str(item.id)!, price: priceId }],
                proration_behavior: proration,
                // Applied only once its invoice is paid: an unpaid change never takes effect. A pending
                // update takes no metadata (an error before API version 2026-05-27, held until payment
                // after): the action's bindings go on the proration invoice instead.
                payment_behavior: "pending_if_incomplete",
                expand: [`latest_invoice.${invoiceSecret}`]
              },
              requestOptions(idempotencyKey)
            ),
          (o) => o
        )
        const invoice =
          typeof updated.latest_invoice === "object" && updated.latest_invoice !== null
            ? (updated.latest_invoice as Json)
            : undefined
        // The proration invoice this change made, when it made one (the previous latest invoice is not).
        const made =
          invoice !== undefined && str(invoice.billing_reason) === "subscription_update" ? invoice : undefined
        const confirmation = made === undefined ? { intentId: null, clientSecret: null } : invoiceConfirmation(made)
        if (made !== undefined) {
          yield* call(
            "update_invoice",
            () =>
              stripe.invoices.update(
                str(made.id)!,
                { metadata: { ...metadata } },
                requestOptions(`${idempotencyKey}:invoice`)
              ),
            (o) => o
          )
        }
        return {
          subscription: subscriptionView(updated),
          invoiceId: made === undefined ? null : str(made.id),
          ...confirmation
        } satisfies ChangedSubscription
      }),
    retrieveInvoicePayment: (invoiceId) =>
      call(
        "retrieve_invoice",
        () => stripe.invoices.retrieve(invoiceId, { expand: [invoiceSecret] }, requestOptions()),
        (o): InvoicePayment => ({ invoice: invoiceView(o), ...invoiceConfirmation(o) })
      ),
    bindInvoice: ({ idempotencyKey, invoiceId, metadata }) =>
      call(
        "update_invoice",
        () => stripe.invoices.update(invoiceId, { metadata: { ...metadata } }, requestOptions(idempotencyKey)),
        invoiceView
      ),
    voidInvoice: (id) => call("void_invoice", () => stripe.invoices.voidInvoice(id, {}, requestOptions()), invoiceView),
    retrievePaymentIntent: (id) =>
      call(
        "retrieve_payment_intent",
        () => stripe.paymentIntents.retrieve(id, {}, requestOptions()),
        paymentIntentView
      ),
    retrieveCharge: (id) =>
      call("retrieve_charge", () => stripe.charges.retrieve(id, {}, requestOptions()), chargeView),
    retrieveInvoice: (id) =>
      call(
        "retrieve_invoice",
        () => stripe.invoices.retrieve(id, legacyInvoices ? {} : { expand: ["payments"] }, requestOptions()),
        invoiceView
      ),
    retrieveSubscription: (id) =>
      call("retrieve_subscription", () => stripe.subscriptions.retrieve(id, {}, requestOptions()), subscriptionView),
    retrieveSetupIntent: (id) =>
      call("retrieve_setup_intent", () => stripe.setupIntents.retrieve(id, {}, requestOptions()), setupIntentView),
    findInvoiceOfPaymentIntent: (paymentIntentId) =>
      legacyInvoices
        ? // Older versions name the invoice on the intent itself.
          call(
            "retrieve_payment_intent",
            () => stripe.paymentIntents.retrieve(paymentIntentId, {}, requestOptions()),
            (o) => idOf(o.invoice)
          )
        : call(
            "list_invoice_payments",
            () =>
              stripe.invoicePayments.list(
                { payment: { type: "payment_intent", payment_intent: paymentIntentId }, limit: 1 },
                requestOptions()
              ),
            (o) => {
              const data = Array.isArray(o.data) ? (o.data as ReadonlyArray<unknown>) : []
              const first = data[0]
              return typeof first === "object" && first !== null ? idOf((first as Json).invoice) : null
            }
          ),
    cancelPaymentIntent: (id) =>
      call(
        "cancel_payment_intent",
        () => stripe.paymentIntents.cancel(id, { cancellation_reason: "abandoned" }, requestOptions()),
        paymentIntentView
      ),
    cancelSetupIntent: (id) =>
      call(
        "cancel_setup_intent",
        () => stripe.setupIntents.cancel(id, { cancellation_reason: "abandoned" }, requestOptions()),
        setupIntentView
      ),
    cancelSubscription: (id) =>
      call("cancel_subscription", () => stripe.subscriptions.cancel(id, {}, requestOptions()), subscriptionView),
    verifyWebhook: ({ body, signature }) =>
      Effect.gen(function* () {
        if (signature === undefined || signature.trim() === "")
          return yield* new WebhookRejected({ reason: "missing_signature" })
        const now = yield* Clock.currentTimeMillis
        const event = yield* Effect.tryPromise({
          try: () =>
            stripe.webhooks.constructEventAsync(
              body,
              signature,
              Redacted.value(config.webhookSecret),
              tolerance,
              cryptoProvider,
              now
            ),
          catch: (error) =>
            new WebhookRejected({
              reason:
                error instanceof SyntaxError
                  ? "not_json"
                  : String((error as { readonly message?: unknown }).message ?? "").startsWith("Timestamp outside")
                    ? "stale_timestamp"
                    : "bad_signature"
            })
        })
        const raw = event as unknown as Json
        const data = typeof raw.data === "object" && raw.data !== null ? (raw.data as Json) : {}
        const object = typeof data.object === "object" && data.object !== null ? (data.object as Json) : {}
        const id = str(raw.id)
        const type = str(raw.type)
        const objectId = str(object.id)
        if (id === null || type === null || objectId === null) return yield* new WebhookRejected({ reason: "not_json" })
        return {
          id,
          type,
          livemode: raw.livemode === true,
          created: num(raw.created),
          objectId,
          objectType: str(object.object) ?? ""
        } satisfies VerifiedEvent
      })
  }
}

/** Provides a `PaymentProvider` over Stripe; the `stripe` package is loaded on first use. */
export const layer = (config: StripeProviderConfig): Layer.Layer<PaymentProvider> =>
  Layer.sync(PaymentProvider, () => make(config))
