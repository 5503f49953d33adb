/**
 * Payments in the customer kit (`makeCustomerKit` with `payments.stripe`), offline: the official
 * `stripe` client against a local fake Stripe API, a real HTTP sink as the service's completion
 * route. The continuation in the acknowledgement, the webhook route (one test per rejection
 * reason), completions read back from the provider, refunds, out-of-order and duplicate events,
 * and completion delivery retried through the outbox.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { type CustomerKit, CustomerKitOptionsError, makeCustomerKit } from "../../../adapters/customer/Kit.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import type { PaymentPlan } from "../../../core/customer/Payments.ts"
import type { ProviderAccountState } from "../../../core/customer/ProviderAccount.ts"
import { HandshakeAck } from "../../../core/protocol/messages/Handshake.ts"
import { Acknowledgement } from "../../../core/protocol/messages/Acknowledgement.ts"
import type { Completion } from "../../../core/protocol/messages/Completion.ts"
import { PaymentObservation } from "../../../core/protocol/messages/Reconciliation.ts"
import { encodeBody, freshNonce, importSigningKeys, sign, type SigningKeys } from "../../../core/protocol/Signing.ts"
import { cipherLayer } from "../../support/storage.ts"
import {
  type Body,
  executionBody,
  executionDelivery,
  handshakeDelivery,
  secrets,
  startService,
  storageLayer,
  until,
  verifyCompletion,
  verifyResponse,
  workspaceId
} from "../../support/customer.ts"
import { type FakeStripe, startFakeStripe } from "../stripe/FakeStripe.ts"

const webhookSecret = "whsec_kit_test_0123456789abcdef0123"
const decoder = new TextDecoder()

interface Harness {
  readonly kit: CustomerKit
  readonly fake: FakeStripe
  readonly service: Awaited<ReturnType<typeof startService>>
  readonly keys: SigningKeys
}
const open: Array<Harness> = []
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.kit.dispose()
    await h.fake.close()
    await h.service.down()
  }
})

const oneTime: PaymentPlan = { mode: "one_time_purchase", amountMinor: 4900, currency: "usd", customerId: "cus_42" }

const harness = (
  plan: (family: string) => PaymentPlan | undefined = () => oneTime,
  continuationMillis?: number,
  stripeOptions: {
    readonly invoiceShape?: "payments" | "legacy"
    readonly apiVersion?: string
    /** Stripe answers 503 to everything while the kit starts. */
    readonly outageAtStart?: boolean
    /** The kit sends the capability proof for these modes (the account watched every 100 ms). */
    readonly proof?: ReadonlyArray<"one_time_purchase" | "setup_only" | "new_subscription">
    readonly onAccountChange?: (state: ProviderAccountState) => void
  } = {}
) =>
  Effect.promise(async (): Promise<Harness> => {
    const fake = await startFakeStripe({
      webhookSecret,
      ...(stripeOptions.invoiceShape !== undefined ? { invoiceShape: stripeOptions.invoiceShape } : {})
    })
    fake.outage = stripeOptions.outageAtStart === true
    const service = await startService()
    const kit = await makeCustomerKit({
      workspaceId,
      secrets,
      serviceUrl: service.url,
      allowInsecureServiceUrl: true,
      storage: MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)),
      worker: { pollMillis: 20, backoff: { baseMillis: 20, capMillis: 100 } },
      executor: {
        execute: async () => {
          throw new Error("a Payment action never reaches the executor")
        },
        lookup: async () => undefined
      },
      payments: {
        stripe: {
          secretKey: Redacted.make(fake.secretKey),
          publishableKey: "pk_test_fake_publishable",
          webhookSecret: Redacted.make(webhookSecret),
          apiBase: fake.apiBase,
          maxNetworkRetries: 0,
          ...(stripeOptions.apiVersion !== undefined ? { apiVersion: stripeOptions.apiVersion } : {})
        },
        plan: async (request) => plan(request.action.operation.family),
        ...(continuationMillis !== undefined ? { continuationMillis } : {}),
        ...(stripeOptions.proof !== undefined ? { proof: { modes: [...stripeOptions.proof], livemode: false } } : {}),
        account: {
          retry: { baseMillis: 20, capMillis: 50 },
          refreshMillis: 100,
          ...(stripeOptions.onAccountChange !== undefined ? { onChange: stripeOptions.onAccountChange } : {})
        }
      }
    })
    const keys = await Effect.runPromise(Effect.provide(importSigningKeys(secrets), NodeCrypto.layer))
    const h = { kit, fake, service, keys }
    open.push(h)
    return h
  })

let counter = 0
const newActionId = () => `9d2c4e6a-8b1f-4c3d-a5e7-${String(++counter).padStart(12, "0")}`

const paymentBody = (family: string, actionRequestId = newActionId()) =>
  Effect.map(
    executionBody(actionRequestId),
    (body): Body => ({
      ...body,
      action: { ...body.action, key: "buy_addon", operation: { family, priceKey: "addon" } }
    })
  ).pipe(Effect.provide(NodeCrypto.layer))

/** One signed execution delivery through the kit's Fetch handler: status and decoded answer. */
const deliver = (h: Harness, body: Body) =>
  Effect.gen(function* () {
    const delivery = yield* executionDelivery(h.keys, body)
    const response = yield* Effect.promise(() =>
      h.kit.fetch(
        new Request("http://kit/connector", { method: "POST", headers: delivery.headers, body: delivery.body })
      )
    )
    const bytes = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
    if (response.status !== 202)
      return { status: response.status, json: JSON.parse(decoder.decode(bytes)), ack: undefined }
    const headers: Record<string, string> = {}
    response.headers.forEach((value, key) => (headers[key] = value))
    const ack = yield* verifyResponse(Acknowledgement, "dispatch_response", h.keys, { headers, body: bytes })
    return { status: response.status, json: JSON.parse(decoder.decode(bytes)), ack }
  }).pipe(Effect.provide(storageLayer()))

const webhook = (h: Harness, delivery: { readonly payload: string; readonly header?: string | undefined }) =>
  Effect.promise(async () => {
    const response = await h.kit.webhook!.fetch(
      new Request("http://kit/stripe/webhook", {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          ...(delivery.header !== undefined ? { "stripe-signature": delivery.header } : {})
        },
        body: delivery.payload
      })
    )
    return { status: response.status, json: (await response.json()) as Record<string, unknown> }
  })

/** The completions the service received, verified with the completion secret, in arrival order. */
const completions = (h: Harness) =>
  Effect.forEach(h.service.received, (received) => Effect.map(verifyCompletion(received), (c) => c as Completion)).pipe(
    // A fresh nonce store per look: the same deliveries are verified again on every look.
    Effect.provide(storageLayer())
  )
const distinctCompletions = (h: Harness) =>
  Effect.map(completions(h), (all) => [...new Map(all.map((c) => [c.completionId, c])).values()])

const waitForCompletions = (h: Harness, n: number) =>
  Effect.flatMap(
    Effect.promise(() =>
      until(
        () => new Set(h.service.received.map((r) => JSON.parse(decoder.decode(r.body)).completionId)).size >= n,
        `${n} completions`
      )
    ),
    () => distinctCompletions(h)
  )

/** Lets the kit's loops run a little (for asserting that nothing more happens). */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))

/** An accepted one-time purchase: the action's id, body and intent id. */
const accepted = (h: Harness) =>
  Effect.gen(function* () {
    const body = yield* paymentBody("payment.one_time_purchase")
    const answer = yield* deliver(h, body)
    assert.strictEqual(answer.status, 202, JSON.stringify(answer.json))
    const intentId =
      answer.ack!.state === "accepted" ? answer.ack!.continuation!.clientSecret.split("_secret_")[0]! : ""
    return { body, intentId, actionRequestId: body.actionRequestId as string }
  })

describe("kit payments: the continuation", () => {
  it.live(
    "an accepted Payment action carries the spec's continuation; the intent is bound and created without payment_method_types",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const body = yield* paymentBody("payment.one_time_purchase")
        const before = Date.now()
        const answer = yield* deliver(h, body)
        assert.strictEqual(answer.status, 202)
        const ack = answer.ack!
        assert.strictEqual(ack.state, "accepted")
        if (ack.state !== "accepted") return
        const continuation = ack.continuation!
        assert.strictEqual(continuation.kind, "provider_payment_element")
        assert.strictEqual(continuation.intent, "payment")
        assert.strictEqual(continuation.publishableKey, "pk_test_fake_publishable")
        assert.strictEqual(continuation.connectedAccountId, null)
        assert.strictEqual(continuation.allowRedirects, "never")
        const expires = Date.parse(continuation.expiresAt)
        assert.isAbove(expires, before)
        assert.isAtMost(expires, Date.now() + 3_600_000)
        const creates = h.fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/payment_intents")
        assert.strictEqual(creates.length, 1)
        const sent = creates[0]!
        assert.strictEqual(sent.idempotencyKey, body.providerIdempotencyKey)
        assert.deepStrictEqual(sent.params.automatic_payment_methods, { enabled: "true", allow_redirects: "never" })
        assert.notProperty(sent.params, "payment_method_types")
        assert.deepInclude(sent.params, { amount: "4900", currency: "usd", customer: "cus_42" })
        const metadata = sent.params.metadata as Record<string, string>
        assert.strictEqual(metadata.accord_action_request_id, body.actionRequestId)
        assert.strictEqual(metadata.accord_account_id, body.accountId)
        assert.strictEqual(metadata.accord_idempotency_key, body.providerIdempotencyKey)
        assert.strictEqual(metadata.accord_offer_id, (body.binding as Record<string, string>).offerId)
        const intent = h.fake.objects.get(continuation.clientSecret.split("_secret_")[0]!)!
        assert.strictEqual(intent.client_secret, continuation.clientSecret)
      })
  )

  it.live("a duplicate delivery gets the same continuation and never a second intent", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const body = yield* paymentBody("payment.one_time_purchase")
      const first = yield* deliver(h, body)
      const again = yield* deliver(h, body)
      assert.strictEqual(again.status, 202)
      assert.deepStrictEqual(again.json.continuation, first.json.continuation)
      assert.notStrictEqual(again.json.requestNonce, first.json.requestNonce)
      const intents = [...h.fake.objects.values()].filter((o) => o.object === "payment_intent")
      assert.strictEqual(intents.length, 1)
    })
  )

  it.live("a setup-only action gets a setup intent's continuation", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => ({ mode: "setup_only", customerId: "cus_7" }))
      const answer = yield* deliver(h, yield* paymentBody("payment.setup_only"))
      assert.strictEqual(answer.json.continuation.intent, "setup")
      assert.match(answer.json.continuation.clientSecret, /^seti_/)
    })
  )

  it.live("a Payment action the host offers no plan for is rejected, and no intent is created", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => undefined)
      const answer = yield* deliver(h, yield* paymentBody("payment.one_time_purchase"))
      assert.strictEqual(answer.status, 202)
      assert.deepInclude(answer.json, { state: "rejected", errorCode: "payment_not_offered" })
      assert.notProperty(answer.json, "continuation")
      assert.strictEqual(h.fake.requests.filter((r) => r.method === "POST").length, 0)
    })
  )

  it.live("a plan of another mode than the action's family is rejected", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => ({ mode: "setup_only" }))
      const answer = yield* deliver(h, yield* paymentBody("payment.one_time_purchase"))
      assert.deepInclude(answer.json, { state: "rejected", errorCode: "payment_not_offered" })
    })
  )

  it.live("a provider outage at the claim answers 503 and claims nothing; the retry is accepted", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const body = yield* paymentBody("payment.one_time_purchase")
      h.fake.outage = true
      const down = yield* deliver(h, body)
      assert.strictEqual(down.status, 503)
      assert.deepStrictEqual(down.json, { error: "payment_provider_unavailable" })
      h.fake.outage = false
      const retry = yield* deliver(h, body)
      assert.strictEqual(retry.json.state, "accepted")
      assert.isDefined(retry.json.continuation)
    })
  )
})

describe("kit payments: the webhook route", () => {
  it.live("a bad signature is refused 400 and not recorded (the same event id, signed, is then processed)", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      h.fake.succeed(intentId)
      const event = h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" })
      const forged = yield* webhook(h, {
        payload: event.payload,
        header: h.fake.event("x", {}, { id: event.id, secret: "whsec_forger" }).header
      })
      assert.strictEqual(forged.status, 400)
      assert.deepStrictEqual(forged.json, { error: "bad_signature" })
      const genuine = yield* webhook(h, event)
      assert.deepStrictEqual([genuine.status, genuine.json], [200, { received: true, duplicate: false }])
    })
  )

  it.live("no signature header is refused 400", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const event = h.fake.event("payment_intent.succeeded", { id: "pi_x", object: "payment_intent" })
      const answer = yield* webhook(h, { payload: event.payload })
      assert.deepStrictEqual([answer.status, answer.json], [400, { error: "missing_signature" }])
    })
  )

  it.live("a stale timestamp is refused 400", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const event = h.fake.event(
        "payment_intent.succeeded",
        { id: "pi_x", object: "payment_intent" },
        {
          timestamp: Math.floor(Date.now() / 1000) - 600
        }
      )
      const answer = yield* webhook(h, event)
      assert.deepStrictEqual([answer.status, answer.json], [400, { error: "stale_timestamp" }])
    })
  )

  it.live("a correctly signed body that is not JSON is refused 400", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const answer = yield* webhook(h, { payload: "{not json", header: h.fake.sign("{not json") })
      assert.deepStrictEqual([answer.status, answer.json], [400, { error: "not_json" }])
    })
  )

  it.live("a correctly signed event of a type not covered is acknowledged 200 and ignored", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const answer = yield* webhook(h, h.fake.event("customer.created", { id: "cus_1", object: "customer" }))
      assert.deepStrictEqual([answer.status, answer.json], [200, { received: true, ignored: true }])
      // The account watch reads only the account (`GET /v1/account`).
      assert.strictEqual(
        h.fake.requests.filter((r) => r.path !== "/v1/account").length,
        0,
        "nothing is read for an ignored event"
      )
    })
  )

  it.live("the secret is never echoed", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const event = h.fake.event(
        "payment_intent.succeeded",
        { id: "pi_x", object: "payment_intent" },
        { secret: "whsec_other" }
      )
      const answer = yield* webhook(h, event)
      assert.notInclude(JSON.stringify(answer.json), webhookSecret)
    })
  )

  it("a webhook secret equal to a connector secret is refused at start", async () => {
    const error = await makeCustomerKit({
      workspaceId,
      secrets,
      serviceUrl: "http://127.0.0.1:9",
      allowInsecureServiceUrl: true,
      storage: MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)),
      executor: {
        execute: async () => {
          throw new Error("unused")
        },
        lookup: async () => undefined
      },
      payments: {
        stripe: {
          secretKey: Redacted.make("sk_test_x"),
          publishableKey: "pk_test_x",
          webhookSecret: secrets.completion
        },
        plan: async () => undefined
      }
    }).then(
      (kit) => kit.dispose(),
      (e: unknown) => e
    )
    assert.instanceOf(error, CustomerKitOptionsError)
    assert.deepStrictEqual(
      (error as CustomerKitOptionsError).issues.map((i) => i.path),
      ["payments.stripe.webhookSecret"]
    )
    assert.notInclude((error as Error).message, Redacted.value(secrets.completion))
  })
})

describe("kit payments: completions from the provider", () => {
  it.live(
    "payment_intent.succeeded: a signed succeeded completion, read back from the provider; a redelivered event does nothing twice",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const { actionRequestId, body, intentId } = yield* accepted(h)
        h.fake.succeed(intentId)
        const event = h.fake.event("payment_intent.succeeded", {
          id: intentId,
          object: "payment_intent",
          status: "succeeded"
        })
        yield* webhook(h, event)
        const [completion] = yield* waitForCompletions(h, 1)
        assert.deepInclude(completion as unknown as Record<string, unknown>, {
          actionRequestId,
          providerIdempotencyKey: body.providerIdempotencyKey,
          providerReference: intentId,
          outcome: "succeeded"
        })
        assert.deepInclude(completion!.evidence, { source: "provider_event", accountId: body.accountId as string })
        const again = yield* webhook(h, event)
        assert.deepStrictEqual(again.json, { received: true, duplicate: true })
        yield* settle
        assert.strictEqual((yield* distinctCompletions(h)).length, 1)
        // The provider was read (never the body alone).
        assert.isTrue(h.fake.requests.some((r) => r.method === "GET" && r.path === `/v1/payment_intents/${intentId}`))
      })
  )

  it.live(
    "a webhook claiming success while the provider says otherwise sends nothing (the body is never evidence)",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const { intentId } = yield* accepted(h)
        yield* webhook(
          h,
          h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent", status: "succeeded" })
        )
        yield* settle
        assert.strictEqual(h.service.received.length, 0, JSON.stringify(h.service.received))
      })
  )

  it.live("payment_failed after succeeded does not undo the success", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      h.fake.succeed(intentId)
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      yield* waitForCompletions(h, 1)
      yield* webhook(h, h.fake.event("payment_intent.payment_failed", { id: intentId, object: "payment_intent" }))
      yield* settle
      assert.deepStrictEqual(
        (yield* distinctCompletions(h)).map((c) => c.outcome),
        ["succeeded"]
      )
    })
  )

  it.live(
    "a declined attempt sends one unknown completion (payment_declined, the customer may retry); a canceled intent then sends failed",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const { intentId } = yield* accepted(h)
        h.fake.decline(intentId)
        yield* webhook(h, h.fake.event("payment_intent.payment_failed", { id: intentId, object: "payment_intent" }))
        const [declined] = yield* waitForCompletions(h, 1)
        assert.strictEqual(declined!.outcome, "unknown")
        assert.deepInclude(declined!.evidence, {
          reasonCode: "payment_declined",
          entitlement: "",
          source: "provider_event"
        })
        // A second decline (another card) sends nothing more.
        yield* webhook(h, h.fake.event("payment_intent.payment_failed", { id: intentId, object: "payment_intent" }))
        yield* settle
        assert.strictEqual((yield* distinctCompletions(h)).length, 1)
        h.fake.cancel(intentId)
        yield* webhook(h, h.fake.event("payment_intent.canceled", { id: intentId, object: "payment_intent" }))
        const all = yield* waitForCompletions(h, 2)
        assert.deepStrictEqual(
          all.map((c) => c.outcome),
          ["unknown", "failed"]
        )
        assert.notStrictEqual(all[0]!.completionId, all[1]!.completionId)
      })
  )

  it.live("a decline, then a retry with another card on the same intent succeeding: unknown, then succeeded", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      h.fake.decline(intentId)
      yield* webhook(h, h.fake.event("payment_intent.payment_failed", { id: intentId, object: "payment_intent" }))
      yield* waitForCompletions(h, 1)
      h.fake.succeed(intentId)
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      const all = yield* waitForCompletions(h, 2)
      assert.deepStrictEqual(
        all.map((c) => c.outcome),
        ["unknown", "succeeded"]
      )
      assert.strictEqual(all[1]!.evidence.reasonCode, "provider_confirmed")
    })
  )

  it.live("a payment_failed event while the provider reads no decline (the body is not evidence) sends nothing", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      yield* webhook(
        h,
        h.fake.event("payment_intent.payment_failed", {
          id: intentId,
          object: "payment_intent",
          last_payment_error: { code: "card_declined" }
        })
      )
      yield* settle
      assert.strictEqual(h.service.received.length, 0)
    })
  )

  it.live("setup_intent.setup_failed: one unknown completion; the retried setup succeeds", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => ({ mode: "setup_only", customerId: "cus_7" }))
      const answer = yield* deliver(h, yield* paymentBody("payment.setup_only"))
      const setupId = (answer.json.continuation.clientSecret as string).split("_secret_")[0]!
      h.fake.declineSetup(setupId)
      yield* webhook(h, h.fake.event("setup_intent.setup_failed", { id: setupId, object: "setup_intent" }))
      yield* waitForCompletions(h, 1)
      h.fake.confirmSetup(setupId)
      yield* webhook(h, h.fake.event("setup_intent.succeeded", { id: setupId, object: "setup_intent" }))
      const all = yield* waitForCompletions(h, 2)
      assert.deepStrictEqual(
        all.map((c) => c.outcome),
        ["unknown", "succeeded"]
      )
    })
  )

  it.live("invoice.payment_failed on the initial invoice: one unknown completion; paying it later: succeeded", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => ({ mode: "new_subscription", customerId: "cus_9", priceId: "price_monthly" }))
      yield* deliver(h, yield* paymentBody("payment.new_subscription"))
      const subscription = [...h.fake.objects.values()].find((o) => o.object === "subscription")!
      const invoice = h.fake.declineInitialInvoice(subscription.id as string)
      yield* webhook(h, h.fake.event("invoice.payment_failed", invoice))
      const [declined] = yield* waitForCompletions(h, 1)
      assert.deepInclude(declined as unknown as Record<string, unknown>, {
        outcome: "unknown",
        providerReference: subscription.id
      })
      h.fake.payInitialInvoice(subscription.id as string)
      yield* webhook(h, h.fake.event("invoice.payment_succeeded", h.fake.objects.get(invoice.id as string)!))
      const all = yield* waitForCompletions(h, 2)
      assert.deepStrictEqual(
        all.map((c) => c.outcome),
        ["unknown", "succeeded"]
      )
    })
  )

  it.live(
    "a full refund after succeeded sends a new reversed completion with a new completionId; a partial refund sends nothing",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const { intentId } = yield* accepted(h)
        h.fake.succeed(intentId)
        yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
        yield* waitForCompletions(h, 1)
        const charge = h.fake.refund(intentId, 900)
        yield* webhook(h, h.fake.event("charge.refunded", charge))
        yield* settle
        assert.strictEqual((yield* distinctCompletions(h)).length, 1, "a partial refund reverses nothing")
        h.fake.refund(intentId)
        yield* webhook(h, h.fake.event("charge.refunded", charge))
        const all = yield* waitForCompletions(h, 2)
        assert.deepStrictEqual(
          all.map((c) => c.outcome),
          ["succeeded", "reversed"]
        )
        assert.notStrictEqual(all[0]!.completionId, all[1]!.completionId)
        assert.strictEqual(all[1]!.providerReference, intentId)
        yield* webhook(h, h.fake.event("charge.refunded", charge))
        yield* settle
        assert.strictEqual((yield* distinctCompletions(h)).length, 2, "one reversal only")
      })
  )

  it.live("a refund seen before the success is kept and applied: succeeded, then reversed", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      h.fake.succeed(intentId)
      const charge = h.fake.refund(intentId)
      yield* webhook(h, h.fake.event("charge.refunded", charge))
      const all = yield* waitForCompletions(h, 2)
      assert.deepStrictEqual(all.map((c) => c.outcome).sort(), ["reversed", "succeeded"])
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      yield* settle
      assert.strictEqual((yield* distinctCompletions(h)).length, 2)
    })
  )

  it.live("a failed completion delivery is retried through the outbox with the same completionId", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      h.service.state.status = 503
      h.fake.succeed(intentId)
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      yield* Effect.promise(() => until(() => h.service.received.length >= 2, "two attempts"))
      h.service.state.status = 200
      const attempts = h.service.received.length
      yield* Effect.promise(() => until(() => h.service.received.length > attempts, "a delivered attempt"))
      const all = yield* completions(h)
      assert.strictEqual(new Set(all.map((c) => c.completionId)).size, 1)
    })
  )

  it.live("a provider outage while reconciling an event retries it later", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      h.fake.succeed(intentId)
      h.fake.outage = true
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      yield* settle
      assert.strictEqual(h.service.received.length, 0)
      h.fake.outage = false
      const [completion] = yield* waitForCompletions(h, 1)
      assert.strictEqual(completion!.outcome, "succeeded")
    })
  )

  it.live("an event about another account's intent (not created by the kit) is ignored", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { intentId } = yield* accepted(h)
      // The same object, its metadata rewritten to another action's binding at the provider.
      const intent = h.fake.objects.get(intentId)!
      intent.metadata = { ...(intent.metadata as Record<string, string>), accord_account_id: "acct_other" }
      h.fake.succeed(intentId)
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      yield* settle
      assert.strictEqual(h.service.received.length, 0)
    })
  )

  it.live("setup_intent.succeeded: succeeded with no revenue", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => ({ mode: "setup_only", customerId: "cus_7" }))
      const answer = yield* deliver(h, yield* paymentBody("payment.setup_only"))
      const setupId = (answer.json.continuation.clientSecret as string).split("_secret_")[0]!
      h.fake.confirmSetup(setupId)
      yield* webhook(h, h.fake.event("setup_intent.succeeded", { id: setupId, object: "setup_intent" }))
      const [completion] = yield* waitForCompletions(h, 1)
      assert.deepInclude(completion as unknown as Record<string, unknown>, {
        outcome: "succeeded",
        providerReference: setupId
      })
    })
  )

  it.live(
    "a new subscription: the initial invoice's payment completes it; a renewal invoice creates no further completion",
    () =>
      Effect.gen(function* () {
        const h = yield* harness(() => ({ mode: "new_subscription", customerId: "cus_9", priceId: "price_monthly" }))
        const answer = yield* deliver(h, yield* paymentBody("payment.new_subscription"))
        assert.strictEqual(answer.json.continuation.intent, "payment")
        const subscription = [...h.fake.objects.values()].find((o) => o.object === "subscription")!
        h.fake.payInitialInvoice(subscription.id as string)
        const initial = h.fake.objects.get(subscription.latest_invoice as string)!
        yield* webhook(h, h.fake.event("invoice.payment_succeeded", initial))
        const [completion] = yield* waitForCompletions(h, 1)
        assert.deepInclude(completion as unknown as Record<string, unknown>, {
          outcome: "succeeded",
          providerReference: subscription.id
        })
        const renewal = h.fake.renew(subscription.id as string)
        yield* webhook(h, h.fake.event("invoice.payment_succeeded", renewal))
        yield* settle
        assert.strictEqual((yield* distinctCompletions(h)).length, 1)
      })
  )
})

/** A signed reconciliation read of a one-time purchase, as the service sends it; the verified observation. */
const reconcile = (h: Harness, body: Body, intentId: string, mode = "one_time_purchase") =>
  Effect.gen(function* () {
    const nonce = yield* freshNonce
    const request = {
      type: "service.customer_action.payment_reconciliation",
      protocolVersion: 1,
      workspaceId,
      accountId: body.accountId,
      actionRequestId: body.actionRequestId,
      actionVersionId: "7b9d1f3a-5c7e-4a9b-8d1f-3a5c7e9b1d3f",
      offerVersionId: "8c0e2a4b-6d8f-4b0c-9e2a-4b6d8f0c2e4a",
      mode,
      providerIdempotencyKey: body.providerIdempotencyKey,
      providerReferenceHash: "a".repeat(64),
      requestNonce: nonce,
      expected: { amountMinor: 4900, currency: "usd", priceReferenceHash: "b".repeat(64) },
      requestedAt: new Date().toISOString()
    }
    const bytes = encodeBody(request)
    const headers = yield* sign({ purpose: "payment_reconciliation_request", keys: h.keys, body: bytes, nonce })
    const response = yield* Effect.promise(() =>
      h.kit.fetch(new Request("http://kit/connector", { method: "POST", headers: { ...headers }, body: bytes }))
    )
    const answer = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
    const out: Record<string, string> = {}
    response.headers.forEach((value, key) => (out[key] = value))
    assert.strictEqual(response.status, 200, decoder.decode(answer))
    assert.isDefined(intentId)
    return yield* verifyResponse(PaymentObservation, "payment_reconciliation_response", h.keys, {
      headers: out,
      body: answer
    })
  }).pipe(Effect.provide(storageLayer()))

describe("kit payments: more", () => {
  it.live("a duplicate after the continuation expired is acknowledged accepted without a continuation", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => oneTime, 400)
      const body = yield* paymentBody("payment.one_time_purchase")
      const first = yield* deliver(h, body)
      assert.isDefined(first.json.continuation)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 500)))
      const late = yield* deliver(h, body)
      assert.strictEqual(late.json.state, "accepted")
      assert.notProperty(late.json, "continuation")
    })
  )

  it.live("the webhook route reads bodies up to 256 KiB and refuses larger ones 413", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const big = h.fake.event("customer.updated", { id: "cus_1", object: "customer", note: "x".repeat(100 * 1024) })
      const accepted = yield* webhook(h, big)
      assert.deepStrictEqual([accepted.status, accepted.json], [200, { received: true, ignored: true }])
      const huge = h.fake.event("customer.updated", { id: "cus_1", object: "customer", note: "x".repeat(300 * 1024) })
      const refused = yield* Effect.promise(() =>
        h.kit.webhook!.fetch(
          new Request("http://kit/stripe/webhook", {
            method: "POST",
            headers: { "stripe-signature": huge.header },
            body: huge.payload
          })
        )
      )
      assert.strictEqual(refused.status, 413)
    })
  )

  it.live(
    "reconciliation reads come from the provider now, with the newest verified event; an outage reads as unknown",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const { body, intentId } = yield* accepted(h)
        const before = yield* reconcile(h, body, intentId)
        assert.deepInclude(before, {
          outcome: "pending",
          eventId: null,
          eventSignatureVerified: false,
          providerReference: intentId,
          customerBound: true,
          intent: "payment"
        })
        h.fake.succeed(intentId)
        const event = h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" })
        yield* webhook(h, event)
        yield* waitForCompletions(h, 1)
        const paid = yield* reconcile(h, body, intentId)
        assert.deepInclude(paid, {
          outcome: "succeeded",
          eventId: event.id,
          eventSignatureVerified: true,
          paymentStatus: "succeeded",
          chargedAmountMinor: 4900,
          refundedAmountMinor: 0,
          methodAttached: true
        })
        h.fake.refund(intentId, 900)
        assert.deepInclude(yield* reconcile(h, body, intentId), {
          outcome: "partially_reversed",
          refundedAmountMinor: 900
        })
        h.fake.outage = true
        const down = yield* reconcile(h, body, intentId)
        h.fake.outage = false
        assert.deepInclude(down, { outcome: "unknown", eventSignatureVerified: false, customerBound: false })
      })
  )

  it.live(
    "a live-mode event at test keys is acknowledged 200 and ignored; an event about an unknown object is dropped, not retried",
    () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const live = yield* webhook(
          h,
          h.fake.event("payment_intent.succeeded", { id: "pi_live", object: "payment_intent" }, { livemode: true })
        )
        assert.deepStrictEqual([live.status, live.json], [200, { received: true, ignored: true }])
        const unknown = yield* webhook(
          h,
          h.fake.event("payment_intent.succeeded", { id: "pi_nowhere", object: "payment_intent" })
        )
        assert.strictEqual(unknown.status, 200)
        yield* settle
        const reads = h.fake.requests.filter((r) => r.path === "/v1/payment_intents/pi_nowhere").length
        assert.strictEqual(reads, 1, "read once, then dropped")
        assert.strictEqual(h.fake.requests.filter((r) => r.path === "/v1/payment_intents/pi_live").length, 0)
      })
  )
})

/** An accepted new subscription with its initial invoice paid and reported succeeded. */
const paidSubscription = (h: Harness) =>
  Effect.gen(function* () {
    const body = yield* paymentBody("payment.new_subscription")
    yield* deliver(h, body)
    const subscription = [...h.fake.objects.values()].find((o) => o.object === "subscription")!
    const subscriptionId = subscription.id as string
    h.fake.payInitialInvoice(subscriptionId)
    const initial = h.fake.objects.get(subscription.latest_invoice as string)!
    yield* webhook(h, h.fake.event("invoice.payment_succeeded", initial))
    yield* waitForCompletions(h, 1)
    return { body, subscriptionId, intentId: h.fake.initialPaymentIntent(subscriptionId) }
  })

const subscriptionPlan = () => ({ mode: "new_subscription", customerId: "cus_9", priceId: "price_monthly" }) as const

describe("kit payments: refunds of a subscription's initial invoice", () => {
  for (const [shape, options] of [
    ["the newest invoice shape (invoice.payments, the invoice found through invoice payments)", {}],
    [
      "the older invoice shape (invoice.payment_intent, invoice.charge), at an older API version",
      { invoiceShape: "legacy", apiVersion: "2024-06-20" }
    ]
  ] as const) {
    it.live(
      `${shape}: a partial refund sends nothing and reads partially_reversed; a full refund sends reversed with a new completionId`,
      () =>
        Effect.gen(function* () {
          const h = yield* harness(subscriptionPlan, undefined, options)
          const { body, intentId, subscriptionId } = yield* paidSubscription(h)
          const paid = yield* reconcile(h, body, subscriptionId, "new_subscription")
          assert.deepInclude(paid, {
            outcome: "succeeded",
            intent: "subscription",
            chargedAmountMinor: 1500,
            refundedAmountMinor: 0,
            invoicePaid: true
          })
          const charge = h.fake.refund(intentId, 500)
          yield* webhook(h, h.fake.event("charge.refunded", charge))
          yield* settle
          assert.strictEqual((yield* distinctCompletions(h)).length, 1, "a partial refund reverses nothing")
          assert.deepInclude(yield* reconcile(h, body, subscriptionId, "new_subscription"), {
            outcome: "partially_reversed",
            chargedAmountMinor: 1500,
            refundedAmountMinor: 500
          })
          h.fake.refund(intentId)
          yield* webhook(h, h.fake.event("charge.refunded", charge))
          const all = yield* waitForCompletions(h, 2)
          assert.deepStrictEqual(
            all.map((c) => c.outcome),
            ["succeeded", "reversed"]
          )
          assert.notStrictEqual(all[0]!.completionId, all[1]!.completionId)
          assert.strictEqual(all[1]!.providerReference, subscriptionId)
          assert.deepInclude(all[1]!.evidence, { reasonCode: "full_refund", entitlement: "new_subscription" })
          assert.deepInclude(yield* reconcile(h, body, subscriptionId, "new_subscription"), {
            outcome: "reversed",
            chargedAmountMinor: 1500,
            refundedAmountMinor: 1500
          })
          const newest = h.fake.requests.some((r) => r.path === "/v1/invoice_payments")
          assert.strictEqual(
            newest,
            options.apiVersion === undefined,
            "invoice payments are looked up on the newest shape only"
          )
          yield* webhook(h, h.fake.event("charge.refunded", charge))
          yield* settle
          assert.strictEqual((yield* distinctCompletions(h)).length, 2, "one reversal only")
        })
    )
  }

  it.live("a refund of a renewal invoice's charge reverses nothing", () =>
    Effect.gen(function* () {
      const h = yield* harness(subscriptionPlan, undefined, { invoiceShape: "legacy", apiVersion: "2024-06-20" })
      const { subscriptionId } = yield* paidSubscription(h)
      const renewal = h.fake.renew(subscriptionId)
      // A renewal's charge, on the renewal invoice (older shape: the charge names its invoice).
      const chargeId = "ch_renewal_fake"
      h.fake.objects.set(chargeId, {
        id: chargeId,
        object: "charge",
        payment_intent: null,
        invoice: renewal.id,
        status: "succeeded",
        amount: 2500,
        amount_captured: 2500,
        amount_refunded: 2500,
        refunded: true,
        currency: "usd",
        livemode: false
      })
      yield* webhook(h, h.fake.event("charge.refunded", h.fake.objects.get(chargeId)!))
      yield* settle
      assert.deepStrictEqual(
        (yield* distinctCompletions(h)).map((c) => c.outcome),
        ["succeeded"]
      )
    })
  )
})

describe("kit payments: the continuation's expiry", () => {
  it.live(
    "an offer still unpaid when its continuation expires is canceled at the provider and reported failed (continuation_expired)",
    () =>
      Effect.gen(function* () {
        const h = yield* harness(() => oneTime, 300)
        const { intentId } = yield* accepted(h)
        // Declined at the provider (its webhook not delivered): still retryable until the expiry.
        h.fake.decline(intentId)
        const [completion] = yield* waitForCompletions(h, 1)
        assert.strictEqual(completion!.outcome, "failed")
        assert.deepInclude(completion!.evidence, { reasonCode: "continuation_expired", entitlement: "" })
        yield* settle
        assert.strictEqual((yield* distinctCompletions(h)).length, 1)
        assert.strictEqual(h.fake.objects.get(intentId)!.status, "canceled")
        assert.isTrue(
          h.fake.requests.some((r) => r.method === "POST" && r.path === `/v1/payment_intents/${intentId}/cancel`)
        )
      })
  )

  it.live("a payment that succeeded before the expiry is not canceled and not reported failed", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => oneTime, 300)
      const { intentId } = yield* accepted(h)
      h.fake.succeed(intentId)
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      yield* waitForCompletions(h, 1)
      yield* Effect.promise(() =>
        until(
          () => h.fake.requests.filter((r) => r.path === `/v1/payment_intents/${intentId}`).length >= 2,
          "the expiry's read"
        )
      )
      yield* settle
      assert.deepStrictEqual(
        (yield* distinctCompletions(h)).map((c) => c.outcome),
        ["succeeded"]
      )
      assert.isFalse(h.fake.requests.some((r) => r.path.endsWith("/cancel")))
    })
  )

  it.live(
    "a trial whose setup never saved a method reads pending, and at expiry is canceled and reported failed; a saved one succeeds",
    () =>
      Effect.gen(function* () {
        const trial = () =>
          ({ mode: "new_subscription", customerId: "cus_9", priceId: "price_monthly", trialDays: 14 }) as const
        // Unsaved, with the default lifetime: read now, it is pending.
        const open = yield* harness(trial)
        const openBody = yield* paymentBody("payment.new_subscription")
        assert.strictEqual((yield* deliver(open, openBody)).json.continuation.intent, "setup")
        const openSubscription = [...open.fake.objects.values()].find((o) => o.object === "subscription")!
        assert.strictEqual(openSubscription.status, "trialing")
        assert.deepInclude(yield* reconcile(open, openBody, openSubscription.id as string, "new_subscription"), {
          outcome: "pending",
          subscriptionState: "trialing",
          methodAttached: false
        })
        // Unsaved, expiring at once: ended and failed.
        // Long enough for the acknowledgement to arrive before it expires on a loaded machine.
        const h = yield* harness(trial, 2_000)
        yield* deliver(h, yield* paymentBody("payment.new_subscription"))
        const subscription = [...h.fake.objects.values()].find((o) => o.object === "subscription")!
        const [completion] = yield* waitForCompletions(h, 1)
        assert.deepInclude(completion as unknown as Record<string, unknown>, {
          outcome: "failed",
          providerReference: subscription.id
        })
        assert.strictEqual(completion!.evidence.reasonCode, "continuation_expired")
        assert.strictEqual(subscription.status, "canceled")

        const saved = yield* harness(trial)
        const savedBody = yield* paymentBody("payment.new_subscription")
        const savedAnswer = yield* deliver(saved, savedBody)
        const setupId = (savedAnswer.json.continuation.clientSecret as string).split("_secret_")[0]!
        saved.fake.confirmSetup(setupId)
        yield* webhook(saved, saved.fake.event("setup_intent.succeeded", { id: setupId, object: "setup_intent" }))
        const [trialStarted] = yield* waitForCompletions(saved, 1)
        assert.strictEqual(trialStarted!.outcome, "succeeded")
        const savedSubscription = [...saved.fake.objects.values()].find((o) => o.object === "subscription")!
        assert.deepInclude(yield* reconcile(saved, savedBody, savedSubscription.id as string, "new_subscription"), {
          outcome: "succeeded",
          subscriptionState: "trialing",
          methodAttached: true,
          chargedAmountMinor: 0
        })
      })
  )

  it.live("a subscription whose initial invoice is still unpaid at expiry is canceled and reported failed", () =>
    Effect.gen(function* () {
      const h = yield* harness(subscriptionPlan, 300)
      yield* deliver(h, yield* paymentBody("payment.new_subscription"))
      const subscription = [...h.fake.objects.values()].find((o) => o.object === "subscription")!
      const [completion] = yield* waitForCompletions(h, 1)
      assert.deepInclude(completion as unknown as Record<string, unknown>, {
        outcome: "failed",
        providerReference: subscription.id
      })
      assert.strictEqual(subscription.status, "canceled")
      assert.isTrue(
        h.fake.requests.some(
          (r) => r.method === "DELETE" && r.path === `/v1/subscriptions/${subscription.id as string}`
        )
      )
    })
  )
})

describe("kit payments: the amount binding (amount and currency are part of the outcome)", () => {
  /** The intent charged with other terms than bound at the claim (the fake's object changed before the charge). */
  const chargedWith = (change: { readonly amount?: number; readonly currency?: string }) =>
    Effect.gen(function* () {
      const h = yield* harness()
      const { actionRequestId, body, intentId } = yield* accepted(h)
      Object.assign(h.fake.objects.get(intentId)!, change)
      h.fake.succeed(intentId)
      yield* webhook(h, h.fake.event("payment_intent.succeeded", { id: intentId, object: "payment_intent" }))
      const [completion] = yield* waitForCompletions(h, 1)
      const observation = yield* reconcile(h, body, intentId)
      return { completion: completion!, observation, actionRequestId }
    })

  it.live("bound 4900 usd, charged 100 usd: a failed completion (amount_mismatch), the read says failed", () =>
    Effect.gen(function* () {
      const { completion, observation } = yield* chargedWith({ amount: 100 })
      assert.strictEqual(completion.outcome, "failed")
      assert.strictEqual(completion.evidence.reasonCode, "amount_mismatch")
      assert.deepInclude(observation as unknown as Record<string, unknown>, {
        outcome: "failed",
        chargedAmountMinor: 100,
        chargedCurrency: "usd"
      })
    })
  )

  it.live("bound 4900 usd, charged 4900 eur: a failed completion (currency_mismatch), the read names eur", () =>
    Effect.gen(function* () {
      const { completion, observation } = yield* chargedWith({ currency: "eur" })
      assert.strictEqual(completion.outcome, "failed")
      assert.strictEqual(completion.evidence.reasonCode, "currency_mismatch")
      assert.deepInclude(observation as unknown as Record<string, unknown>, {
        outcome: "failed",
        chargedAmountMinor: 4900,
        chargedCurrency: "eur"
      })
    })
  )

  it.live("the bound charge reads succeeded and names its currency", () =>
    Effect.gen(function* () {
      const { completion, observation } = yield* chargedWith({})
      assert.strictEqual(completion.outcome, "succeeded")
      assert.deepInclude(observation as unknown as Record<string, unknown>, {
        outcome: "succeeded",
        chargedAmountMinor: 4900,
        chargedCurrency: "usd"
      })
    })
  )
})

describe("kit payments: the provider account (no acceptance without the means to perform)", () => {
  /** A signed handshake through the kit: the capability proof it carries, if any. */
  const proofOf = (h: Harness) =>
    Effect.gen(function* () {
      const delivery = yield* handshakeDelivery(h.keys)
      const response = yield* Effect.promise(() =>
        h.kit.fetch(
          new Request("http://kit/connector", { method: "POST", headers: delivery.headers, body: delivery.body })
        )
      )
      const bytes = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
      assert.strictEqual(response.status, 200, decoder.decode(bytes))
      const headers: Record<string, string> = {}
      response.headers.forEach((value, key) => (headers[key] = value))
      const ack = yield* verifyResponse(HandshakeAck, "handshake_response", h.keys, { headers, body: bytes })
      return ack.paymentCapabilities
    }).pipe(Effect.provide(storageLayer()), Effect.provide(NodeCrypto.layer))
  const hashOf = (accountId: string) =>
    Effect.promise(() => crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(accountId)))).pipe(
      Effect.map((digest) => Buffer.from(digest).toString("hex"))
    )

  it.live(
    "Stripe unreachable at start: no proof, a Payment execution answers 503 and claims nothing; once Stripe answers, the proof returns and the retry is accepted with a continuation",
    () =>
      Effect.gen(function* () {
        const states: Array<string> = []
        const h = yield* harness(undefined, undefined, {
          outageAtStart: true,
          proof: ["one_time_purchase"],
          onAccountChange: (state) => states.push(state._tag)
        })
        assert.isUndefined(yield* proofOf(h))
        const body = yield* paymentBody("payment.one_time_purchase")
        const refused = yield* deliver(h, body)
        assert.strictEqual(refused.status, 503)
        assert.deepStrictEqual(refused.json, { error: "payment_provider_unavailable" })
        assert.isFalse(h.fake.requests.some((r) => r.method === "POST" && r.path === "/v1/payment_intents"))
        h.fake.outage = false
        yield* Effect.promise(() => until(() => states.includes("Proven"), "the account proven"))
        const proof = yield* proofOf(h)
        assert.deepInclude(proof as unknown as Record<string, unknown>, {
          modes: ["one_time_purchase"],
          connectedAccountReferenceHash: yield* hashOf(h.fake.accountId)
        })
        const retried = yield* deliver(h, body)
        assert.strictEqual(retried.status, 202)
        assert.strictEqual(retried.ack!.state, "accepted")
        assert.isDefined(retried.ack!.state === "accepted" ? retried.ack!.continuation : undefined)
        assert.deepStrictEqual(states.slice(0, 2), ["Unavailable", "Proven"])
      })
  )

  it.live(
    "a proven account that stops answering is unproven again: Payment executions answer 503 until it answers",
    () =>
      Effect.gen(function* () {
        const states: Array<string> = []
        const h = yield* harness(undefined, undefined, {
          proof: ["one_time_purchase"],
          onAccountChange: (state) => states.push(state._tag)
        })
        assert.isDefined(yield* proofOf(h))
        h.fake.outage = true
        yield* Effect.promise(() => until(() => states.includes("Unavailable"), "the outage noticed"))
        assert.isUndefined(yield* proofOf(h))
        const refused = yield* deliver(h, yield* paymentBody("payment.one_time_purchase"))
        assert.strictEqual(refused.status, 503)
        h.fake.outage = false
        yield* Effect.promise(() => until(() => states.lastIndexOf("Proven") > states.indexOf("Unavailable"), "back"))
        assert.isDefined(yield* proofOf(h))
      })
  )

  it.live("the key moved to another account: the proof of the old one is withdrawn and the new one named", () =>
    Effect.gen(function* () {
      const states: Array<ProviderAccountState> = []
      const h = yield* harness(undefined, undefined, {
        proof: ["one_time_purchase"],
        onAccountChange: (state) => states.push(state)
      })
      const before = yield* proofOf(h)
      assert.strictEqual(before?.connectedAccountReferenceHash, yield* hashOf("acct_1FakeAccount0001"))
      h.fake.accountId = "acct_1MovedAccount0002"
      yield* Effect.promise(() =>
        until(() => states.some((s) => s._tag === "Proven" && s.previousAccountId !== null), "the change noticed")
      )
      const after = yield* proofOf(h)
      assert.strictEqual(after?.connectedAccountReferenceHash, yield* hashOf("acct_1MovedAccount0002"))
    })
  )

  it.live("a mode the proof does not list is rejected (payment_not_offered), even while Stripe is unreachable", () =>
    Effect.gen(function* () {
      const h = yield* harness(() => ({ mode: "setup_only" }), undefined, {
        outageAtStart: true,
        proof: ["one_time_purchase"]
      })
      const answer = yield* deliver(h, yield* paymentBody("payment.setup_only"))
      assert.strictEqual(answer.status, 202)
      assert.deepInclude(answer.ack as unknown as Record<string, unknown>, {
        state: "rejected",
        errorCode: "payment_not_offered"
      })
    })
  )
})

describe("kit payments: subscription events beyond the spec's table", () => {
  const subscribed = (h: Harness) =>
    Effect.gen(function* () {
      const answer = yield* deliver(h, yield* paymentBody("payment.new_subscription"))
      assert.strictEqual(answer.status, 202)
      return [...h.fake.objects.values()].find((o) => o.object === "subscription")!
    })
  const subscriptionPlan = () => ({ mode: "new_subscription" as const, customerId: "cus_9", priceId: "price_monthly" })

  it.live("invoice.paid of the initial invoice: succeeded, read back from the subscription", () =>
    Effect.gen(function* () {
      const h = yield* harness(subscriptionPlan)
      const subscription = yield* subscribed(h)
      h.fake.payInitialInvoice(subscription.id as string)
      yield* webhook(h, h.fake.event("invoice.paid", h.fake.objects.get(subscription.latest_invoice as string)!))
      const [completion] = yield* waitForCompletions(h, 1)
      assert.deepInclude(completion as unknown as Record<string, unknown>, {
        outcome: "succeeded",
        providerReference: subscription.id
      })
    })
  )

  it.live("customer.subscription.updated to active: succeeded; a redelivery of it sends nothing more", () =>
    Effect.gen(function* () {
      const h = yield* harness(subscriptionPlan)
      const subscription = yield* subscribed(h)
      h.fake.payInitialInvoice(subscription.id as string)
      const event = h.fake.event("customer.subscription.updated", subscription)
      yield* webhook(h, event)
      const [completion] = yield* waitForCompletions(h, 1)
      assert.strictEqual(completion!.outcome, "succeeded")
      yield* webhook(h, event)
      yield* settle
      assert.strictEqual((yield* distinctCompletions(h)).length, 1)
    })
  )

  it.live("customer.subscription.deleted of an unpaid subscription: failed", () =>
    Effect.gen(function* () {
      const h = yield* harness(subscriptionPlan)
      const subscription = yield* subscribed(h)
      h.fake.cancel(subscription.id as string)
      yield* webhook(h, h.fake.event("customer.subscription.deleted", subscription))
      const [completion] = yield* waitForCompletions(h, 1)
      assert.strictEqual(completion!.outcome, "failed")
    })
  )
})

describe("kit payments: a subscription change and a recovery", () => {
  /** The plans of one account: its subscription, then a change to `price_team` or a recovery of `invoiceId`. */
  const families =
    (
      target: { subscriptionId?: string; invoiceId?: string },
      options: { readonly proration?: "always_invoice" | "create_prorations"; readonly recoverMinor?: number } = {}
    ) =>
    (family: string): PaymentPlan | undefined =>
      family === "payment.new_subscription"
        ? { mode: "new_subscription", customerId: "cus_9", priceId: "price_monthly" }
        : family === "payment.existing_subscription_change" && target.subscriptionId !== undefined
          ? {
              mode: "existing_subscription_change",
              subscriptionId: target.subscriptionId,
              priceId: "price_team",
              ...(options.proration !== undefined ? { proration: options.proration } : {})
            }
          : family === "recover_payment" && target.invoiceId !== undefined
            ? {
                mode: "recover_payment",
                invoiceId: target.invoiceId,
                amountMinor: options.recoverMinor ?? 4900,
                currency: "usd"
              }
            : undefined
  /** A paid subscription at `price_monthly` (15.00 usd), made through the kit (its completion is the first). */
  const paidSubscription = (h: Harness, target: { subscriptionId?: string }) =>
    Effect.gen(function* () {
      assert.strictEqual((yield* deliver(h, yield* paymentBody("payment.new_subscription"))).status, 202)
      const subscription = [...h.fake.objects.values()].find((o) => o.object === "subscription")!
      target.subscriptionId = subscription.id as string
      h.fake.payInitialInvoice(subscription.id as string)
      yield* webhook(h, h.fake.event("invoice.paid", h.fake.objects.get(subscription.latest_invoice as string)!))
      yield* waitForCompletions(h, 1)
      return subscription
    })
  const price = (subscription: Record<string, unknown>) =>
    (subscription.items as { data: Array<{ price: { id: string } }> }).data[0]!.price.id

  it.live(
    "a change to a dearer price: the proration invoice's continuation, nothing applied until it is paid, then succeeded",
    () =>
      Effect.gen(function* () {
        const target: { subscriptionId?: string } = {}
        const h = yield* harness(families(target))
        const subscription = yield* paidSubscription(h, target)
        const initialIntent = h.fake.initialPaymentIntent(subscription.id as string)
        const body = yield* paymentBody("payment.existing_subscription_change")
        const answer = yield* deliver(h, body)
        assert.strictEqual(answer.status, 202, JSON.stringify(answer.json))
        const update = h.fake.requests.find(
          (r) => r.method === "POST" && r.path === `/v1/subscriptions/${subscription.id as string}`
        )!
        assert.deepInclude(update.params, {
          proration_behavior: "always_invoice",
          payment_behavior: "pending_if_incomplete"
        })
        assert.strictEqual(update.idempotencyKey, body.providerIdempotencyKey)
        // A pending update takes no metadata: the change's bindings are on its invoice instead.
        assert.notProperty(update.params, "metadata")
        const invoice = [...h.fake.objects.values()].find((o) => o.billing_reason === "subscription_update")!
        assert.strictEqual(invoice.amount_due, 3400)
        assert.strictEqual((invoice.metadata as Record<string, string>).accord_action_request_id, body.actionRequestId)
        assert.strictEqual(answer.json.continuation.intent, "payment")
        assert.strictEqual(
          answer.json.continuation.clientSecret,
          h.fake.objects.get(h.fake.invoicePaymentIntent(invoice.id as string))!.client_secret
        )
        assert.strictEqual(price(subscription), "price_monthly")
        // The subscription is active, but the change has not taken effect: pending.
        assert.deepInclude(yield* reconcile(h, body, "", "existing_subscription_change"), {
          outcome: "pending",
          subscriptionState: "active",
          invoicePaid: false
        })
        h.fake.payInvoice(invoice.id as string)
        yield* webhook(h, h.fake.event("invoice.paid", invoice))
        const all = yield* waitForCompletions(h, 2)
        assert.deepInclude(all[1] as unknown as Record<string, unknown>, {
          outcome: "succeeded",
          actionRequestId: body.actionRequestId,
          providerReference: subscription.id
        })
        assert.strictEqual(price(subscription), "price_team")
        assert.deepInclude(yield* reconcile(h, body, "", "existing_subscription_change"), {
          outcome: "succeeded",
          invoicePaid: true,
          chargedAmountMinor: 3400,
          chargedCurrency: "usd"
        })
        // A full refund of the initial invoice still reaches the subscription's own action, not the change.
        const charge = h.fake.refund(initialIntent)
        yield* webhook(h, h.fake.event("charge.refunded", charge))
        const refunded = yield* waitForCompletions(h, 3)
        assert.strictEqual(refunded[2]!.outcome, "reversed")
        assert.strictEqual(refunded[2]!.actionRequestId, all[0]!.actionRequestId)
        assert.notStrictEqual(refunded[2]!.actionRequestId, body.actionRequestId)
      })
  )

  it.live(
    "a change owing nothing now (create_prorations): accepted without a continuation, applied at once, succeeded without an event",
    () =>
      Effect.gen(function* () {
        const target: { subscriptionId?: string } = {}
        const h = yield* harness(families(target, { proration: "create_prorations" }))
        const subscription = yield* paidSubscription(h, target)
        const body = yield* paymentBody("payment.existing_subscription_change")
        const answer = yield* deliver(h, body)
        assert.strictEqual(answer.ack!.state, "accepted")
        assert.notProperty(answer.json, "continuation")
        assert.strictEqual(price(subscription), "price_team")
        // No webhook: with nothing to pay, the kit settles the change from a fresh read at once.
        const all = yield* waitForCompletions(h, 2)
        assert.deepInclude(all[1] as unknown as Record<string, unknown>, {
          outcome: "succeeded",
          actionRequestId: body.actionRequestId
        })
        // A duplicate delivery is answered the same way: no continuation, no second update.
        const again = yield* deliver(h, body)
        assert.notProperty(again.json, "continuation")
        assert.strictEqual(
          h.fake.requests.filter(
            (r) => r.method === "POST" && r.path === `/v1/subscriptions/${subscription.id as string}`
          ).length,
          1
        )
      })
  )

  it.live("a change left unpaid at expiry: its proration invoice voided, the subscription kept, reported failed", () =>
    Effect.gen(function* () {
      const target: { subscriptionId?: string } = {}
      const h = yield* harness(families(target), 2_000)
      const subscription = yield* paidSubscription(h, target)
      yield* deliver(h, yield* paymentBody("payment.existing_subscription_change"))
      const invoice = [...h.fake.objects.values()].find((o) => o.billing_reason === "subscription_update")!
      const all = yield* waitForCompletions(h, 2)
      assert.strictEqual(all[1]!.outcome, "failed")
      assert.strictEqual(all[1]!.evidence.reasonCode, "continuation_expired")
      assert.strictEqual(invoice.status, "void")
      assert.strictEqual(subscription.status, "active")
      assert.strictEqual(price(subscription), "price_monthly")
      assert.isFalse(h.fake.requests.some((r) => r.method === "DELETE"))
    })
  )

  it.live(
    "a recovery: the open invoice bound to the action; declined (unknown), then paid (succeeded), read back",
    () =>
      Effect.gen(function* () {
        const target: { subscriptionId?: string; invoiceId?: string } = {}
        const h = yield* harness(families(target))
        const subscription = yield* paidSubscription(h, target)
        const renewal = h.fake.failRenewal(subscription.id as string)
        target.invoiceId = renewal.id as string
        const body = yield* paymentBody("recover_payment")
        const answer = yield* deliver(h, body)
        assert.strictEqual(answer.status, 202, JSON.stringify(answer.json))
        const intentId = h.fake.invoicePaymentIntent(renewal.id as string)
        assert.strictEqual(answer.json.continuation.clientSecret, h.fake.objects.get(intentId)!.client_secret)
        assert.strictEqual((renewal.metadata as Record<string, string>).accord_action_request_id, body.actionRequestId)
        yield* webhook(h, h.fake.event("invoice.payment_failed", renewal))
        const declined = yield* waitForCompletions(h, 2)
        assert.deepInclude(declined[1]! as unknown as Record<string, unknown>, {
          outcome: "unknown",
          providerReference: renewal.id
        })
        assert.strictEqual(declined[1]!.evidence.reasonCode, "payment_declined")
        h.fake.payInvoice(renewal.id as string)
        yield* webhook(h, h.fake.event("payment_intent.succeeded", h.fake.objects.get(intentId)!))
        const paid = yield* waitForCompletions(h, 3)
        assert.strictEqual(paid[2]!.outcome, "succeeded")
        assert.deepInclude(yield* reconcile(h, body, intentId, "recover_payment"), {
          outcome: "succeeded",
          intent: "payment",
          invoicePaid: true,
          paymentStatus: "succeeded",
          chargedAmountMinor: 4900,
          chargedCurrency: "usd",
          customerBound: true
        })
        // The subscription's own action got nothing from the recovery.
        assert.strictEqual(
          (yield* distinctCompletions(h)).filter((c) => c.actionRequestId !== body.actionRequestId).length,
          1
        )
      })
  )

  it.live(
    "a recovery on an API version before 2025-03-31: the client secret of the invoice's expanded payment intent",
    () =>
      Effect.gen(function* () {
        const target: { subscriptionId?: string; invoiceId?: string } = {}
        const h = yield* harness(families(target), undefined, { invoiceShape: "legacy", apiVersion: "2024-06-20" })
        const subscription = yield* paidSubscription(h, target)
        const renewal = h.fake.failRenewal(subscription.id as string)
        target.invoiceId = renewal.id as string
        const answer = yield* deliver(h, yield* paymentBody("recover_payment"))
        assert.strictEqual(answer.status, 202, JSON.stringify(answer.json))
        const read = h.fake.requests.find(
          (r) => r.method === "GET" && r.path === `/v1/invoices/${renewal.id as string}`
        )!
        assert.deepStrictEqual(Object.values(read.params.expand as Record<string, string>), ["payment_intent"])
        const intentId = h.fake.invoicePaymentIntent(renewal.id as string)
        assert.strictEqual(answer.json.continuation.clientSecret, h.fake.objects.get(intentId)!.client_secret)
      })
  )

  it.live("a recovery of an invoice asking another amount than the host binds is rejected (payment_not_offered)", () =>
    Effect.gen(function* () {
      const target: { subscriptionId?: string; invoiceId?: string } = {}
      const h = yield* harness(families(target, { recoverMinor: 2500 }))
      const subscription = yield* paidSubscription(h, target)
      const renewal = h.fake.failRenewal(subscription.id as string)
      target.invoiceId = renewal.id as string
      const answer = yield* deliver(h, yield* paymentBody("recover_payment"))
      assert.deepInclude(answer.json, { state: "rejected", errorCode: "payment_not_offered" })
      assert.deepStrictEqual(renewal.metadata, {})
    })
  )

  it.live("a recovery of an invoice no longer open is rejected (nothing_to_recover)", () =>
    Effect.gen(function* () {
      const target: { subscriptionId?: string; invoiceId?: string } = {}
      const h = yield* harness(families(target))
      const subscription = yield* paidSubscription(h, target)
      const renewal = h.fake.failRenewal(subscription.id as string)
      h.fake.payInvoice(renewal.id as string)
      target.invoiceId = renewal.id as string
      const answer = yield* deliver(h, yield* paymentBody("recover_payment"))
      assert.deepInclude(answer.json, { state: "rejected", errorCode: "nothing_to_recover" })
    })
  )

  it.live("a recovery left unpaid at expiry: reported failed, the invoice still owed (open)", () =>
    Effect.gen(function* () {
      const target: { subscriptionId?: string; invoiceId?: string } = {}
      const h = yield* harness(families(target), 2_000)
      const subscription = yield* paidSubscription(h, target)
      const renewal = h.fake.failRenewal(subscription.id as string)
      target.invoiceId = renewal.id as string
      yield* deliver(h, yield* paymentBody("recover_payment"))
      const all = yield* waitForCompletions(h, 2)
      assert.strictEqual(all[1]!.outcome, "failed")
      assert.strictEqual(all[1]!.evidence.reasonCode, "continuation_expired")
      assert.strictEqual(renewal.status, "open")
      assert.isFalse(h.fake.requests.some((r) => r.path.endsWith("/void")))
    })
  )
})
