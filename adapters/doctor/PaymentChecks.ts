/**
 * The doctor's payment checks (spec "Installation checks before offering payment capabilities"
 * 1–6), run by `CustomerDoctor.ts` when it is given the Stripe installation values. Each check is
 * `passed`, `failed` or `not_verified` with why; the payment test cases (check 6) are a section of
 * their own, apart from the handshake results.
 *
 * - 1 `provider_account`: the account behind `STRIPE_SECRET_KEY` (`GET /v1/account`) is the one
 *   the handshake's capability proof names (its hash) and, when given, the workspace's connected
 *   account. With Stripe Connect (`ACCORD_CONNECTED_ACCOUNT_ID` names an account other than the
 *   key's own, a platform key acting for it), the account the credentials act for is asked with
 *   `Stripe-Account` (the `stripe` package's `stripeAccount` option): it must be that connected
 *   account (a key that may not act for it fails), and the proof must name it. Every later
 *   provider call of the checks (prices, confirm, refund, reads) carries the same header, as the
 *   kit's do (`StripeProvider` with `connectedAccountId`): the intents are the connected account's.
 *   An account that cannot be read (Stripe unreachable, the key refused) fails with the fix: the
 *   app's payments are degraded then (no proof, Payment executions answer 503).
 * - 2 `mode_agreement`: secret key, publishable key, the proof's `livemode` and the given prices
 *   are all test or all live.
 * - 3 `installation_values`: browser key, installation ID and server key present under the exact
 *   names the app reads (`STRIPE_PUBLISHABLE_KEY`, `ACCORD_WORKSPACE_ID`, `STRIPE_SECRET_KEY`) and
 *   distinct.
 * - 4 `webhook_secret_separate`: the webhook signing secret is a third secret (`whsec_…`), distinct
 *   from both connector secrets.
 * - 5 `webhook_*`: the deployed webhook route refuses an unsigned and a stale delivery and
 *   acknowledges a correctly signed event it does not cover (signed with `generateTestHeaderString`).
 *   A failure names the fix: a signed event refused 400 is a webhook secret other than the route's.
 * - 6 `payment_test_*`: success, decline, retries, account isolation and refund, against provider
 *   test data only: a live secret key stops them with one clear line. A case is driven through
 *   the endpoint (a signed Payment execution), the provider's test API (confirm with a test card,
 *   refund) and signed reconciliation reads of the endpoint; a case not run says why.
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type Stripe from "stripe"
import { PaymentObservation } from "../../core/protocol/messages/Reconciliation.ts"
import type { PaymentCapabilities } from "../../core/protocol/messages/Handshake.ts"
import { deriveProviderIdempotencyKey } from "../../core/protocol/Idempotency.ts"
import { Crypto } from "../../core/ports/Crypto.ts"
import { encodeBody, freshNonce, headerNames, sign, type SigningKeys } from "../../core/protocol/Signing.ts"
import type { Verifier } from "../../core/protocol/Verification.ts"
import * as StripeProvider from "../stripe/StripeProvider.ts"

/**
 * The Stripe installation values and what else the payment checks may use.
 */
export interface DoctorPaymentOptions {
  readonly secretKey: string
  readonly publishableKey: string
  readonly webhookSecret: string
  /** Another API base (a local fake in tests). */
  readonly apiBase?: string
  /** The provider account connected to the workspace (check 1). */
  readonly connectedAccountId?: string
  /** Prices the app sells (check 2). */
  readonly priceIds?: ReadonlyArray<string>
  /** The app's environment, to check the exact names it reads (check 3). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** The deployed webhook route (check 5). */
  readonly webhookUrl?: string
  /** Run the payment test cases (check 6): test keys only. */
  readonly runPaymentTests?: boolean
  /** The `priceKey` of the test purchase's operation (default `addon`). */
  readonly priceKey?: string
  /** How long a case waits for the provider's webhook to reach the endpoint (default 20 s). */
  readonly settleMillis?: number
}

export type CheckStatus = "passed" | "failed" | "not_verified"

export type CheckSection = "handshake" | "installation" | "payment_tests"

/**
 * What the payment checks need from the doctor run.
 */
export interface PaymentCheckContext {
  readonly endpoint: string
  readonly workspaceId: string
  readonly keys: SigningKeys
  readonly connectorSecrets: ReadonlyArray<string>
  /** The capability proof of the doctor's handshake, if the endpoint sent one. */
  readonly proof: PaymentCapabilities | undefined
  readonly revision: number
  readonly verifier: Verifier
  readonly post: (
    headers: Record<string, string>,
    body: Uint8Array
  ) => Effect.Effect<
    | {
        readonly _tag: "Some"
        readonly value: { readonly status: number; readonly headers: Record<string, string>; readonly body: Uint8Array }
      }
    | { readonly _tag: "None" }
  >
  readonly add: (id: string, title: string, status: CheckStatus, reason: string, section: CheckSection) => void
}

const isLive = (key: string) => /_live_/.test(key)
const sleep = (millis: number) => Effect.sleep(`${millis} millis`)

/**
 * Runs checks 1–6.
 */
export const runPaymentChecks = (
  options: DoctorPaymentOptions,
  context: PaymentCheckContext
): Effect.Effect<void, never, Crypto> =>
  Effect.gen(function* () {
    const { add } = context
    const crypto = yield* Crypto
    const config = {
      secretKey: Redacted.make(options.secretKey),
      maxNetworkRetries: 0,
      ...(options.apiBase !== undefined ? { apiBase: options.apiBase } : {})
    }
    const stripe = StripeProvider.client(config)
    const installation = (id: string, title: string, status: CheckStatus, reason: string) =>
      add(id, title, status, reason, "installation")

    // 1: the provider account behind the credentials (with Connect: the connected account they act for).
    const own = yield* Effect.either(StripeProvider.accountOf(config))
    const connected =
      own._tag === "Right" && options.connectedAccountId !== undefined && options.connectedAccountId !== own.right.id
        ? options.connectedAccountId
        : undefined
    /** Every provider call of the checks acts for the connected account, when there is one. */
    const on: Stripe.RequestOptions | undefined = connected === undefined ? undefined : { stripeAccount: connected }
    {
      const title = "1. The provider account behind STRIPE_SECRET_KEY is the account connected to the workspace"
      const account =
        connected === undefined
          ? own
          : yield* Effect.either(StripeProvider.accountOf({ ...config, connectedAccountId: connected }))
      if (own._tag === "Left") {
        // The provider degraded for the app too: no proof, Payment executions answer 503 until it answers.
        installation(
          "provider_account",
          title,
          "failed",
          own.left.reason === "unavailable"
            ? "the account behind STRIPE_SECRET_KEY could not be read (Stripe unreachable or failing): payments are degraded; fix: check Stripe's status and that the app reaches the Stripe API (STRIPE_API_BASE, proxy, firewall); the kit retries on its own"
            : `STRIPE_SECRET_KEY was refused by Stripe (${own.left.code ?? own.left.reason}); fix: set a current secret key of the workspace's Stripe account`
        )
      } else if (account._tag === "Left") {
        installation(
          "provider_account",
          title,
          account.left.reason === "unavailable" ? "not_verified" : "failed",
          account.left.reason === "unavailable"
            ? "the provider could not be asked for the connected account (unavailable)"
            : "ACCORD_CONNECTED_ACCOUNT_ID names another account, one STRIPE_SECRET_KEY may not act for"
        )
      } else {
        const hash = yield* crypto.sha256Hex(JSON.stringify(account.right.id))
        const problems: Array<string> = []
        if (context.proof !== undefined && context.proof.connectedAccountReferenceHash !== hash) {
          problems.push("the handshake's capability proof names another account")
        }
        if (options.connectedAccountId !== undefined && options.connectedAccountId !== account.right.id) {
          problems.push("ACCORD_CONNECTED_ACCOUNT_ID names another account")
        }
        if (problems.length > 0) installation("provider_account", title, "failed", problems.join("; "))
        else if (context.proof === undefined && options.connectedAccountId === undefined) {
          installation(
            "provider_account",
            title,
            "not_verified",
            "nothing to compare with: no capability proof in the handshake and no ACCORD_CONNECTED_ACCOUNT_ID"
          )
        } else
          installation(
            "provider_account",
            title,
            "passed",
            connected === undefined ? "ok" : "ok (a connected account; the platform's key acts for it)"
          )
      }
    }

    // 2: test or live, everywhere.
    {
      const title = "2. Keys, prices, webhook and the workspace connection use the same test or live environment"
      const modes: Array<[string, boolean]> = [
        ["STRIPE_SECRET_KEY", isLive(options.secretKey)],
        ["STRIPE_PUBLISHABLE_KEY", isLive(options.publishableKey)]
      ]
      if (context.proof !== undefined) modes.push(["the handshake's livemode", context.proof.livemode])
      const unread: Array<string> = []
      for (const id of options.priceIds ?? []) {
        const price = yield* Effect.either(Effect.tryPromise(() => stripe.prices.retrieve(id, {}, on)))
        if (price._tag === "Left") unread.push(id)
        else modes.push([`price ${id}`, (price.right as Stripe.Price).livemode])
      }
      const live = modes.filter(([, mode]) => mode).map(([name]) => name)
      const test = modes.filter(([, mode]) => !mode).map(([name]) => name)
      if (live.length > 0 && test.length > 0)
        installation("mode_agreement", title, "failed", `live: ${live.join(", ")}; test: ${test.join(", ")}`)
      else if (unread.length > 0)
        installation("mode_agreement", title, "not_verified", `prices not readable: ${unread.join(", ")}`)
      else if (context.proof === undefined || (options.priceIds ?? []).length === 0) {
        installation(
          "mode_agreement",
          title,
          "not_verified",
          `keys agree (${live.length > 0 ? "live" : "test"}); not compared: ${[context.proof === undefined ? "the handshake's livemode" : "", (options.priceIds ?? []).length === 0 ? "prices (none given)" : ""].filter((x) => x !== "").join(", ")}`
        )
      } else installation("mode_agreement", title, "passed", `all ${live.length > 0 ? "live" : "test"}`)
    }

    // 3: the three installation values under the exact names.
    {
      const title =
        "3. Browser key, installation ID and server key are set under STRIPE_PUBLISHABLE_KEY, ACCORD_WORKSPACE_ID, STRIPE_SECRET_KEY and distinct"
      const env = options.env
      if (env === undefined)
        installation("installation_values", title, "not_verified", "the app's environment was not given")
      else {
        const names = ["STRIPE_PUBLISHABLE_KEY", "ACCORD_WORKSPACE_ID", "STRIPE_SECRET_KEY"] as const
        const missing = names.filter((name) => (env[name] ?? "").trim() === "")
        const values = names.map((name) => env[name] ?? "")
        if (missing.length > 0) installation("installation_values", title, "failed", `not set: ${missing.join(", ")}`)
        else if (new Set(values).size !== values.length)
          installation("installation_values", title, "failed", "two of the values are equal")
        else if (!env.STRIPE_PUBLISHABLE_KEY!.startsWith("pk_"))
          installation("installation_values", title, "failed", "STRIPE_PUBLISHABLE_KEY is not a publishable key")
        else installation("installation_values", title, "passed", "ok")
      }
    }

    // 4: the webhook secret is a third secret, kept apart.
    {
      const title = "4. The webhook signing secret is a third secret, distinct from the dispatch and completion secrets"
      const reused = context.connectorSecrets.includes(options.webhookSecret)
      if (reused)
        installation("webhook_secret_separate", title, "failed", "the webhook secret equals a connector secret")
      else if (!options.webhookSecret.startsWith("whsec_"))
        installation(
          "webhook_secret_separate",
          title,
          "failed",
          "the webhook secret is not a webhook signing secret (whsec_…)"
        )
      else installation("webhook_secret_separate", title, "passed", "ok")
    }

    // 5: the deployed webhook route.
    const webhookProbes: ReadonlyArray<
      [string, string, (payload: string) => string | undefined, (status: number) => boolean]
    > = [
      [
        "webhook_unsigned_rejected",
        "5. The webhook route refuses an unsigned delivery",
        () => undefined,
        (s) => s >= 400 && s < 500
      ],
      [
        "webhook_stale_rejected",
        "5. The webhook route refuses a stale signed delivery",
        (payload) =>
          stripe.webhooks.generateTestHeaderString({
            payload,
            secret: options.webhookSecret,
            timestamp: Math.floor(Date.now() / 1000) - 3600
          }),
        (s) => s >= 400 && s < 500
      ],
      [
        "webhook_uncovered_acknowledged",
        "5. The webhook route acknowledges a signed event of a type it does not cover",
        (payload) => stripe.webhooks.generateTestHeaderString({ payload, secret: options.webhookSecret }),
        (s) => s >= 200 && s < 300
      ]
    ]
    for (const [id, title, signature, expected] of webhookProbes) {
      if (options.webhookUrl === undefined) {
        installation(id, title, "not_verified", "no webhook URL given (ACCORD_DOCTOR_WEBHOOK_URL)")
        continue
      }
      const payload = JSON.stringify({
        id: `evt_accord_doctor_${globalThis.crypto.randomUUID().replaceAll("-", "")}`,
        object: "event",
        type: "accord_doctor.probe",
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        data: { object: { id: "accord_doctor_probe", object: "accord_doctor" } }
      })
      const header = signature(payload)
      const answer = yield* Effect.option(
        Effect.tryPromise(() =>
          fetch(options.webhookUrl!, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              ...(header !== undefined ? { "stripe-signature": header } : {})
            },
            body: payload,
            redirect: "manual",
            signal: AbortSignal.timeout(10_000)
          })
        )
      )
      if (answer._tag === "None") installation(id, title, "failed", "the webhook route could not be reached")
      else {
        yield* Effect.promise(() => answer.value.arrayBuffer().catch(() => undefined))
        const status = answer.value.status
        installation(
          id,
          title,
          expected(status) ? "passed" : "failed",
          expected(status) ? "ok" : webhookFailure(id, status)
        )
      }
    }
    installation(
      "revision_zero",
      "5. The handler supports the initial connection revision zero",
      context.revision === 0 ? "passed" : "not_verified",
      context.revision === 0
        ? "ok (the handshake for revision 0 was checked)"
        : `the configured revision is ${context.revision}`
    )

    yield* paymentTests(options, context, stripe, on)
  })

/**
 * Why a webhook probe failed, with the fix. A correctly signed event refused with 400 means the
 * route verifies with another secret than `STRIPE_WEBHOOK_SECRET` (the signature did not match).
 */
const webhookFailure = (id: string, status: number): string =>
  status === 404 || status === 405
    ? `answered HTTP ${status}: no webhook route at this URL; fix: mount the kit's webhook handler (kit.webhook) at ACCORD_DOCTOR_WEBHOOK_URL`
    : id === "webhook_uncovered_acknowledged" && status === 400
      ? "answered HTTP 400 to an event signed with STRIPE_WEBHOOK_SECRET: the route verifies with another signing secret; fix: set STRIPE_WEBHOOK_SECRET to this endpoint's signing secret (Stripe dashboard, Developers > Webhooks) in the app"
      : status >= 500
        ? `answered HTTP ${status}: the route cannot take events now (its storage or the app is failing); fix: check the app's log and storage`
        : `answered HTTP ${status}`

const cases = [
  [
    "payment_test_success",
    "6. Success: a test payment is confirmed and the endpoint reports it succeeded, from a verified webhook"
  ],
  ["payment_test_decline", "6. Decline: a declined test card never reads as succeeded"],
  ["payment_test_retries", "6. Retries: a redelivered Payment execution returns the same continuation"],
  ["payment_test_account_isolation", "6. Account isolation: a read for another account is refused"],
  ["payment_test_refund", "6. Refund: a full refund reads as reversed"]
] as const

const paymentTests = (
  options: DoctorPaymentOptions,
  context: PaymentCheckContext,
  stripe: Stripe,
  on: Stripe.RequestOptions | undefined
): Effect.Effect<void, never, Crypto> =>
  Effect.gen(function* () {
    const test = (id: string, status: CheckStatus, reason: string) =>
      context.add(id, cases.find(([name]) => name === id)![1], status, reason, "payment_tests")
    if (options.runPaymentTests !== true) {
      for (const [id] of cases) test(id, "not_verified", "not run (ask for the payment test cases to run them)")
      return
    }
    if (/^(sk|rk)_live_/.test(options.secretKey)) {
      context.add(
        "payment_tests_test_keys",
        "6. Payment test cases run on provider test data only",
        "failed",
        "refused: STRIPE_SECRET_KEY is a live key (sk_live_); the payment test cases need a test key and never charge live",
        "payment_tests"
      )
      for (const [id] of cases) test(id, "not_verified", "not run: live key refused")
      return
    }
    const settle = options.settleMillis ?? 20_000
    const crypto = yield* Crypto

    /** One signed Payment execution for `accountId`; the continuation's intent id, or why not. */
    const execution = (actionRequestId: string, accountId: string) =>
      Effect.gen(function* () {
        const key = yield* deriveProviderIdempotencyKey(context.workspaceId, actionRequestId)
        const nonce = yield* freshNonce
        const body = {
          type: "service.customer_action.execute",
          protocolVersion: 1,
          workspaceId: context.workspaceId,
          accountId,
          actionRequestId,
          action: {
            id: "00000000-0000-4000-8000-00000000d0d1",
            key: "accord_doctor_payment",
            operation: { family: "payment.one_time_purchase", priceKey: options.priceKey ?? "addon" },
            safeTerms: { confirmation: "Payment test by accord customer doctor", label: "Doctor payment test" }
          },
          actor: { authority: "installation_check", roleKey: "doctor", subjectId: "accord_doctor" },
          binding: {
            decisionId: "00000000-0000-4000-8000-00000000d0d2",
            journeyId: "00000000-0000-4000-8000-00000000d0d3",
            offerId: "00000000-0000-4000-8000-00000000d0d4",
            publishedVersionId: "00000000-0000-4000-8000-00000000d0d5"
          },
          providerIdempotencyKey: key,
          requestedAt: new Date().toISOString(),
          requestNonce: nonce
        }
        const bytes = encodeBody(body)
        const headers = yield* sign({ purpose: "dispatch_request", keys: context.keys, body: bytes, nonce })
        const answer = yield* context.post({ ...headers, [headerNames.idempotencyKey]: key }, bytes)
        if (answer._tag === "None") return { error: "the endpoint could not be reached" } as const
        if (answer.value.status !== 202) return { error: `answered HTTP ${answer.value.status}` } as const
        const json = JSON.parse(new TextDecoder().decode(answer.value.body)) as {
          state?: string
          continuation?: { clientSecret?: string }
        }
        const secret = json.continuation?.clientSecret
        if (json.state !== "accepted" || typeof secret !== "string")
          return { error: "accepted with no payment continuation" } as const
        return { key, clientSecret: secret, intentId: secret.split("_secret_")[0]! } as const
      })

    /** One signed reconciliation read; the observation, or the HTTP status it was refused with. */
    const read = (actionRequestId: string, key: string, intentId: string, accountId: string) =>
      Effect.gen(function* () {
        const intent = yield* Effect.either(Effect.tryPromise(() => stripe.paymentIntents.retrieve(intentId, {}, on)))
        const amount = intent._tag === "Right" ? intent.right.amount : 0
        const currency = intent._tag === "Right" ? intent.right.currency : "usd"
        const nonce = yield* freshNonce
        const body = {
          type: "service.customer_action.payment_reconciliation",
          protocolVersion: 1,
          workspaceId: context.workspaceId,
          accountId,
          actionRequestId,
          actionVersionId: "00000000-0000-4000-8000-00000000d0d6",
          offerVersionId: "00000000-0000-4000-8000-00000000d0d7",
          mode: "one_time_purchase",
          providerIdempotencyKey: key,
          providerReferenceHash: yield* crypto.sha256Hex(intentId),
          requestNonce: nonce,
          expected: { amountMinor: amount, currency, priceReferenceHash: "0".repeat(64) },
          requestedAt: new Date().toISOString()
        }
        const bytes = encodeBody(body)
        const headers = yield* sign({
          purpose: "payment_reconciliation_request",
          keys: context.keys,
          body: bytes,
          nonce
        })
        const answer = yield* context.post(headers, bytes)
        if (answer._tag === "None") return { status: 0 } as const
        if (answer.value.status !== 200) return { status: answer.value.status } as const
        const verified = yield* Effect.either(
          context.verifier.verifyAndDecode(PaymentObservation, {
            purpose: "payment_reconciliation_response",
            keys: context.keys,
            headers: answer.value.headers,
            body: answer.value.body,
            nonceScope: "doctor:payment_reconciliation_response"
          })
        )
        return verified._tag === "Left"
          ? ({ status: -1 } as const)
          : ({ status: 200, observation: verified.right.body } as const)
      })

    /** Reads until `done` or the settle time is over; the last observation. */
    const readUntil = (
      actionRequestId: string,
      key: string,
      intentId: string,
      done: (o: PaymentObservation) => boolean
    ) =>
      Effect.gen(function* () {
        const deadline = Date.now() + settle
        let last: PaymentObservation | undefined
        while (Date.now() < deadline) {
          const answer = yield* read(actionRequestId, key, intentId, "accord_doctor_a")
          if ("observation" in answer) {
            last = answer.observation
            if (done(answer.observation)) return last
          }
          yield* sleep(250)
        }
        return last
      })

    // Success, retries, isolation and refund on one purchase; decline on another.
    const paidId = globalThis.crypto.randomUUID()
    const paid = yield* execution(paidId, "accord_doctor_a")
    if ("error" in paid) {
      for (const [id] of cases) test(id, "failed", `the test purchase was not accepted: ${paid.error}`)
      return
    }
    const again = yield* execution(paidId, "accord_doctor_a")
    test(
      "payment_test_retries",
      !("error" in again) && again.clientSecret === paid.clientSecret ? "passed" : "failed",
      "error" in again
        ? again.error
        : again.clientSecret === paid.clientSecret
          ? "ok (same intent)"
          : "another intent was returned"
    )
    const confirmed = yield* Effect.either(
      Effect.tryPromise(() => stripe.paymentIntents.confirm(paid.intentId, { payment_method: "pm_card_visa" }, on))
    )
    if (confirmed._tag === "Left") {
      test("payment_test_success", "failed", "the provider refused to confirm the test payment")
    } else {
      const observed = yield* readUntil(
        paidId,
        paid.key,
        paid.intentId,
        (o) => o.outcome === "succeeded" && o.eventSignatureVerified
      )
      test(
        "payment_test_success",
        observed?.outcome === "succeeded" && observed.eventSignatureVerified ? "passed" : "failed",
        observed === undefined
          ? "no observation was read"
          : observed.outcome !== "succeeded"
            ? `read as ${observed.outcome}`
            : observed.eventSignatureVerified
              ? "ok"
              : "no verified webhook event reached the endpoint"
      )
    }
    const isolated = yield* read(paidId, paid.key, paid.intentId, "accord_doctor_b")
    test(
      "payment_test_account_isolation",
      isolated.status >= 400 && isolated.status < 500 ? "passed" : "failed",
      isolated.status >= 400 && isolated.status < 500 ? "ok" : `answered HTTP ${isolated.status}`
    )
    if (confirmed._tag === "Left")
      test("payment_test_refund", "not_verified", "not run: the test payment was not confirmed")
    else {
      const refunded = yield* Effect.either(
        Effect.tryPromise(() => stripe.refunds.create({ payment_intent: paid.intentId }, on))
      )
      if (refunded._tag === "Left") test("payment_test_refund", "failed", "the provider refused the refund")
      else {
        const observed = yield* readUntil(paidId, paid.key, paid.intentId, (o) => o.outcome === "reversed")
        test(
          "payment_test_refund",
          observed?.outcome === "reversed" ? "passed" : "failed",
          observed?.outcome === "reversed" ? "ok" : `read as ${observed?.outcome ?? "nothing"}`
        )
      }
    }
    const declinedId = globalThis.crypto.randomUUID()
    const declined = yield* execution(declinedId, "accord_doctor_a")
    if ("error" in declined) test("payment_test_decline", "failed", declined.error)
    else {
      yield* Effect.either(
        Effect.tryPromise(() =>
          stripe.paymentIntents.confirm(declined.intentId, { payment_method: "pm_card_chargeDeclined" }, on)
        )
      )
      yield* sleep(Math.min(settle, 1_000))
      const answer = yield* read(declinedId, declined.key, declined.intentId, "accord_doctor_a")
      const observed = "observation" in answer ? answer.observation : undefined
      const ok = observed !== undefined && observed.outcome !== "succeeded"
      test(
        "payment_test_decline",
        ok ? "passed" : "failed",
        ok
          ? `ok (read as ${observed.outcome})`
          : observed !== undefined
            ? "read as succeeded"
            : `answered HTTP ${answer.status}`
      )
    }
  })
