/**
 * Payments end to end over real HTTP, offline: the Accord server (real composition, SQL storage,
 * its reconciler running), the customer kit with `payments.stripe` on its own loopback port
 * (connector at `/connector`, Stripe webhooks at `/stripe/webhook`), and a local fake Stripe API
 * the official `stripe` client is pointed at. Each of the five payment verification rules is
 * exercised against the service's reconciler: the kit answers the service's reads with fresh
 * provider reads and the newest verified webhook event.
 */
import { createServer, type Server as NodeServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { makeCustomerKit } from "../../adapters/customer/Kit.ts"
import * as HttpTransport from "../../adapters/transport/HttpTransport.ts"
import type { ActionIntake } from "../../core/connector/Action.ts"
import type { PaymentPlan } from "../../core/customer/Payments.ts"
import { type FakeStripe, startFakeStripe } from "../adapters/stripe/FakeStripe.ts"
import { intakeInput, secrets, workspaceId } from "../core/connector/dispatch/support.ts"
import { request } from "../support/http.ts"
import { storageVariants } from "../support/storage.ts"
import { actionStatus, admin, adminKey, bootService, connect, type Service, waitFor } from "./support.ts"
import { catalogFor, publishCatalogHttp } from "../support/catalog.ts"
import { fixtureActionIds } from "../support/deliveries.ts"

const webhookSecret = "whsec_e2e_payments_0123456789abcdef"
type Mode = "one_time_purchase" | "setup_only" | "new_subscription"

/**
 * The host's price list: what each mode charges (the service's snapshot says the same). An account
 * whose id names `paid_sub` subscribes without a trial (the initial invoice is paid).
 */
const planFor = (mode: Mode, accountId = ""): PaymentPlan =>
  mode === "one_time_purchase"
    ? { mode, amountMinor: 4900, currency: "usd", customerId: "cus_e2e" }
    : mode === "setup_only"
      ? { mode, customerId: "cus_e2e" }
      : { mode, customerId: "cus_e2e", priceId: "price_monthly", trialDays: accountId.includes("paid_sub") ? null : 14 }

/** The catalog version these actions bind to: one action and one offer per mode (published in `setup`). */
const paymentsVersionId = "0f3a5c7e-9b1d-4f2a-8c4e-6a8b0c2d4e61"
const offerOf: Record<Mode, string> = {
  one_time_purchase: "0f3a5c7e-9b1d-4f2a-8c4e-6a8b0c2d4e71",
  setup_only: "0f3a5c7e-9b1d-4f2a-8c4e-6a8b0c2d4e72",
  new_subscription: "0f3a5c7e-9b1d-4f2a-8c4e-6a8b0c2d4e73"
}

const intake = (mode: Mode, accountId: string): ActionIntake => {
  const base = intakeInput(accountId)
  return {
    ...base,
    binding: { ...base.binding, offerId: offerOf[mode], publishedVersionId: paymentsVersionId },
    action: {
      ...base.action,
      id: fixtureActionIds[`payment.${mode}`]!,
      key: `pay_${mode}`,
      operation: { family: `payment.${mode}`, priceKey: "addon" }
    },
    payment: {
      mode,
      actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",
      offerVersionId: mode === "setup_only" ? null : "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e",
      expected:
        mode === "setup_only"
          ? null
          : {
              amountMinor: mode === "one_time_purchase" ? 4900 : 1500,
              currency: "usd",
              priceReferenceHash: "c".repeat(64)
            }
    }
  }
}

/** The kit with Stripe payments, serving the connector and the webhook route, for the scope. */
const serveKit = (storage: (typeof storageVariants)[number], serviceUrl: string, fake: FakeStripe) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const kit = await makeCustomerKit({
        workspaceId,
        secrets,
        serviceUrl,
        allowInsecureServiceUrl: true,
        storage: storage.layer(),
        transport: HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 5_000 }),
        worker: { pollMillis: 100 },
        payment: {
          modes: ["one_time_purchase", "setup_only", "new_subscription"],
          providerAccountId: fake.accountId,
          livemode: false
        },
        executor: {
          execute: async () => {
            throw new Error("Payment actions complete from the provider")
          },
          lookup: async () => undefined
        },
        payments: {
          stripe: {
            secretKey: Redacted.make(fake.secretKey),
            publishableKey: "pk_test_e2e",
            webhookSecret: Redacted.make(webhookSecret),
            apiBase: fake.apiBase,
            maxNetworkRetries: 0
          },
          plan: async (claimed) =>
            planFor(claimed.action.operation.family.replace("payment.", "") as Mode, claimed.accountId)
        }
      })
      const server: NodeServer = createServer((req, res) => {
        if (req.url === "/stripe/webhook") return kit.webhook!.nodeHandler(req, res)
        return kit.nodeHandler(req, res)
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      return { url: `${base}/connector`, webhookUrl: `${base}/stripe/webhook`, server, kit }
    }),
    ({ kit, server }) =>
      Effect.promise(async () => {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
        await kit.dispose()
      })
  )

const fakeStripe = Effect.acquireRelease(
  Effect.promise(() => startFakeStripe({ webhookSecret })),
  (fake) => Effect.promise(() => fake.close())
)

const submit = (service: Service, mode: Mode, accountId: string) =>
  Effect.map(
    request(`${service.ws}/action-requests`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(intake(mode, accountId))
    }),
    (created) => {
      assert.strictEqual(created.status, 202, JSON.stringify(created.json))
      return created.json.actionRequestId as string
    }
  )

/** The provider object the kit created for the action (found by its metadata at the fake). */
const createdFor = (fake: FakeStripe, actionRequestId: string, object: string) =>
  Effect.map(
    waitFor(
      Effect.sync(() =>
        [...fake.objects.values()].find(
          (o) =>
            o.object === object &&
            (o.metadata as Record<string, string> | undefined)?.accord_action_request_id === actionRequestId
        )
      ),
      (found) => found !== undefined,
      `the ${object} of ${actionRequestId}`
    ),
    (found) => found!
  )

const sendWebhook = (url: string, delivery: { readonly payload: string; readonly header: string }) =>
  Effect.map(
    request(url, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": delivery.header },
      body: delivery.payload
    }),
    (answer) => assert.strictEqual(answer.status, 200, answer.text)
  )

type Entry = { readonly trigger: string; readonly toState: string; readonly detail: Record<string, unknown> }
const reconciliations = (status: { readonly history: ReadonlyArray<Entry> }) =>
  status.history.filter((h) => h.trigger === "reconciliation")

const setUp = (storage: (typeof storageVariants)[number]) =>
  Effect.gen(function* () {
    const service = yield* bootService({ storage })
    const fake = yield* fakeStripe
    const kit = yield* serveKit(storage, service.base, fake)
    yield* connect(service, kit.url, secrets)
    yield* Effect.promise(() =>
      publishCatalogHttp(
        service.base,
        workspaceId,
        adminKey,
        catalogFor(
          (["one_time_purchase", "setup_only", "new_subscription"] as const).map((m) => intake(m, "acct_catalog"))
        )
      )
    )
    return { service, fake, kit }
  })

/** A one-time purchase paid at the provider, its success webhook delivered, and the action verified. */
const paidAndVerified = (env: Effect.Effect.Success<ReturnType<typeof setUp>>, accountId: string) =>
  Effect.gen(function* () {
    const { fake, kit, service } = env
    const id = yield* submit(service, "one_time_purchase", accountId)
    const intent = yield* createdFor(fake, id, "payment_intent")
    fake.succeed(intent.id as string)
    yield* sendWebhook(kit.webhookUrl, fake.event("payment_intent.succeeded", intent))
    const status = yield* waitFor(
      actionStatus(service, id),
      (json) => json?.state === "verified",
      `${id} to be verified`
    )
    return { id, intent, status }
  })

/** The suite on one SQL storage variant; each variant runs from a test file of its own. */
export const suite = (name: "pglite" | "postgres"): void => {
  const storage = storageVariants.find((v) => v.name === name)!
  describe.skipIf(!storage.available)(`payments end to end (${storage.name})`, () => {
    it.live(
      "rule 2: a one-time purchase paid at the provider is verified (signed event, fresh read, exact amount)",
      () =>
        Effect.gen(function* () {
          const env = yield* setUp(storage)
          const { id, status } = yield* paidAndVerified(env, "acct_e2e_pay_1")
          const steps = status.history.map((h: Entry) => `${h.trigger}:${h.toState}`)
          assert.deepStrictEqual(steps, [
            "intake:dispatching",
            "acknowledgement:accepted",
            "completion:pending",
            "reconciliation:verified"
          ])
          const [read] = reconciliations(status)
          assert.deepInclude(read!.detail, {
            verdict: "verified",
            reason: "charge_matches",
            eventSignatureVerified: true,
            chargedAmountMinor: 4900
          })
          assert.notInclude(JSON.stringify(status), "pi_fake", "only hashes of provider references are kept")
          assert.isString(id)
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "rule 2: a partial refund before the read stays inconclusive",
      () =>
        Effect.gen(function* () {
          const { fake, kit, service } = yield* setUp(storage)
          const id = yield* submit(service, "one_time_purchase", "acct_e2e_pay_2")
          const intent = yield* createdFor(fake, id, "payment_intent")
          fake.succeed(intent.id as string)
          const charge = fake.refund(intent.id as string, 1_000)
          yield* sendWebhook(kit.webhookUrl, fake.event("charge.refunded", charge))
          const status = yield* waitFor(
            actionStatus(service, id),
            (json) => reconciliations(json ?? { history: [] }).length > 0,
            `${id} to be judged`
          )
          assert.strictEqual(status.state, "pending")
          assert.deepInclude(reconciliations(status)[0]!.detail, {
            verdict: "inconclusive",
            reason: "partial_refund",
            refundedAmountMinor: 1_000
          })
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "rule 2: a full refund after verification sends reversed, and the read reverses the action",
      () =>
        Effect.gen(function* () {
          const env = yield* setUp(storage)
          const { id, intent } = yield* paidAndVerified(env, "acct_e2e_pay_3")
          const charge = env.fake.refund(intent.id as string)
          yield* sendWebhook(env.kit.webhookUrl, env.fake.event("charge.refunded", charge))
          const status = yield* waitFor(
            actionStatus(env.service, id),
            (json) => json?.state === "reversed",
            `${id} to be reversed`
          )
          const reads = reconciliations(status)
          assert.deepInclude(reads[reads.length - 1]!.detail, {
            verdict: "reversed",
            reason: "full_refund",
            refundedAmountMinor: 4900
          })
          const completions = status.history.filter((h: Entry) => h.trigger === "completion")
          assert.strictEqual(completions.length, 2)
          assert.notStrictEqual(completions[0]!.detail.completionId, completions[1]!.detail.completionId)
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "rule 3: a new subscription trialing with a saved method is verified",
      () =>
        Effect.gen(function* () {
          const { fake, kit, service } = yield* setUp(storage)
          const id = yield* submit(service, "new_subscription", "acct_e2e_pay_4")
          const setup = yield* createdFor(fake, id, "setup_intent")
          fake.confirmSetup(setup.id as string)
          yield* sendWebhook(kit.webhookUrl, fake.event("setup_intent.succeeded", setup))
          const status = yield* waitFor(
            actionStatus(service, id),
            (json) => json?.state === "verified",
            `${id} to be verified`
          )
          const [read] = reconciliations(status)
          assert.strictEqual(read!.detail.verdict, "verified")
          assert.include(["trial_started", "initial_invoice_paid"], read!.detail.reason)
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "rule 3 and 2: a new subscription's paid initial invoice is verified; a full refund of its charge sends reversed and the read reverses it",
      () =>
        Effect.gen(function* () {
          const { fake, kit, service } = yield* setUp(storage)
          const id = yield* submit(service, "new_subscription", "acct_e2e_paid_sub_6")
          const subscription = yield* createdFor(fake, id, "subscription")
          fake.payInitialInvoice(subscription.id as string)
          yield* sendWebhook(
            kit.webhookUrl,
            fake.event("invoice.payment_succeeded", fake.objects.get(subscription.latest_invoice as string)!)
          )
          const verified = yield* waitFor(
            actionStatus(service, id),
            (json) => json?.state === "verified",
            `${id} to be verified`
          )
          assert.deepInclude(reconciliations(verified)[0]!.detail, {
            verdict: "verified",
            reason: "initial_invoice_paid",
            chargedAmountMinor: 1500,
            refundedAmountMinor: 0
          })
          const charge = fake.refund(fake.initialPaymentIntent(subscription.id as string))
          yield* sendWebhook(kit.webhookUrl, fake.event("charge.refunded", charge))
          const status = yield* waitFor(
            actionStatus(service, id),
            (json) => json?.state === "reversed",
            `${id} to be reversed`
          )
          const reads = reconciliations(status)
          assert.deepInclude(reads[reads.length - 1]!.detail, {
            verdict: "reversed",
            reason: "full_refund",
            chargedAmountMinor: 1500,
            refundedAmountMinor: 1500
          })
          const completions = status.history.filter((h: Entry) => h.trigger === "completion")
          assert.strictEqual(completions.length, 2)
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "rule 4: setup-only is verified by an attached method and records no revenue",
      () =>
        Effect.gen(function* () {
          const { fake, kit, service } = yield* setUp(storage)
          const id = yield* submit(service, "setup_only", "acct_e2e_pay_5")
          const setup = yield* createdFor(fake, id, "setup_intent")
          fake.confirmSetup(setup.id as string)
          yield* sendWebhook(kit.webhookUrl, fake.event("setup_intent.succeeded", setup))
          const status = yield* waitFor(
            actionStatus(service, id),
            (json) => json?.state === "verified",
            `${id} to be verified`
          )
          assert.deepInclude(reconciliations(status)[0]!.detail, {
            verdict: "verified",
            reason: "method_attached",
            chargedAmountMinor: 0
          })
        }).pipe(Effect.scoped),
      90_000
    )
  })
}
