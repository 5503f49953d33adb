/**
 * `accord customer doctor` with the Stripe installation values: installation checks 1–6 against
 * a real kit with Stripe payments, served over HTTP, and a local fake Stripe API that delivers its
 * own signed webhooks to the kit (as Stripe does after a confirm or a refund). Each check is
 * passed, failed or not verified with why; the payment test cases are a section of their own; a
 * live key stops them with one clear line.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { type CustomerKit, makeCustomerKit } from "../../../adapters/customer/Kit.ts"
import {
  type DoctorPaymentOptions,
  type DoctorReport,
  formatReport,
  paymentOptionsFromEnv,
  runDoctor
} from "../../../adapters/doctor/CustomerDoctor.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import { cipherLayer } from "../../support/storage.ts"
import { secrets, startService, workspaceId } from "../../support/customer.ts"
import { type FakeStripe, startFakeStripe } from "../stripe/FakeStripe.ts"

const webhookSecret = "whsec_doctor_test_0123456789abcdef"
let fake: FakeStripe
let kit: CustomerKit
let server: Server
let service: Awaited<ReturnType<typeof startService>>
let base: string

beforeAll(async () => {
  fake = await startFakeStripe({ webhookSecret })
  service = await startService()
  kit = await makeCustomerKit({
    workspaceId,
    secrets,
    serviceUrl: service.url,
    allowInsecureServiceUrl: true,
    storage: MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)),
    worker: { pollMillis: 20, backoff: { baseMillis: 50, capMillis: 200 } },
    payment: { modes: ["one_time_purchase"], providerAccountId: fake.accountId, livemode: false },
    executor: {
      execute: async () => {
        throw new Error("unused")
      },
      lookup: async () => undefined
    },
    payments: {
      stripe: {
        secretKey: Redacted.make(fake.secretKey),
        publishableKey: "pk_test_doctor",
        webhookSecret: Redacted.make(webhookSecret),
        apiBase: fake.apiBase,
        maxNetworkRetries: 0
      },
      plan: async () => ({ mode: "one_time_purchase", amountMinor: 4900, currency: "usd" })
    }
  })
  server = createServer((req, res) =>
    req.url === "/stripe/webhook" ? kit.webhook!.nodeHandler(req, res) : kit.nodeHandler(req, res)
  )
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  fake.webhookTarget = `${base}/stripe/webhook`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await kit.dispose()
  await service.down()
  await fake.close()
})

const appEnv = () => ({
  STRIPE_SECRET_KEY: fake.secretKey,
  STRIPE_PUBLISHABLE_KEY: "pk_test_doctor",
  STRIPE_WEBHOOK_SECRET: webhookSecret,
  STRIPE_API_BASE: fake.apiBase,
  ACCORD_WORKSPACE_ID: workspaceId,
  ACCORD_CONNECTED_ACCOUNT_ID: fake.accountId,
  ACCORD_DOCTOR_PRICE_IDS: "price_test_addon",
  ACCORD_DOCTOR_WEBHOOK_URL: `${base}/stripe/webhook`,
  ACCORD_DOCTOR_PAYMENT_TESTS: "1"
})

const doctor = (payments: DoctorPaymentOptions) =>
  runDoctor({
    endpoint: `${base}/connector`,
    workspaceId,
    actionSigningSecret: Redacted.value(secrets.actionSigning),
    completionSecret: Redacted.value(secrets.completion),
    payments: { settleMillis: 5_000, ...payments }
  })

const statuses = (report: DoctorReport, section?: string) =>
  Object.fromEntries(
    report.checks.filter((c) => section === undefined || c.section === section).map((c) => [c.id, c.status])
  )

describe("doctor: installation checks before offering payment capabilities", () => {
  it("a correct installation passes 1–6, the payment test cases in their own section", async () => {
    const report = await doctor(paymentOptionsFromEnv(appEnv())!)
    assert.deepStrictEqual(
      statuses(report, "installation"),
      {
        provider_account: "passed",
        mode_agreement: "passed",
        installation_values: "passed",
        webhook_secret_separate: "passed",
        webhook_unsigned_rejected: "passed",
        webhook_stale_rejected: "passed",
        webhook_uncovered_acknowledged: "passed",
        revision_zero: "passed"
      },
      JSON.stringify(report.checks.filter((c) => c.status !== "passed"))
    )
    assert.deepStrictEqual(
      statuses(report, "payment_tests"),
      {
        payment_test_retries: "passed",
        payment_test_success: "passed",
        payment_test_account_isolation: "passed",
        payment_test_refund: "passed",
        payment_test_decline: "passed"
      },
      JSON.stringify(report.checks.filter((c) => c.status !== "passed"))
    )
    assert.isTrue(report.ok)
    const text = formatReport(report)
    assert.isBelow(
      text.indexOf("Handshake and handler:"),
      text.indexOf("Payment test cases (provider test data only):")
    )
    for (const secret of [webhookSecret, fake.secretKey, Redacted.value(secrets.completion)])
      assert.notInclude(JSON.stringify(report) + text, secret)
  }, 60_000)

  it("a live secret key stops the payment test cases with one clear line, and runs none", async () => {
    const requestsBefore = fake.requests.filter((r) => r.path.endsWith("/confirm")).length
    const report = await doctor({ ...paymentOptionsFromEnv(appEnv())!, secretKey: "sk_live_not_for_tests_0123" })
    const refusal = report.checks.find((c) => c.id === "payment_tests_test_keys")!
    assert.strictEqual(refusal.status, "failed")
    assert.include(refusal.reason, "refused: STRIPE_SECRET_KEY is a live key (sk_live_)")
    assert.notInclude(refusal.reason, "not_for_tests")
    assert.isTrue(
      report.checks.filter((c) => c.id.startsWith("payment_test_")).every((c) => c.status === "not_verified")
    )
    assert.strictEqual(fake.requests.filter((r) => r.path.endsWith("/confirm")).length, requestsBefore)
    assert.include(formatReport(report), "✗ 6. Payment test cases run on provider test data only — refused")
  }, 30_000)

  it("another connected account, one the key may not act for, fails check 1", async () => {
    const report = await doctor({
      ...paymentOptionsFromEnv(appEnv())!,
      connectedAccountId: "acct_someone_else",
      runPaymentTests: false
    })
    const check = report.checks.find((c) => c.id === "provider_account")!
    assert.deepStrictEqual(
      [check.status, check.reason],
      ["failed", "ACCORD_CONNECTED_ACCOUNT_ID names another account, one STRIPE_SECRET_KEY may not act for"]
    )
    assert.isFalse(report.ok)
  }, 30_000)

  it("a live publishable key with a test secret key fails check 2", async () => {
    const report = await doctor({
      ...paymentOptionsFromEnv(appEnv())!,
      publishableKey: "pk_live_x",
      runPaymentTests: false
    })
    assert.strictEqual(statuses(report).mode_agreement, "failed")
  }, 30_000)

  it("a missing installation value fails check 3, naming it", async () => {
    const env = { ...appEnv(), STRIPE_PUBLISHABLE_KEY: "" }
    const report = await doctor({ ...paymentOptionsFromEnv({ ...appEnv() })!, env, runPaymentTests: false })
    const check = report.checks.find((c) => c.id === "installation_values")!
    assert.deepStrictEqual([check.status, check.reason], ["failed", "not set: STRIPE_PUBLISHABLE_KEY"])
  }, 30_000)

  it("a webhook secret equal to a connector secret fails check 4", async () => {
    const report = await doctor({
      ...paymentOptionsFromEnv(appEnv())!,
      webhookSecret: Redacted.value(secrets.completion),
      runPaymentTests: false
    })
    assert.strictEqual(statuses(report).webhook_secret_separate, "failed")
  }, 30_000)

  it("what was not given is not verified, with why; the test cases not asked for are not run", async () => {
    const report = await doctor({
      secretKey: fake.secretKey,
      publishableKey: "pk_test_doctor",
      webhookSecret,
      apiBase: fake.apiBase
    })
    const notVerified = report.checks.filter((c) => c.status === "not_verified")
    assert.deepStrictEqual(
      notVerified.map((c) => c.id),
      [
        "mode_agreement",
        "installation_values",
        "webhook_unsigned_rejected",
        "webhook_stale_rejected",
        "webhook_uncovered_acknowledged",
        "payment_test_success",
        "payment_test_decline",
        "payment_test_retries",
        "payment_test_account_isolation",
        "payment_test_refund"
      ]
    )
    assert.include(report.checks.find((c) => c.id === "webhook_stale_rejected")!.reason, "ACCORD_DOCTOR_WEBHOOK_URL")
    assert.include(formatReport(report), "? 3. Browser key")
    assert.isTrue(report.ok, "not verified is not failed")
  }, 30_000)

  it("Stripe unreachable: check 1 fails (payments degraded), with the fix", async () => {
    fake.outage = true
    try {
      const report = await doctor({ ...paymentOptionsFromEnv(appEnv())!, runPaymentTests: false })
      const check = report.checks.find((c) => c.id === "provider_account")!
      assert.strictEqual(check.status, "failed")
      assert.include(check.reason, "could not be read")
      assert.include(check.reason, "fix:")
      assert.isFalse(report.ok)
    } finally {
      fake.outage = false
    }
  }, 30_000)

  it("a secret key Stripe refuses: check 1 fails, naming the fix", async () => {
    const report = await doctor({
      ...paymentOptionsFromEnv(appEnv())!,
      secretKey: "sk_test_revoked_0123456789",
      runPaymentTests: false
    })
    const check = report.checks.find((c) => c.id === "provider_account")!
    assert.strictEqual(check.status, "failed")
    assert.include(check.reason, "STRIPE_SECRET_KEY was refused by Stripe (invalid_api_key); fix:")
    assert.notInclude(JSON.stringify(report), "sk_test_revoked_0123456789")
  }, 30_000)

  it("the app's webhook secret differs from the one given: the signed probe fails, naming the fix", async () => {
    const report = await doctor({
      ...paymentOptionsFromEnv(appEnv())!,
      webhookSecret: "whsec_another_endpoint_0123456789",
      runPaymentTests: false
    })
    const check = report.checks.find((c) => c.id === "webhook_uncovered_acknowledged")!
    assert.strictEqual(check.status, "failed")
    assert.include(check.reason, "the route verifies with another signing secret; fix: set STRIPE_WEBHOOK_SECRET")
    assert.notInclude(JSON.stringify(report), "whsec_another_endpoint_0123456789")
  }, 30_000)

  it("paymentOptionsFromEnv: nothing unless all three Stripe values are set", () => {
    assert.isUndefined(paymentOptionsFromEnv({ STRIPE_SECRET_KEY: "sk_test_x", STRIPE_PUBLISHABLE_KEY: "pk_test_x" }))
  })
})

describe("doctor: a connected account (Stripe Connect, a platform key acting with Stripe-Account)", () => {
  const connectedId = "acct_1Connected0003"
  let cfake: FakeStripe
  let ckit: CustomerKit
  let cserver: Server
  let cservice: Awaited<ReturnType<typeof startService>>
  let cbase: string

  beforeAll(async () => {
    cfake = await startFakeStripe({ webhookSecret, connectedAccounts: [connectedId, "acct_1Connected0004"] })
    cservice = await startService()
    ckit = await makeCustomerKit({
      workspaceId,
      secrets,
      serviceUrl: cservice.url,
      allowInsecureServiceUrl: true,
      storage: MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)),
      worker: { pollMillis: 20, backoff: { baseMillis: 50, capMillis: 200 } },
      // The proof names the connected account, not the platform's.
      payment: { modes: ["one_time_purchase"], providerAccountId: connectedId, livemode: false },
      executor: {
        execute: async () => {
          throw new Error("unused")
        },
        lookup: async () => undefined
      },
      payments: {
        stripe: {
          secretKey: Redacted.make(cfake.secretKey),
          publishableKey: "pk_test_doctor",
          webhookSecret: Redacted.make(webhookSecret),
          apiBase: cfake.apiBase,
          maxNetworkRetries: 0,
          connectedAccountId: connectedId
        },
        plan: async () => ({ mode: "one_time_purchase", amountMinor: 4900, currency: "usd" })
      }
    })
    cserver = createServer((req, res) =>
      req.url === "/stripe/webhook" ? ckit.webhook!.nodeHandler(req, res) : ckit.nodeHandler(req, res)
    )
    await new Promise<void>((resolve) => cserver.listen(0, "127.0.0.1", resolve))
    cbase = `http://127.0.0.1:${(cserver.address() as AddressInfo).port}`
    cfake.webhookTarget = `${cbase}/stripe/webhook`
  })
  afterAll(async () => {
    cserver.closeAllConnections()
    await new Promise<void>((resolve) => cserver.close(() => resolve()))
    await ckit.dispose()
    await cservice.down()
    await cfake.close()
  })

  const connectedEnv = () => ({
    STRIPE_SECRET_KEY: cfake.secretKey,
    STRIPE_PUBLISHABLE_KEY: "pk_test_doctor",
    STRIPE_WEBHOOK_SECRET: webhookSecret,
    STRIPE_API_BASE: cfake.apiBase,
    ACCORD_WORKSPACE_ID: workspaceId,
    ACCORD_CONNECTED_ACCOUNT_ID: connectedId,
    ACCORD_DOCTOR_PRICE_IDS: "price_test_addon",
    ACCORD_DOCTOR_WEBHOOK_URL: `${cbase}/stripe/webhook`,
    ACCORD_DOCTOR_PAYMENT_TESTS: "1"
  })
  const connectedDoctor = (payments: DoctorPaymentOptions) =>
    runDoctor({
      endpoint: `${cbase}/connector`,
      workspaceId,
      actionSigningSecret: Redacted.value(secrets.actionSigning),
      completionSecret: Redacted.value(secrets.completion),
      payments: { settleMillis: 5_000, ...payments }
    })

  it("check 1 passes for the connected account the proof names; the payment test cases run on it, every call with Stripe-Account", async () => {
    const report = await connectedDoctor(paymentOptionsFromEnv(connectedEnv())!)
    const check = report.checks.find((c) => c.id === "provider_account")!
    assert.deepStrictEqual(
      [check.status, check.reason],
      ["passed", "ok (a connected account; the platform's key acts for it)"]
    )
    assert.deepStrictEqual(
      statuses(report, "payment_tests"),
      {
        payment_test_retries: "passed",
        payment_test_success: "passed",
        payment_test_account_isolation: "passed",
        payment_test_refund: "passed",
        payment_test_decline: "passed"
      },
      JSON.stringify(report.checks.filter((c) => c.status !== "passed"))
    )
    assert.isTrue(report.ok, JSON.stringify(report.checks.filter((c) => c.status === "failed")))
    const providerCalls = cfake.requests.filter((r) => r.path !== "/v1/account" || r.stripeAccount !== undefined)
    assert.isTrue(providerCalls.some((r) => r.path.endsWith("/confirm")))
    assert.isTrue(
      providerCalls.every((r) => r.stripeAccount === connectedId),
      JSON.stringify(providerCalls.filter((r) => r.stripeAccount !== connectedId).map((r) => r.path))
    )
    const intents = [...cfake.objects.values()].filter((o) => o.object === "payment_intent")
    assert.isTrue(intents.length > 0 && intents.every((o) => o.account_for_fake === connectedId))
  }, 60_000)

  it("another connected account the key may act for, but not the one the proof names, fails check 1", async () => {
    const report = await connectedDoctor({
      ...paymentOptionsFromEnv(connectedEnv())!,
      connectedAccountId: "acct_1Connected0004",
      runPaymentTests: false
    })
    const check = report.checks.find((c) => c.id === "provider_account")!
    assert.deepStrictEqual(
      [check.status, check.reason],
      ["failed", "the handshake's capability proof names another account"]
    )
  }, 30_000)
})
