/**
 * The reference customer backend with Stripe, end to end over real HTTP and offline: configured by
 * `STRIPE_SECRET_KEY`, `STRIPE_PUBLISHABLE_KEY`, `STRIPE_WEBHOOK_SECRET` and `STRIPE_API_BASE`
 * (a local fake Stripe API), it offers payment modes in the handshake, answers a one-time purchase
 * with a continuation priced from its own list, verifies Stripe's webhook at `POST /stripe/webhook`,
 * and the service verifies the action from the kit's completion and its reconciliation read. Plus
 * the configuration's Stripe rules, one test per refusal.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { configFromEnv, start } from "../../../examples/customer-backend/Backend.ts"
import type { ActionIntake } from "../../../core/connector/Action.ts"
import { startFakeStripe } from "../../adapters/stripe/FakeStripe.ts"
import { intakeInput, secrets, workspaceId } from "../../core/connector/dispatch/support.ts"
import { actionStatus, admin, bootService, connect, waitFor } from "../../e2e/support.ts"
import { request } from "../../support/http.ts"
import { storageVariants } from "../../support/storage.ts"
import { executionBody, executionDelivery, startService } from "../../support/customer.ts"
import { importSigningKeys } from "../../../core/protocol/Signing.ts"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { fixtureActionIds, paymentIntake } from "../../support/deliveries.ts"
import type { PaymentMode } from "../../../core/protocol/messages/Common.ts"

const webhookSecret = "whsec_backend_test_0123456789abcdef"
const memory = storageVariants[0]!

const baseEnv = (serviceUrl: string): Record<string, string> => ({
  PORT: "0",
  ACCORD_WORKSPACE_ID: workspaceId,
  ACCORD_ACTION_SIGNING_SECRET: Redacted.value(secrets.actionSigning),
  ACCORD_COMPLETION_SECRET: Redacted.value(secrets.completion),
  ACCORD_SERVICE_URL: serviceUrl,
  ACCORD_ALLOW_INSECURE_ENDPOINTS: "true",
  ACCORD_DATA_DIR: "memory://"
})

const purchase = (accountId: string): ActionIntake => {
  const base = intakeInput(accountId)
  return {
    ...base,
    // The fixture catalog's one-time purchase (its id, key, offer version and price).
    action: {
      ...base.action,
      id: fixtureActionIds["payment.one_time_purchase"]!,
      key: "pay_one_time_purchase",
      operation: { family: "payment.one_time_purchase", priceKey: "addon" }
    },
    payment: {
      mode: "one_time_purchase",
      actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",
      offerVersionId: "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e",
      expected: { amountMinor: 4900, currency: "usd", priceReferenceHash: "c".repeat(64) }
    }
  }
}

/**
 * The fake Stripe API, the real service and the reference backend on both (its Stripe variables
 * set, `env` added), for the current scope.
 */
const stripeBackend = (env: Record<string, string> = {}, connectedAccounts?: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const fake = yield* Effect.acquireRelease(
      Effect.promise(() =>
        startFakeStripe({ webhookSecret, ...(connectedAccounts !== undefined ? { connectedAccounts } : {}) })
      ),
      (f) => Effect.promise(() => f.close())
    )
    const service = yield* bootService({ storage: memory })
    const backend = yield* Effect.acquireRelease(
      Effect.promise(() =>
        start(
          configFromEnv({
            ...baseEnv(service.base),
            STRIPE_SECRET_KEY: fake.secretKey,
            STRIPE_PUBLISHABLE_KEY: "pk_test_backend",
            STRIPE_WEBHOOK_SECRET: webhookSecret,
            STRIPE_API_BASE: fake.apiBase,
            ...env
          })
        )
      ),
      (b) => Effect.promise(() => b.close())
    )
    return { fake, service, backend }
  })

/**
 * Connects the backend, checks the connection proved one-time purchases, and asks for one for
 * `accountId`: the created action request's id.
 */
const connectAndPurchase = (
  service: Effect.Effect.Success<ReturnType<typeof stripeBackend>>["service"],
  backendUrl: string,
  accountId: string
) =>
  Effect.gen(function* () {
    yield* connect(service, `${backendUrl}/connector`, secrets)
    const connector = yield* request(`${service.ws}/connector`, { headers: admin })
    assert.include(JSON.stringify(connector.json.paymentCapabilities), "one_time_purchase")
    const created = yield* request(`${service.ws}/action-requests`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(purchase(accountId))
    })
    assert.strictEqual(created.status, 202, created.text)
    return created.json.actionRequestId as string
  })

describe("reference backend with Stripe", () => {
  it.live(
    "payment modes in the handshake; a one-time purchase paid at Stripe, its webhook at POST /stripe/webhook, verified by the service",
    () =>
      Effect.gen(function* () {
        const { backend, fake, service } = yield* stripeBackend()
        const id = yield* connectAndPurchase(service, backend.url, "acct_backend_pay")
        const intent = yield* waitFor(
          Effect.sync(() => [...fake.objects.values()].find((o) => o.object === "payment_intent")),
          (found) => found !== undefined,
          "the payment intent"
        )
        assert.deepInclude(intent!, { amount: 4900, currency: "usd" })
        fake.succeed(intent!.id as string)
        const delivery = fake.event("payment_intent.succeeded", intent!)
        const forged = yield* request(`${backend.url}/stripe/webhook`, {
          method: "POST",
          // The first hex digit of the signature changed to another one (replacing it with a fixed "0"
          // forged nothing whenever the signature already began with 0: one run in sixteen).
          headers: {
            "content-type": "application/json",
            "stripe-signature": delivery.header.replace(
              /v1=([0-9a-f])/,
              (_, d: string) => `v1=${d === "0" ? "1" : "0"}`
            )
          },
          body: delivery.payload
        })
        assert.strictEqual(forged.status, 400)
        const answered = yield* request(`${backend.url}/stripe/webhook`, {
          method: "POST",
          headers: { "content-type": "application/json", "stripe-signature": delivery.header },
          body: delivery.payload
        })
        assert.strictEqual(answered.status, 200, answered.text)
        const status = yield* waitFor(
          actionStatus(service, id),
          (json) => json?.state === "verified",
          `${id} to be verified`
        )
        assert.deepStrictEqual(
          status.history.map((h: { toState: string }) => h.toState),
          ["dispatching", "accepted", "pending", "verified"]
        )
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "with STRIPE_CONNECTED_ACCOUNT_ID: every Stripe call, the proof's account read included, acts for the connected account",
    () =>
      Effect.gen(function* () {
        const connected = "acct_1ConnectedBackend"
        const { backend, fake, service } = yield* stripeBackend({ STRIPE_CONNECTED_ACCOUNT_ID: connected }, [connected])
        yield* connectAndPurchase(service, backend.url, "acct_backend_connected")
        yield* waitFor(
          Effect.sync(() => fake.requests.find((r) => r.method === "POST" && r.path === "/v1/payment_intents")),
          (found) => found !== undefined,
          "the payment intent"
        )
        // The account read for the capability proof (`/v1/account`) included: the proof names the
        // connected account, as Stripe reports it for that header.
        const stripeCalls = [...fake.requests]
        assert.isTrue(stripeCalls.some((r) => r.path === "/v1/account"))
        for (const call of stripeCalls) assert.strictEqual(call.stripeAccount, connected, `${call.method} ${call.path}`)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "Stripe unreachable at start: the webhook route is mounted; once Stripe answers, without a restart, the proof returns and a purchase is verified",
    () =>
      Effect.gen(function* () {
        const fake = yield* Effect.acquireRelease(
          Effect.promise(() => startFakeStripe({ webhookSecret })),
          (f) => Effect.promise(() => f.close())
        )
        fake.outage = true
        const service = yield* bootService({ storage: memory })
        const env = {
          ...baseEnv(service.base),
          STRIPE_SECRET_KEY: fake.secretKey,
          STRIPE_PUBLISHABLE_KEY: "pk_test_backend",
          STRIPE_WEBHOOK_SECRET: webhookSecret,
          STRIPE_API_BASE: fake.apiBase
        }
        const backend = yield* Effect.acquireRelease(
          Effect.promise(() => start({ ...configFromEnv(env), stripeAccountRetry: { baseMillis: 20, capMillis: 50 } })),
          (b) => Effect.promise(() => b.close())
        )
        // Mounted although Stripe could not be read: a signed event is taken (and reconciled once Stripe answers).
        const early = fake.event("payment_intent.succeeded", { id: "pi_unknown", object: "payment_intent" })
        const taken = yield* request(`${backend.url}/stripe/webhook`, {
          method: "POST",
          headers: { "content-type": "application/json", "stripe-signature": early.header },
          body: early.payload
        })
        assert.strictEqual(taken.status, 200, taken.text)
        const reads = () => fake.requests.filter((r) => r.path === "/v1/account").length
        const readsDuringOutage = reads()
        fake.outage = false
        yield* waitFor(
          Effect.sync(reads),
          (n) => n > readsDuringOutage,
          "the account read again after Stripe recovered"
        )
        const id = yield* connectAndPurchase(service, backend.url, "acct_backend_outage")
        const intent = yield* waitFor(
          Effect.sync(() => [...fake.objects.values()].find((o) => o.object === "payment_intent")),
          (found) => found !== undefined,
          "the payment intent"
        )
        fake.succeed(intent!.id as string)
        const delivery = fake.event("payment_intent.succeeded", intent!)
        const answered = yield* request(`${backend.url}/stripe/webhook`, {
          method: "POST",
          headers: { "content-type": "application/json", "stripe-signature": delivery.header },
          body: delivery.payload
        })
        assert.strictEqual(answered.status, 200, answered.text)
        yield* waitFor(actionStatus(service, id), (json) => json?.state === "verified", `${id} to be verified`)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "EXAMPLE_SUBSCRIPTION_PRICES: a new subscription for the account's own Stripe customer; its initial invoice paid completes it",
    () =>
      Effect.gen(function* () {
        const fake = yield* Effect.acquireRelease(
          Effect.promise(() => startFakeStripe({ webhookSecret })),
          (f) => Effect.promise(() => f.close())
        )
        const sink = yield* Effect.acquireRelease(
          Effect.promise(() => startService()),
          (s) => Effect.promise(() => s.down())
        )
        const env = {
          ...baseEnv(sink.url),
          STRIPE_SECRET_KEY: fake.secretKey,
          STRIPE_PUBLISHABLE_KEY: "pk_test_backend",
          STRIPE_WEBHOOK_SECRET: webhookSecret,
          STRIPE_API_BASE: fake.apiBase,
          EXAMPLE_SUBSCRIPTION_PRICES: '{"pro":{"priceId":"price_monthly"}}'
        }
        const backend = yield* Effect.acquireRelease(
          Effect.promise(() => start(configFromEnv(env))),
          (b) => Effect.promise(() => b.close())
        )
        const keys = yield* importSigningKeys(secrets)
        const post = (family: string, actionRequestId: string) =>
          Effect.gen(function* () {
            const base = yield* executionBody(actionRequestId)
            const body = {
              ...base,
              action: { ...(base.action as object), key: "pay_sub", operation: { family, priceKey: "pro" } }
            }
            const delivery = yield* executionDelivery(keys, body)
            return yield* Effect.promise(async () => {
              const response = await fetch(`${backend.url}/connector`, {
                method: "POST",
                headers: delivery.headers,
                body: delivery.body
              })
              return { status: response.status, json: (await response.json()) as Record<string, any> }
            })
          })
        const answer = yield* post("payment.new_subscription", "9d2c4e6a-8b1f-4c3d-a5e7-5ab000000001")
        assert.strictEqual(answer.status, 202, JSON.stringify(answer.json))
        assert.strictEqual(answer.json.state, "accepted")
        assert.strictEqual(answer.json.continuation.intent, "payment")
        const subscription = [...fake.objects.values()].find((o) => o.object === "subscription")!
        const customer = [...fake.objects.values()].find((o) => o.object === "customer")!
        assert.strictEqual(subscription.customer, customer.id)
        // A second subscription of the same account reuses its customer.
        const second = yield* post("payment.new_subscription", "9d2c4e6a-8b1f-4c3d-a5e7-5ab000000002")
        assert.strictEqual(second.status, 202)
        assert.strictEqual([...fake.objects.values()].filter((o) => o.object === "customer").length, 1)
        fake.payInitialInvoice(subscription.id as string)
        const delivery = fake.event(
          "invoice.payment_succeeded",
          fake.objects.get(subscription.latest_invoice as string)!
        )
        const taken = yield* request(`${backend.url}/stripe/webhook`, {
          method: "POST",
          headers: { "content-type": "application/json", "stripe-signature": delivery.header },
          body: delivery.payload
        })
        assert.strictEqual(taken.status, 200, taken.text)
        yield* waitFor(
          Effect.sync(() => sink.received.length),
          (n) => n > 0,
          "the completion"
        )
        const completion = JSON.parse(new TextDecoder().decode(sink.received[0]!.body))
        assert.deepInclude(completion, { outcome: "succeeded", providerReference: subscription.id })
        // A price key not listed is rejected, nothing created.
        const unknown = yield* post("payment.one_time_purchase", "9d2c4e6a-8b1f-4c3d-a5e7-5ab000000003")
        assert.deepInclude(unknown.json, { state: "rejected", errorCode: "payment_not_offered" })
      }).pipe(Effect.scoped, Effect.provide(NodeCrypto.layer)),
    120_000
  )

  it.live(
    "a subscription changed with proration, then a failed renewal recovered (declined once, then paid), each verified by the service",
    () =>
      Effect.gen(function* () {
        const { backend, fake, service } = yield* stripeBackend({
          // 15.00 and 49.00 usd a month in the fake.
          EXAMPLE_SUBSCRIPTION_PRICES: '{"pro":{"priceId":"price_monthly"},"team":{"priceId":"price_team"}}'
        })
        yield* connect(service, `${backend.url}/connector`, secrets)
        const connector = yield* request(`${service.ws}/connector`, { headers: admin })
        const modes: ReadonlyArray<string> = connector.json.paymentCapabilities.modes
        assert.sameMembers(
          [...modes],
          ["one_time_purchase", "setup_only", "recover_payment", "new_subscription", "existing_subscription_change"]
        )

        const account = "acct_families_1"
        const objects = (kind: string) => [...fake.objects.values()].filter((o) => o.object === kind)
        const take = (mode: PaymentMode) =>
          Effect.gen(function* () {
            const created = yield* request(`${service.ws}/action-requests`, {
              method: "POST",
              headers: admin,
              body: JSON.stringify(paymentIntake(mode, account))
            })
            assert.strictEqual(created.status, 202, created.text)
            return created.json.actionRequestId as string
          })
        const deliver = (type: string, object: Record<string, unknown>) =>
          Effect.gen(function* () {
            const delivery = fake.event(type, object)
            const answered = yield* request(`${backend.url}/stripe/webhook`, {
              method: "POST",
              headers: { "content-type": "application/json", "stripe-signature": delivery.header },
              body: delivery.payload
            })
            assert.strictEqual(answered.status, 200, answered.text)
          })
        const verified = (id: string) =>
          waitFor(actionStatus(service, id), (json) => json?.state === "verified", `${id} to be verified`)

        // 1. A new subscription at 15.00 usd, its initial invoice paid.
        const subscribed = yield* take("new_subscription")
        const subscription = yield* waitFor(
          Effect.sync(() => objects("subscription")[0]),
          (found) => found !== undefined,
          "the subscription"
        )
        const subscriptionId = subscription!.id as string
        const initialInvoice = subscription!.latest_invoice as string
        fake.payInitialInvoice(subscriptionId)
        yield* deliver("invoice.payment_succeeded", fake.objects.get(initialInvoice)!)
        yield* verified(subscribed)

        // 2. The change to 49.00 usd: a proration invoice of the difference, the change pending until it is paid.
        const changed = yield* take("existing_subscription_change")
        // The proration invoice, once it carries the change's bindings (written after the update made it).
        const proration = yield* waitFor(
          Effect.sync(() => objects("invoice").find((o) => o.billing_reason === "subscription_update")),
          (found) => (found?.metadata as Record<string, unknown> | undefined)?.accord_action_request_id === changed,
          "the proration invoice bound to the change"
        )
        assert.deepInclude(proration!, { amount_due: 3400, currency: "usd", status: "open" })
        const items = () => (subscription!.items as { data: Array<{ price: { id: string } }> }).data
        assert.isNotNull(subscription!.pending_update)
        assert.strictEqual(items()[0]!.price.id, "price_monthly")
        const changing = yield* actionStatus(service, changed)
        assert.notStrictEqual(changing.state, "verified")
        fake.payInvoice(proration!.id as string)
        assert.strictEqual(items()[0]!.price.id, "price_team")
        yield* deliver("invoice.paid", fake.objects.get(proration!.id as string)!)
        yield* deliver("customer.subscription.updated", subscription!)
        yield* verified(changed)
        // From here on, nothing may reach the subscription's own action.
        const subscribedHistory = (yield* actionStatus(service, subscribed)).history.length

        // 3. A renewal of 49.00 usd declined: the subscription past due, its invoice open.
        const renewal = fake.failRenewal(subscriptionId)
        yield* deliver("invoice.payment_failed", renewal)
        const recovered = yield* take("recover_payment")
        yield* waitFor(
          Effect.sync(() => (renewal.metadata as Record<string, unknown>).accord_action_request_id),
          (id) => id === recovered,
          "the renewal invoice bound to the recovery"
        )
        // The customer's first attempt is declined: `unknown` (payment_declined), the action not failed.
        fake.decline(fake.invoicePaymentIntent(renewal.id as string))
        yield* deliver("invoice.payment_failed", renewal)
        yield* waitFor(
          actionStatus(service, recovered),
          (json) => json?.state === "unresolved",
          `${recovered} to be unresolved after the decline`
        )
        // Paid with another card: verified, the subscription active again.
        fake.payInvoice(renewal.id as string)
        yield* deliver("invoice.paid", renewal)
        const done = yield* verified(recovered)
        assert.strictEqual(subscription!.status, "active")
        assert.includeMembers(
          done.history.map((h: { toState: string }) => h.toState),
          ["accepted", "unresolved", "pending", "verified"]
        )
        // Nothing of the recovery or the change reached the subscription's own action.
        assert.strictEqual((yield* actionStatus(service, subscribed)).history.length, subscribedHistory)
      }).pipe(Effect.scoped),
    180_000
  )

  describe("configuration", () => {
    const env = baseEnv("https://accord.example.com")
    const stripe = {
      STRIPE_SECRET_KEY: "sk_test_abc123",
      STRIPE_PUBLISHABLE_KEY: "pk_test_abc123",
      STRIPE_WEBHOOK_SECRET: "whsec_abc123def456"
    }
    const problems = (more: Record<string, string>): ReadonlyArray<string> => {
      try {
        configFromEnv({ ...env, ...more })
      } catch (error) {
        return (error as { readonly problems: ReadonlyArray<string> }).problems
      }
      return []
    }

    it("without STRIPE_* the backend runs without payments", () => {
      assert.isUndefined(configFromEnv(env).stripe)
    })
    it("all three read under their exact names, STRIPE_API_BASE and EXAMPLE_PRICES too", () => {
      const config = configFromEnv({
        ...env,
        ...stripe,
        STRIPE_API_BASE: "https://stripe-fake.example.com",
        EXAMPLE_PRICES: '{"pro":{"amountMinor":100,"currency":"eur"}}'
      })
      assert.deepStrictEqual(config.stripe, {
        secretKey: "sk_test_abc123",
        publishableKey: "pk_test_abc123",
        webhookSecret: "whsec_abc123def456",
        apiBase: "https://stripe-fake.example.com",
        prices: { pro: { amountMinor: 100, currency: "eur" } }
      })
    })
    it("STRIPE_CONNECTED_ACCOUNT_ID: an acct_ id is read; anything else is refused", () => {
      assert.strictEqual(
        configFromEnv({ ...env, ...stripe, STRIPE_CONNECTED_ACCOUNT_ID: "acct_1Connected" }).stripe?.connectedAccountId,
        "acct_1Connected"
      )
      assert.deepStrictEqual(problems({ ...stripe, STRIPE_CONNECTED_ACCOUNT_ID: "cus_123" }), [
        "STRIPE_CONNECTED_ACCOUNT_ID must be a Stripe account id (acct_…)"
      ])
    })
    it("one of the three missing names the missing ones", () => {
      assert.deepStrictEqual(problems({ STRIPE_SECRET_KEY: stripe.STRIPE_SECRET_KEY }), [
        "STRIPE_PUBLISHABLE_KEY is required when STRIPE_SECRET_KEY is set",
        "STRIPE_WEBHOOK_SECRET is required when STRIPE_SECRET_KEY is set"
      ])
    })
    it("a live secret key with a test publishable key (mode disagreement)", () => {
      assert.deepStrictEqual(problems({ ...stripe, STRIPE_SECRET_KEY: "sk_live_abc123" }), [
        "STRIPE_SECRET_KEY and STRIPE_PUBLISHABLE_KEY must both be test keys or both live keys"
      ])
    })
    it("a webhook secret equal to a connector secret, never echoing it", () => {
      const found = problems({ ...stripe, STRIPE_WEBHOOK_SECRET: env.ACCORD_COMPLETION_SECRET! })
      assert.deepStrictEqual(found.length, 2) // not whsec_, and not a third secret
      assert.include(found[1], "a third secret")
      assert.notInclude(found.join("\n"), env.ACCORD_COMPLETION_SECRET!)
    })
    it("keys of the wrong kind", () => {
      assert.deepStrictEqual(
        problems({ ...stripe, STRIPE_SECRET_KEY: "pk_test_abc", STRIPE_PUBLISHABLE_KEY: "sk_test_abc" }).length,
        2
      )
    })
    it("an http STRIPE_API_BASE without ACCORD_ALLOW_INSECURE_ENDPOINTS", () => {
      assert.deepStrictEqual(
        problems({ ...stripe, ACCORD_ALLOW_INSECURE_ENDPOINTS: "false", STRIPE_API_BASE: "http://127.0.0.1:12111" }),
        ["STRIPE_API_BASE must be https (ACCORD_ALLOW_INSECURE_ENDPOINTS=true allows http for a local fake)"]
      )
    })
    it("a malformed EXAMPLE_PRICES", () => {
      assert.strictEqual(
        problems({ ...stripe, EXAMPLE_PRICES: '{"addon":{"amountMinor":-1,"currency":"usd"}}' }).length,
        1
      )
    })
  })
})
