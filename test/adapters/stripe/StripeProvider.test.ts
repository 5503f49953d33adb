/**
 * The Stripe adapter of the `PaymentProvider` port, offline: the official `stripe` client pointed
 * at a local fake Stripe API (`FakeStripe.ts`), webhooks signed with
 * `stripe.webhooks.generateTestHeaderString`. One test per webhook rejection reason.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as StripeProvider from "../../../adapters/stripe/StripeProvider.ts"
import type { PaymentProviderService } from "../../../core/customer/PaymentProvider.ts"
import { type FakeStripe, startFakeStripe } from "./FakeStripe.ts"

const webhookSecret = "whsec_test_provider_0123456789abcdef"
let fake: FakeStripe
let provider: PaymentProviderService

const encoder = new TextEncoder()
const metadata = { accord_account_id: "acct_42", accord_idempotency_key: "pva_" + "a".repeat(64) }

beforeAll(async () => {
  fake = await startFakeStripe({ webhookSecret })
  provider = StripeProvider.make({
    secretKey: Redacted.make(fake.secretKey),
    publishableKey: "pk_test_fake",
    webhookSecret: Redacted.make(webhookSecret),
    apiBase: fake.apiBase,
    maxNetworkRetries: 0
  })
})
afterAll(() => fake.close())

const rejection = (delivery: { readonly payload: string; readonly header: string | undefined }) =>
  Effect.flip(provider.verifyWebhook({ body: encoder.encode(delivery.payload), signature: delivery.header }))

describe("StripeProvider", () => {
  it.live(
    "creates a payment intent with dynamic payment methods, redirects never, no payment_method_types, idempotently",
    () =>
      Effect.gen(function* () {
        const input = { amountMinor: 4900, currency: "usd", customerId: null, metadata, idempotencyKey: "pva_key_1" }
        const first = yield* provider.createPaymentIntent(input)
        const again = yield* provider.createPaymentIntent(input)
        assert.strictEqual(again.id, first.id, "the same idempotency key returns the same intent")
        assert.strictEqual(first.amountMinor, 4900)
        assert.strictEqual(first.allowRedirects, "never")
        assert.match(first.clientSecret ?? "", /_secret_/)
        const sent = fake.requests.filter((r) => r.path === "/v1/payment_intents" && r.idempotencyKey === "pva_key_1")
        assert.strictEqual(sent.length, 2)
        for (const request of sent) {
          assert.deepStrictEqual(request.params.automatic_payment_methods, {
            enabled: "true",
            allow_redirects: "never"
          })
          assert.notProperty(request.params, "payment_method_types")
          assert.deepStrictEqual(request.params.metadata, metadata)
        }
      })
  )

  it.live("creates a setup intent with redirects never", () =>
    Effect.gen(function* () {
      const setup = yield* provider.createSetupIntent({ customerId: "cus_1", metadata, idempotencyKey: "pva_key_2" })
      assert.strictEqual(setup.status, "requires_payment_method")
      const sent = fake.requests.find((r) => r.idempotencyKey === "pva_key_2")!
      assert.deepStrictEqual(sent.params.automatic_payment_methods, { enabled: "true", allow_redirects: "never" })
      assert.notProperty(sent.params, "payment_method_types")
    })
  )

  it.live(
    "creates an incomplete subscription and returns the initial invoice's client secret, or the trial's setup intent",
    () =>
      Effect.gen(function* () {
        const paid = yield* provider.createSubscription({
          customerId: "cus_1",
          priceId: "price_monthly",
          trialDays: null,
          metadata,
          idempotencyKey: "pva_key_3"
        })
        assert.strictEqual(paid.intent, "payment")
        assert.match(paid.intentId, /^pi_/)
        assert.strictEqual(paid.subscription.status, "incomplete")
        const trial = yield* provider.createSubscription({
          customerId: "cus_1",
          priceId: "price_monthly",
          trialDays: 14,
          metadata,
          idempotencyKey: "pva_key_4"
        })
        assert.strictEqual(trial.intent, "setup")
        assert.strictEqual(trial.subscription.status, "trialing")
        const sent = fake.requests.find((r) => r.idempotencyKey === "pva_key_3")!
        assert.strictEqual(sent.params.payment_behavior, "default_incomplete")
      })
  )

  it.live("reads a payment intent, its charge, a subscription, its invoice and a setup intent back", () =>
    Effect.gen(function* () {
      const intent = yield* provider.createPaymentIntent({
        amountMinor: 1200,
        currency: "eur",
        customerId: null,
        metadata,
        idempotencyKey: "pva_key_5"
      })
      fake.succeed(intent.id)
      fake.refund(intent.id, 200)
      const read = yield* provider.retrievePaymentIntent(intent.id)
      assert.strictEqual(read.status, "succeeded")
      assert.deepStrictEqual(read.metadata, metadata)
      const charge = yield* provider.retrieveCharge(read.latestChargeId!)
      assert.deepStrictEqual(
        [charge.paymentIntentId, charge.amountMinor, charge.amountRefundedMinor],
        [intent.id, 1200, 200]
      )
      const created = yield* provider.createSubscription({
        customerId: "cus_2",
        priceId: "price_monthly",
        trialDays: null,
        metadata,
        idempotencyKey: "pva_key_6"
      })
      fake.payInitialInvoice(created.subscription.id)
      const subscription = yield* provider.retrieveSubscription(created.subscription.id)
      assert.strictEqual(subscription.status, "active")
      const invoice = yield* provider.retrieveInvoice(subscription.latestInvoiceId!)
      assert.deepStrictEqual(
        [invoice.status, invoice.billingReason, invoice.subscriptionId],
        ["paid", "subscription_create", subscription.id]
      )
      const setup = yield* provider.createSetupIntent({ customerId: null, metadata, idempotencyKey: "pva_key_7" })
      fake.confirmSetup(setup.id)
      assert.strictEqual((yield* provider.retrieveSetupIntent(setup.id)).paymentMethodId, "pm_card_visa")
    })
  )

  it.live("an unknown object is not_found, an outage unavailable, a wrong key refused; no key in the error", () =>
    Effect.gen(function* () {
      const missing = yield* Effect.flip(provider.retrievePaymentIntent("pi_missing"))
      assert.strictEqual(missing.reason, "not_found")
      fake.outage = true
      const down = yield* Effect.flip(provider.retrieveCharge("ch_x"))
      fake.outage = false
      assert.strictEqual(down.reason, "unavailable")
      const wrong = StripeProvider.make({
        secretKey: Redacted.make("sk_test_wrong_key_000"),
        publishableKey: "pk_test_fake",
        webhookSecret: Redacted.make(webhookSecret),
        apiBase: fake.apiBase,
        maxNetworkRetries: 0
      })
      const refused = yield* Effect.flip(wrong.retrieveCharge("ch_x"))
      assert.strictEqual(refused.reason, "refused")
      assert.notInclude(JSON.stringify(refused), "sk_test_wrong_key_000")
    })
  )

  it.live("sends Stripe-Account for a connected account", () =>
    Effect.gen(function* () {
      const connected = StripeProvider.make({
        secretKey: Redacted.make(fake.secretKey),
        publishableKey: "pk_test_fake",
        webhookSecret: Redacted.make(webhookSecret),
        apiBase: fake.apiBase,
        connectedAccountId: "acct_connected_1",
        maxNetworkRetries: 0
      })
      assert.strictEqual(connected.connectedAccountId, "acct_connected_1")
      yield* connected.createPaymentIntent({
        amountMinor: 100,
        currency: "usd",
        customerId: null,
        metadata,
        idempotencyKey: "pva_key_8"
      })
      assert.strictEqual(fake.requests.find((r) => r.idempotencyKey === "pva_key_8")!.stripeAccount, "acct_connected_1")
    })
  )

  it.live("verifies a correctly signed webhook over the raw body", () =>
    Effect.gen(function* () {
      const delivery = fake.event("payment_intent.succeeded", { id: "pi_123", object: "payment_intent" })
      const event = yield* provider.verifyWebhook({
        body: encoder.encode(delivery.payload),
        signature: delivery.header
      })
      assert.deepStrictEqual(
        [event.id, event.type, event.objectId, event.objectType, event.livemode],
        [delivery.id, "payment_intent.succeeded", "pi_123", "payment_intent", false]
      )
    })
  )

  describe("webhook rejections", () => {
    const object = { id: "pi_123", object: "payment_intent" }
    it.live("no signature header", () =>
      Effect.map(rejection({ ...fake.event("charge.refunded", object), header: undefined }), (e) =>
        assert.strictEqual(e.reason, "missing_signature")
      )
    )
    it.live("a body changed after signing (re-serialized)", () =>
      Effect.map(
        rejection(
          (() => {
            const delivery = fake.event("charge.refunded", object)
            return { ...delivery, payload: JSON.stringify(JSON.parse(delivery.payload)) }
          })()
        ),
        (e) => assert.strictEqual(e.reason, "bad_signature")
      )
    )
    it.live("signed with another endpoint's secret", () =>
      Effect.map(rejection(fake.event("charge.refunded", object, { secret: "whsec_other_endpoint" })), (e) =>
        assert.strictEqual(e.reason, "bad_signature")
      )
    )
    it.live("a malformed signature header", () =>
      Effect.map(rejection({ ...fake.event("charge.refunded", object), header: "v1=abc" }), (e) =>
        assert.strictEqual(e.reason, "bad_signature")
      )
    )
    it.live("a stale timestamp", () =>
      Effect.map(
        rejection(fake.event("charge.refunded", object, { timestamp: Math.floor(Date.now() / 1000) - 301 })),
        (e) => assert.strictEqual(e.reason, "stale_timestamp")
      )
    )
    it.live("a correctly signed body that is not JSON", () =>
      Effect.map(rejection({ payload: "not json", header: fake.sign("not json") }), (e) =>
        assert.strictEqual(e.reason, "not_json")
      )
    )
    it.live("a correctly signed JSON body that is not an event", () =>
      Effect.map(rejection({ payload: "[1,2]", header: fake.sign("[1,2]") }), (e) =>
        assert.strictEqual(e.reason, "not_json")
      )
    )
  })
})

describe("StripeProvider: both invoice shapes, connected accounts, cancel", () => {
  const providerFor = (
    f: FakeStripe,
    extra: { readonly apiVersion?: string; readonly connectedAccountId?: string } = {}
  ) =>
    StripeProvider.make({
      secretKey: Redacted.make(f.secretKey),
      publishableKey: "pk_test_fake",
      webhookSecret: Redacted.make(webhookSecret),
      apiBase: f.apiBase,
      maxNetworkRetries: 0,
      ...extra
    })

  it.live(
    "the newest shape: the invoice's intent and the intent's invoice come from invoice payments (expand[]=payments)",
    () =>
      Effect.gen(function* () {
        const f = yield* Effect.promise(() => startFakeStripe({ webhookSecret }))
        try {
          const p = providerFor(f)
          const created = yield* p.createSubscription({
            customerId: "cus_1",
            priceId: "price_monthly",
            trialDays: null,
            metadata,
            idempotencyKey: "pva_shape_new"
          })
          f.payInitialInvoice(created.subscription.id)
          const invoice = yield* p.retrieveInvoice(created.subscription.latestInvoiceId!)
          assert.strictEqual(invoice.paymentIntentId, created.intentId)
          assert.isNull(invoice.chargeId)
          assert.deepStrictEqual(f.requests.at(-1)!.params.expand, { 0: "payments" })
          assert.strictEqual(yield* p.findInvoiceOfPaymentIntent(created.intentId), invoice.id)
          assert.isNull(yield* p.findInvoiceOfPaymentIntent("pi_not_on_an_invoice"))
          const intent = yield* p.retrievePaymentIntent(created.intentId)
          assert.isNull(intent.invoiceId)
        } finally {
          yield* Effect.promise(() => f.close())
        }
      })
  )

  it.live(
    "the older shape (API versions before 2025-03-31): invoice.payment_intent, invoice.charge, intent.invoice, charge.invoice",
    () =>
      Effect.gen(function* () {
        const f = yield* Effect.promise(() => startFakeStripe({ webhookSecret, invoiceShape: "legacy" }))
        try {
          const p = providerFor(f, { apiVersion: "2024-06-20" })
          const created = yield* p.createSubscription({
            customerId: "cus_1",
            priceId: "price_monthly",
            trialDays: null,
            metadata,
            idempotencyKey: "pva_shape_old"
          })
          f.payInitialInvoice(created.subscription.id)
          const invoice = yield* p.retrieveInvoice(created.subscription.latestInvoiceId!)
          assert.strictEqual(invoice.paymentIntentId, created.intentId)
          assert.match(invoice.chargeId ?? "", /^ch_/)
          assert.notProperty(f.requests.at(-1)!.params, "expand", "no payments to expand on older versions")
          const intent = yield* p.retrievePaymentIntent(created.intentId)
          assert.strictEqual(intent.invoiceId, invoice.id)
          const charge = yield* p.retrieveCharge(invoice.chargeId!)
          assert.strictEqual(charge.invoiceId, invoice.id)
          assert.strictEqual(yield* p.findInvoiceOfPaymentIntent(created.intentId), invoice.id)
          assert.isFalse(f.requests.some((r) => r.path === "/v1/invoice_payments"))
        } finally {
          yield* Effect.promise(() => f.close())
        }
      })
  )

  it.live("a connected account: every call carries Stripe-Account; the platform alone does not see its objects", () =>
    Effect.gen(function* () {
      const f = yield* Effect.promise(() => startFakeStripe({ webhookSecret }))
      try {
        const p = providerFor(f, { connectedAccountId: "acct_1Connected0002" })
        assert.strictEqual(p.connectedAccountId, "acct_1Connected0002")
        const intent = yield* p.createPaymentIntent({
          amountMinor: 900,
          currency: "usd",
          customerId: null,
          metadata,
          idempotencyKey: "pva_connected"
        })
        assert.strictEqual((yield* p.retrievePaymentIntent(intent.id)).id, intent.id)
        assert.isTrue(f.requests.every((r) => r.stripeAccount === "acct_1Connected0002"))
        const platform = providerFor(f)
        const missing = yield* Effect.flip(platform.retrievePaymentIntent(intent.id))
        assert.strictEqual(missing.reason, "not_found")
      } finally {
        yield* Effect.promise(() => f.close())
      }
    })
  )

  it.live("declines and cancels: last error codes read; an unpaid intent is canceled, a succeeded one refused", () =>
    Effect.gen(function* () {
      const intent = yield* provider.createPaymentIntent({
        amountMinor: 700,
        currency: "usd",
        customerId: null,
        metadata,
        idempotencyKey: "pva_cancel_1"
      })
      fake.decline(intent.id)
      assert.strictEqual((yield* provider.retrievePaymentIntent(intent.id)).lastPaymentErrorCode, "card_declined")
      assert.strictEqual((yield* provider.cancelPaymentIntent(intent.id)).status, "canceled")
      const paid = yield* provider.createPaymentIntent({
        amountMinor: 700,
        currency: "usd",
        customerId: null,
        metadata,
        idempotencyKey: "pva_cancel_2"
      })
      fake.succeed(paid.id)
      const refused = yield* Effect.flip(provider.cancelPaymentIntent(paid.id))
      assert.strictEqual(refused.reason, "refused")
      const setup = yield* provider.createSetupIntent({ customerId: null, metadata, idempotencyKey: "pva_cancel_3" })
      fake.declineSetup(setup.id)
      assert.strictEqual((yield* provider.retrieveSetupIntent(setup.id)).lastSetupErrorCode, "card_declined")
      assert.strictEqual((yield* provider.cancelSetupIntent(setup.id)).status, "canceled")
      const sub = yield* provider.createSubscription({
        customerId: "cus_1",
        priceId: "price_monthly",
        trialDays: null,
        metadata,
        idempotencyKey: "pva_cancel_4"
      })
      assert.strictEqual((yield* provider.cancelSubscription(sub.subscription.id)).status, "canceled")
    })
  )
})
