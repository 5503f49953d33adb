/**
 * The reference customer backend's subscription families end to end, over real HTTP, against the
 * local fake Stripe API and the real service: a new subscription, then a change of that subscription
 * to another price with proration (applied only once its proration invoice is paid), then a
 * renewal that failed recovered by `recover_payment` (a declined attempt first: `invoice.payment_failed`
 * leaves the action unresolved, the paid invoice verifies it). The service verifies each through the
 * kit's completion and its own reconciliation read.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { configFromEnv, start } from "../../../examples/customer-backend/Backend.ts"
import { startFakeStripe } from "../../adapters/stripe/FakeStripe.ts"
import { secrets, workspaceId } from "../../core/connector/dispatch/support.ts"
import { actionStatus, admin, bootService, connect, waitFor } from "../../e2e/support.ts"
import { request } from "../../support/http.ts"
import { storageVariants } from "../../support/storage.ts"
import { paymentIntake } from "../../support/deliveries.ts"
import type { PaymentMode } from "../../../core/protocol/messages/Common.ts"

const webhookSecret = "whsec_families_test_0123456789abcdef"
const memory = storageVariants[0]!

type Obj = Record<string, unknown>

describe("reference backend: every payment family against the fake Stripe API", () => {
  it.live(
    "a subscription changed with proration, then a failed renewal recovered (declined once, then paid), each verified by the service",
    () =>
      Effect.gen(function* () {
        const fake = yield* Effect.acquireRelease(
          Effect.promise(() => startFakeStripe({ webhookSecret })),
          (f) => Effect.promise(() => f.close())
        )
        const service = yield* bootService({ storage: memory })
        const env = {
          PORT: "0",
          ACCORD_WORKSPACE_ID: workspaceId,
          ACCORD_ACTION_SIGNING_SECRET: Redacted.value(secrets.actionSigning),
          ACCORD_COMPLETION_SECRET: Redacted.value(secrets.completion),
          ACCORD_SERVICE_URL: service.base,
          ACCORD_ALLOW_INSECURE_ENDPOINTS: "true",
          ACCORD_DATA_DIR: "memory://",
          STRIPE_SECRET_KEY: fake.secretKey,
          STRIPE_PUBLISHABLE_KEY: "pk_test_families",
          STRIPE_WEBHOOK_SECRET: webhookSecret,
          STRIPE_API_BASE: fake.apiBase,
          // 15.00 and 49.00 usd a month in the fake.
          EXAMPLE_SUBSCRIPTION_PRICES: '{"pro":{"priceId":"price_monthly"},"team":{"priceId":"price_team"}}'
        }
        const backend = yield* Effect.acquireRelease(
          Effect.promise(() => start(configFromEnv(env))),
          (b) => Effect.promise(() => b.close())
        )
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
        const deliver = (type: string, object: Obj) =>
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
        const proration = yield* waitFor(
          Effect.sync(() => objects("invoice").find((o) => o.billing_reason === "subscription_update")),
          (found) => found !== undefined,
          "the proration invoice"
        )
        assert.deepInclude(proration!, { amount_due: 3400, currency: "usd", status: "open" })
        // The invoice carries the change's bindings; the initial invoice still names the subscription's action.
        assert.strictEqual((proration!.metadata as Obj).accord_action_request_id, changed)
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
          Effect.sync(() => (renewal.metadata as Obj).accord_action_request_id),
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
})
