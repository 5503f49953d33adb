/**
 * A reference customer backend, the one a customer would copy: it serves the Accord customer kit at
 * `POST /connector`, performs the extend-trial operation on its own table, answers an entitlement
 * check, and after an extension sends `entitlement_active` to the service's ingest endpoint with the
 * server SDK.
 *
 * Everything durable lives in one database (PGlite in `ACCORD_DATA_DIR`, or PostgreSQL with
 * `DATABASE_URL`): the kit's claims and outbox, and this backend's trials. The extension is written
 * under the action's `providerIdempotencyKey` in the same transaction as the trial change and the
 * pending `entitlement_active` event, so the kit's `lookup` finds a run that happened even if the
 * process died right after it, and the event is sent even then: a small delivery loop sends every
 * pending event (the same `event_id` on every attempt, backoff between attempts) until the service
 * accepts it or refuses it for good, and picks up whatever an earlier process left pending.
 *
 * With `STRIPE_SECRET_KEY`, `STRIPE_PUBLISHABLE_KEY` and `STRIPE_WEBHOOK_SECRET` set it also sells
 * one-time purchases (priced by its own `EXAMPLE_PRICES`), saves payment methods (setup-only) and
 * recovers an account's open invoice (`recover_payment`: what the invoice asks, or with a price key
 * only exactly that `EXAMPLE_PRICES` price); with `EXAMPLE_SUBSCRIPTION_PRICES` it also sells
 * subscriptions (`new_subscription`) and moves an account's live subscription to another of those
 * prices (`existing_subscription_change`, prorated as the catalog operation's `proration` says,
 * `always_invoice` by default, the change applied only once its proration invoice is paid):
 * the kit answers such actions with a Stripe payment continuation, verifies Stripe's webhooks at
 * `POST /stripe/webhook`, completes the action once Stripe itself reports the outcome, and answers
 * the service's reconciliation reads from Stripe. `STRIPE_API_BASE` points the Stripe client at
 * another API base (a local fake, in tests).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { InvalidConfig, parseBoolean, parseInteger } from "accord/config"
import { Connection } from "accord/engine"
import {
  type Backoff,
  type ClaimedExecution,
  defaultBackoff,
  type ExecutionResult,
  makeCustomerKit,
  retryDelay
} from "accord/kit"
import { Cipher, Execution, OperationFamily, Uuid } from "accord/protocol"
import * as Sdk from "accord/sdk"
import type { ProviderAccount } from "accord/kit"
import { StripeProvider } from "accord/kit/stripe"
import { Database, SqlStorage } from "accord/sql"

export interface BackendConfig {
  readonly port: number
  readonly host: string
  readonly workspaceId: string
  readonly actionSigningSecret: string
  readonly completionSecret: string
  /** The connection revision the two secrets belong to: the `revision` `PUT /connector` answered. */
  readonly connectionRevision: number
  /** The service's base URL: completions and events go there. */
  readonly serviceUrl: string
  /** A key of scope `ingest`; without it `entitlement_active` events are recorded but not sent. */
  readonly ingestApiKey: string | undefined
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  /** The feature an extended trial unlocks (reported in `entitlement_active`). */
  readonly featureKey: string
  /** Allow an `http://` or loopback service URL (development only). */
  readonly allowInsecureServiceUrl: boolean
  /** Delays between attempts to send one `entitlement_active` (default 1 s doubling to 5 minutes). */
  readonly eventRetry?: Backoff
  /** Stripe payments (all of `STRIPE_SECRET_KEY`, `STRIPE_PUBLISHABLE_KEY`, `STRIPE_WEBHOOK_SECRET` set). */
  readonly stripe?: StripeConfig
  /** Delays between reads of an unreadable Stripe account (default 1 s doubling to 60 s). */
  readonly stripeAccountRetry?: Backoff
}

export interface StripeConfig {
  readonly secretKey: string
  readonly publishableKey: string
  /** The webhook endpoint's signing secret: a third secret, apart from both connector secrets. */
  readonly webhookSecret: string
  /** `STRIPE_API_BASE`: another API base URL (a local fake in tests). */
  readonly apiBase: string | undefined
  /**
   * `STRIPE_CONNECTED_ACCOUNT_ID`: the connected account (`acct_…`) the platform key acts for
   * (Stripe Connect); unset for platform-owned intents.
   */
  readonly connectedAccountId?: string
  /** What each `priceKey` of a one-time purchase charges (`EXAMPLE_PRICES`). */
  readonly prices: Readonly<Record<string, { readonly amountMinor: number; readonly currency: string }>>
  /**
   * The Stripe price each `priceKey` of a new subscription subscribes to, with an optional trial
   * (`EXAMPLE_SUBSCRIPTION_PRICES`); without it no subscriptions are sold.
   */
  readonly subscriptionPrices?: Readonly<Record<string, { readonly priceId: string; readonly trialDays?: number }>>
}

/** The default price list: one add-on at 49.00 USD. */
const defaultPrices = { addon: { amountMinor: 4900, currency: "usd" } } as const

const parsePrices = (value: string): StripeConfig["prices"] | undefined => {
  try {
    const parsed: unknown = JSON.parse(value)
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined
    const prices: Record<string, { amountMinor: number; currency: string }> = {}
    for (const [key, price] of Object.entries(parsed)) {
      const { amountMinor, currency } = (price ?? {}) as { amountMinor?: unknown; currency?: unknown }
      if (typeof amountMinor !== "number" || !Number.isSafeInteger(amountMinor) || amountMinor <= 0) return undefined
      if (typeof currency !== "string" || !/^[a-z]{3}$/.test(currency)) return undefined
      prices[key] = { amountMinor, currency }
    }
    return prices
  } catch {
    return undefined
  }
}

const parseSubscriptionPrices = (value: string): StripeConfig["subscriptionPrices"] | undefined => {
  try {
    const parsed: unknown = JSON.parse(value)
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined
    const prices: Record<string, { priceId: string; trialDays?: number }> = {}
    for (const [key, price] of Object.entries(parsed)) {
      const { priceId, trialDays } = (price ?? {}) as { priceId?: unknown; trialDays?: unknown }
      if (typeof priceId !== "string" || !/^price_[A-Za-z0-9_]{1,200}$/.test(priceId)) return undefined
      if (trialDays !== undefined && !(Number.isSafeInteger(trialDays) && (trialDays as number) > 0)) return undefined
      prices[key] = trialDays === undefined ? { priceId } : { priceId, trialDays: trialDays as number }
    }
    return prices
  } catch {
    return undefined
  }
}

const isFeatureKey = Schema.is(Sdk.FeatureAccess.FeatureKey)
const secretVariables = {
  actionSigningSecret: "ACCORD_ACTION_SIGNING_SECRET",
  completionSecret: "ACCORD_COMPLETION_SECRET"
} as const
const parseUrl = (value: string): URL | null => {
  try {
    return new URL(value)
  } catch {
    return null
  }
}
const loopbackHost = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i

/**
 * Reads the configuration docs/guide-customer-backends.md documents. Refuses to start with every problem at once, one
 * line each, naming the variable and never repeating its value.
 */
export const configFromEnv = (env: Record<string, string | undefined>): BackendConfig => {
  const problems: Array<string> = []
  const text = (name: string) => {
    const value = env[name]
    return value === undefined || value.trim() === "" ? undefined : value
  }
  const required = (name: string) => {
    const value = text(name)
    if (value === undefined) problems.push(`${name} is required`)
    return value
  }
  const parsed = <A>(name: string, parse: (value: string) => A | undefined, fallback: A, expected: string): A => {
    const value = text(name)
    if (value === undefined) return fallback
    const result = parse(value)
    if (result === undefined) problems.push(`${name} must be ${expected}`)
    return result ?? fallback
  }

  const port = parsed(
    "PORT",
    (v) => {
      const n = parseInteger(v)
      return n !== undefined && n <= 65535 ? n : undefined
    },
    8788,
    "an integer from 0 to 65535"
  )
  const workspaceId = required("ACCORD_WORKSPACE_ID")
  if (workspaceId !== undefined && !Uuid.isUuid(workspaceId))
    problems.push("ACCORD_WORKSPACE_ID must be the workspace's UUID")
  // Secrets are taken exactly as given (no trimming): the service checks the same rules at `PUT /connector`.
  const actionSigningSecret = required("ACCORD_ACTION_SIGNING_SECRET")
  const completionSecret = required("ACCORD_COMPLETION_SECRET")
  if (actionSigningSecret !== undefined && completionSecret !== undefined) {
    for (const { issue } of Connection.secretIssues({
      actionSigning: Redacted.make(actionSigningSecret),
      completion: Redacted.make(completionSecret)
    })) {
      problems.push(
        `${secretVariables[issue.path as keyof typeof secretVariables]} ${issue.message.replace("actionSigningSecret", secretVariables.actionSigningSecret)}`
      )
    }
  }
  const allowInsecureServiceUrl = parsed("ACCORD_ALLOW_INSECURE_ENDPOINTS", parseBoolean, false, "true or false")
  const serviceUrl = required("ACCORD_SERVICE_URL")
  if (serviceUrl !== undefined) {
    const url = parseUrl(serviceUrl)
    if (
      url === null ||
      (url.protocol !== "https:" && url.protocol !== "http:") ||
      url.username !== "" ||
      url.password !== ""
    ) {
      problems.push("ACCORD_SERVICE_URL must be the service's http(s) base URL, without credentials")
    } else if (!allowInsecureServiceUrl && (url.protocol === "http:" || loopbackHost.test(url.hostname))) {
      problems.push(
        "ACCORD_SERVICE_URL must be https on a public host (ACCORD_ALLOW_INSECURE_ENDPOINTS=true allows http and loopback in development)"
      )
    }
  }
  const featureKey = text("EXAMPLE_FEATURE_KEY") ?? "extended_trial"
  if (!isFeatureKey(featureKey)) problems.push("EXAMPLE_FEATURE_KEY must be a lower-case code of 1 to 64 characters")
  const connectionRevision = parsed(
    "ACCORD_CONNECTION_REVISION",
    parseInteger,
    0,
    "a non-negative integer (the revision PUT /connector answered)"
  )

  // Stripe: the three installation values under the exact names read here, all or none.
  const stripeNames = ["STRIPE_SECRET_KEY", "STRIPE_PUBLISHABLE_KEY", "STRIPE_WEBHOOK_SECRET"] as const
  const stripeSet = stripeNames.filter((name) => text(name) !== undefined)
  let stripe: StripeConfig | undefined
  if (stripeSet.length > 0 && stripeSet.length < stripeNames.length) {
    for (const name of stripeNames)
      if (text(name) === undefined) problems.push(`${name} is required when ${stripeSet.join(", ")} is set`)
  } else if (stripeSet.length === stripeNames.length) {
    const secretKey = text("STRIPE_SECRET_KEY")!
    const publishableKey = text("STRIPE_PUBLISHABLE_KEY")!
    const webhookSecret = text("STRIPE_WEBHOOK_SECRET")!
    if (!/^(sk|rk)_(test|live)_/.test(secretKey))
      problems.push("STRIPE_SECRET_KEY must be a secret key (sk_test_…, sk_live_… or a restricted rk_…)")
    if (!/^pk_(test|live)_/.test(publishableKey))
      problems.push("STRIPE_PUBLISHABLE_KEY must be a publishable key (pk_test_… or pk_live_…)")
    if (!webhookSecret.startsWith("whsec_"))
      problems.push("STRIPE_WEBHOOK_SECRET must be the webhook endpoint's signing secret (whsec_…)")
    if (/_live_/.test(secretKey) !== /_live_/.test(publishableKey)) {
      problems.push("STRIPE_SECRET_KEY and STRIPE_PUBLISHABLE_KEY must both be test keys or both live keys")
    }
    if (webhookSecret === actionSigningSecret || webhookSecret === completionSecret) {
      problems.push(
        "STRIPE_WEBHOOK_SECRET must differ from ACCORD_ACTION_SIGNING_SECRET and ACCORD_COMPLETION_SECRET (a third secret)"
      )
    }
    const apiBase = text("STRIPE_API_BASE")
    if (apiBase !== undefined) {
      const url = parseUrl(apiBase)
      if (
        url === null ||
        (url.protocol !== "https:" && url.protocol !== "http:") ||
        url.username !== "" ||
        url.password !== ""
      ) {
        problems.push("STRIPE_API_BASE must be an http(s) base URL, without credentials")
      } else if (!allowInsecureServiceUrl && url.protocol === "http:") {
        problems.push(
          "STRIPE_API_BASE must be https (ACCORD_ALLOW_INSECURE_ENDPOINTS=true allows http for a local fake)"
        )
      }
    }
    const prices = parsed(
      "EXAMPLE_PRICES",
      parsePrices,
      defaultPrices,
      'a JSON object of price keys, e.g. {"addon":{"amountMinor":4900,"currency":"usd"}}'
    )
    const subscriptionPrices = parsed(
      "EXAMPLE_SUBSCRIPTION_PRICES",
      parseSubscriptionPrices,
      undefined,
      'a JSON object of price keys, e.g. {"pro":{"priceId":"price_123","trialDays":14}}'
    )
    const connectedAccountId = text("STRIPE_CONNECTED_ACCOUNT_ID")
    if (connectedAccountId !== undefined && !/^acct_[A-Za-z0-9]{1,64}$/.test(connectedAccountId)) {
      problems.push("STRIPE_CONNECTED_ACCOUNT_ID must be a Stripe account id (acct_…)")
    }
    stripe = {
      secretKey,
      publishableKey,
      webhookSecret,
      apiBase,
      prices,
      ...(subscriptionPrices !== undefined ? { subscriptionPrices } : {}),
      ...(connectedAccountId !== undefined ? { connectedAccountId } : {})
    }
  }

  if (problems.length > 0) throw new InvalidConfig({ problems })
  return {
    port,
    host: text("HOST") ?? "127.0.0.1",
    workspaceId: workspaceId!,
    actionSigningSecret: actionSigningSecret!,
    completionSecret: completionSecret!,
    connectionRevision,
    serviceUrl: serviceUrl!,
    ingestApiKey: text("SERVICE_INGEST_API_KEY"),
    dataDir: text("ACCORD_DATA_DIR") ?? "./.customer-data",
    databaseUrl: text("DATABASE_URL"),
    featureKey,
    allowInsecureServiceUrl,
    ...(stripe !== undefined ? { stripe } : {})
  }
}

export interface AccessEventStatus {
  readonly eventId: string
  readonly state: "pending" | "delivered" | "refused"
  readonly attempts: number
  /** The last failure: `http_503`, `network_error`, the service's refusal code, … */
  readonly lastError: string | null
}

export interface RunningBackend {
  readonly url: string
  /** The trial of an account, as the entitlement check sees it. */
  readonly trialOf: (
    accountId: string
  ) => Promise<{ readonly trialEndsAt: number; readonly extensions: number } | undefined>
  /** Where each `entitlement_active` stands (for operators: a `refused` or long-`pending` one needs a look). */
  readonly accessEvents: () => Promise<ReadonlyArray<AccessEventStatus>>
  readonly close: () => Promise<void>
}

const schema = [
  `CREATE TABLE IF NOT EXISTS example_trials (
     account_id text PRIMARY KEY,
     trial_ends_at bigint NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS example_trial_extensions (
     provider_idempotency_key text PRIMARY KEY,
     account_id text NOT NULL,
     extension_days integer NOT NULL,
     trial_ends_at bigint NOT NULL,
     extended_at bigint NOT NULL,
     journey_id text NOT NULL,
     version_id text NOT NULL,
     action_request_id text NOT NULL
   )`,
  // One row per entitlement_active event: the exact event, and where its delivery stands
  // (`pending` until the service accepts it, `delivered`, or `refused` for good).
  `CREATE TABLE IF NOT EXISTS example_access_events (
     event_id text PRIMARY KEY,
     event text NOT NULL,
     state text NOT NULL DEFAULT 'pending',
     attempts integer NOT NULL DEFAULT 0,
     next_attempt_at bigint NOT NULL,
     last_error text,
     created_at bigint NOT NULL
   )`,
  `CREATE INDEX IF NOT EXISTS example_access_events_due ON example_access_events (next_attempt_at) WHERE state = 'pending'`,
  // The Stripe customer of each account (created on its first subscription).
  `CREATE TABLE IF NOT EXISTS example_stripe_customers (
     account_id text PRIMARY KEY,
     customer_id text NOT NULL
   )`
]

const dayMillis = 24 * 60 * 60_000
/** How long one delivery attempt holds its event (longer than the SDK's 10 s time-out). */
const eventLeaseMillis = 30_000
const eventPollMillis = 1_000

interface ExtensionRow {
  readonly account_id: string
  readonly extension_days: number
  readonly trial_ends_at: string
  readonly extended_at: string
  readonly journey_id: string
  readonly version_id: string
  readonly action_request_id: string
}

const resultOf = (key: string, row: ExtensionRow): ExecutionResult => ({
  outcome: "succeeded",
  providerReference: `trial_ext_${key.slice(4, 20)}`,
  evidence: {
    entitlement: "trial_extended",
    reasonCode: "trial_extended",
    source: "entitlement_state",
    trialEndsAt: new Date(Number(row.trial_ends_at)).toISOString(),
    extensionDays: row.extension_days
  }
})

/** A family of the protocol's operation table that is a Payment action. */
const isPaymentFamily = (family: string): boolean => {
  const rule = OperationFamily.familyRule(family)
  return rule._tag === "Right" && rule.right.payment !== undefined
}
const isProration = (value: unknown): value is "always_invoice" | "create_prorations" | "none" =>
  value === "always_invoice" || value === "create_prorations" || value === "none"

const json = (res: ServerResponse, status: number, body: unknown) =>
  void res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))

export const start = async (config: BackendConfig): Promise<RunningBackend> => {
  const storage: Database.Storage =
    config.databaseUrl !== undefined
      ? { _tag: "Postgres", url: Redacted.make(config.databaseUrl) }
      : Database.storageFrom({ databaseUrl: Option.none(), dataDir: config.dataDir })
  // The kit stores no connector secrets, so its storage needs no master key of its own.
  const cipher = Cipher.layerAesGcm(Redacted.make(new Uint8Array(32)))
  const runtime = ManagedRuntime.make(
    SqlStorage.layer.pipe(Layer.provideMerge(Layer.merge(Database.layer(storage), cipher)))
  )
  const sql = await runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.as(
        Effect.forEach(schema, (statement) => sql.unsafe(statement), { discard: true }),
        sql
      )
    )
  )
  const run = <A>(effect: Effect.Effect<A, unknown>) => runtime.runPromise(effect)
  const eventsDue = Effect.runSync(Queue.sliding<void>(1))
  const wakeEvents = () => void Effect.runSync(Queue.offer(eventsDue, undefined))

  /**
   * The extension made under `key`, if any, with its `entitlement_active` event recorded as pending
   * unless it already is. Inside the extension's transaction on the execute path; on the lookup
   * path it makes sure an extension found after a crash has its event.
   */
  const settledExtension = (key: string) =>
    Effect.gen(function* () {
      const [row] = yield* sql<ExtensionRow>`
        SELECT account_id, extension_days, trial_ends_at, extended_at, journey_id, version_id, action_request_id
        FROM example_trial_extensions WHERE provider_idempotency_key = ${key}`
      if (row === undefined) return undefined
      const event = Sdk.FeatureAccess.buildFeatureAccessEvent({
        accountId: row.account_id,
        featureKey: config.featureKey,
        journeyId: row.journey_id,
        versionId: row.version_id,
        // The stored time of the extension: every attempt sends the same event.
        occurredAt: new Date(Number(row.extended_at)).toISOString(),
        actionRequestId: row.action_request_id
      })
      yield* sql`INSERT INTO example_access_events (event_id, event, next_attempt_at, created_at)
                 VALUES (${event.event_id}, ${JSON.stringify(event)}, ${Date.now()}, ${Date.now()})
                 ON CONFLICT (event_id) DO NOTHING`
      return row
    })

  /** The entitlement check: is the account's trial active now? */
  const trialOf = (accountId: string) =>
    run(sql<{ trial_ends_at: string; extensions: string }>`
      SELECT t.trial_ends_at, (SELECT count(*) FROM example_trial_extensions e WHERE e.account_id = t.account_id) AS extensions
      FROM example_trials t WHERE t.account_id = ${accountId}`).then((rows) =>
      rows[0] === undefined
        ? undefined
        : { trialEndsAt: Number(rows[0].trial_ends_at), extensions: Number(rows[0].extensions) }
    )

  const stripe = config.stripe
  const stripeSettings =
    stripe === undefined
      ? undefined
      : {
          secretKey: Redacted.make(stripe.secretKey),
          publishableKey: stripe.publishableKey,
          webhookSecret: Redacted.make(stripe.webhookSecret),
          ...(stripe.apiBase !== undefined ? { apiBase: stripe.apiBase } : {}),
          // Every call, intents included, then acts for the connected account (`Stripe-Account`).
          ...(stripe.connectedAccountId !== undefined ? { connectedAccountId: stripe.connectedAccountId } : {})
        }
  // The payment capability proof names the provider account behind STRIPE_SECRET_KEY (with
  // STRIPE_CONNECTED_ACCOUNT_ID: the connected account it acts for, as Stripe reports it). The kit
  // reads it at start and keeps reading it: while Stripe cannot be read the handshake offers no
  // payment modes and Payment executions answer 503 (the service retries them), and both come back
  // on their own once Stripe answers. The webhook route and reconciliation reads stay up throughout.
  const paymentModes = [
    "one_time_purchase",
    "setup_only",
    "recover_payment",
    ...(stripe?.subscriptionPrices !== undefined ? (["new_subscription", "existing_subscription_change"] as const) : [])
  ] as const
  const stripeClient = stripeSettings === undefined ? undefined : StripeProvider.client(stripeSettings)
  /**
   * The account's Stripe customer: the stored one, else one created (its idempotency key is the
   * account's, so a concurrent first subscription creates one customer) and stored.
   */
  const customerOf = async (accountId: string): Promise<string> => {
    const [found] = await run(
      sql<{ customer_id: string }>`SELECT customer_id FROM example_stripe_customers WHERE account_id = ${accountId}`
    )
    if (found !== undefined) return found.customer_id
    const created = await stripeClient!.customers.create(
      { metadata: { accord_account_id: accountId } },
      {
        idempotencyKey: `accord_customer_${accountId}`,
        ...(stripe?.connectedAccountId !== undefined ? { stripeAccount: stripe.connectedAccountId } : {})
      }
    )
    await run(sql`INSERT INTO example_stripe_customers (account_id, customer_id) VALUES (${accountId}, ${created.id})
                  ON CONFLICT (account_id) DO NOTHING`)
    const [stored] = await run(
      sql<{ customer_id: string }>`SELECT customer_id FROM example_stripe_customers WHERE account_id = ${accountId}`
    )
    return stored!.customer_id
  }
  const connectedOptions = stripe?.connectedAccountId !== undefined ? { stripeAccount: stripe.connectedAccountId } : {}
  /** The account's Stripe customer, if it has one (no customer: nothing to change or recover). */
  const storedCustomerOf = async (accountId: string): Promise<string | undefined> => {
    const [found] = await run(
      sql<{ customer_id: string }>`SELECT customer_id FROM example_stripe_customers WHERE account_id = ${accountId}`
    )
    return found?.customer_id
  }
  /** The account's live subscription (the newest active, trialing or past-due one), if any. */
  const subscriptionOf = async (customerId: string): Promise<string | undefined> => {
    const listed = await stripeClient!.subscriptions.list(
      { customer: customerId, status: "all", limit: 20 },
      connectedOptions
    )
    return listed.data.find((s) => s.status === "active" || s.status === "trialing" || s.status === "past_due")?.id
  }
  /** The account's open invoice (the newest), with what it asks for. */
  const openInvoiceOf = async (customerId: string) => {
    const listed = await stripeClient!.invoices.list(
      { customer: customerId, status: "open", limit: 1 },
      connectedOptions
    )
    const invoice = listed.data[0]
    return invoice === undefined || invoice.id === undefined
      ? undefined
      : { id: invoice.id, amountMinor: invoice.amount_due, currency: invoice.currency }
  }
  const onAccountChange = (state: ProviderAccount.ProviderAccountState) => {
    if (state._tag === "Unavailable") {
      console.error(
        `Stripe: the account behind STRIPE_SECRET_KEY could not be read (${state.reason}${state.code !== null ? `, ${state.code}` : ""}); ` +
          "payments are degraded (no payment modes offered, Payment executions answer 503); retrying with backoff"
      )
    } else if (state._tag === "Proven" && state.previousAccountId !== null) {
      console.error(
        "Stripe: STRIPE_SECRET_KEY now acts for another account; the capability proof of the previous one is withdrawn"
      )
    } else if (state._tag === "Proven") {
      console.log(`Stripe: account readable; payment modes offered: ${paymentModes.join(", ")}`)
    }
  }
  const kit = await makeCustomerKit({
    workspaceId: config.workspaceId,
    secrets: {
      actionSigning: Redacted.make(config.actionSigningSecret),
      completion: Redacted.make(config.completionSecret)
    },
    revision: config.connectionRevision,
    serviceUrl: config.serviceUrl,
    allowInsecureServiceUrl: config.allowInsecureServiceUrl,
    storage: Layer.succeedContext(await runtime.runtime().then((rt) => rt.context)),
    // Only the operations this backend implements are accepted; anything else is rejected up front.
    // A Payment family goes on to the plan, which rejects a mode not offered (`payment_not_offered`).
    precheck: async (request) =>
      Execution.isExtendTrialOperation(request.action.operation) ||
      (stripe !== undefined && isPaymentFamily(request.action.operation.family))
        ? undefined
        : "unsupported_operation",
    ...(stripeSettings !== undefined
      ? {
          payments: {
            stripe: stripeSettings,
            proof: { modes: [...paymentModes], livemode: StripeProvider.isLiveKey(stripeSettings.publishableKey) },
            account: {
              onChange: onAccountChange,
              ...(config.stripeAccountRetry !== undefined ? { retry: config.stripeAccountRetry } : {})
            },
            // The amount comes from this backend's own price list, by the operation's price key; never from the browser.
            plan: async (claimed: ClaimedExecution) => {
              const operation = claimed.action.operation as {
                readonly family: string
                readonly priceKey?: unknown
                readonly proration?: unknown
              }
              if (operation.family === "payment.setup_only") return { mode: "setup_only" }
              const subscription =
                typeof operation.priceKey === "string" &&
                stripe!.subscriptionPrices !== undefined &&
                Object.hasOwn(stripe!.subscriptionPrices, operation.priceKey)
                  ? stripe!.subscriptionPrices[operation.priceKey]
                  : undefined
              if (operation.family === "payment.existing_subscription_change") {
                // The account's live subscription moved to the price key's price, prorated as the catalog says.
                const customerId = await storedCustomerOf(claimed.accountId)
                const subscriptionId = customerId === undefined ? undefined : await subscriptionOf(customerId)
                return subscription === undefined || subscriptionId === undefined
                  ? undefined
                  : {
                      mode: "existing_subscription_change",
                      subscriptionId,
                      priceId: subscription.priceId,
                      proration: isProration(operation.proration) ? operation.proration : "always_invoice"
                    }
              }
              if (operation.family === "recover_payment") {
                // The account's open invoice, for what it asks; with a price key, only if it asks exactly that price.
                const customerId = await storedCustomerOf(claimed.accountId)
                const invoice = customerId === undefined ? undefined : await openInvoiceOf(customerId)
                const bound =
                  operation.priceKey === undefined
                    ? invoice
                    : typeof operation.priceKey === "string" && Object.hasOwn(stripe!.prices, operation.priceKey)
                      ? stripe!.prices[operation.priceKey]
                      : undefined
                return invoice === undefined || bound === undefined
                  ? undefined
                  : {
                      mode: "recover_payment",
                      invoiceId: invoice.id,
                      amountMinor: bound.amountMinor,
                      currency: bound.currency
                    }
              }
              if (operation.family === "payment.new_subscription") {
                return subscription === undefined
                  ? undefined
                  : {
                      mode: "new_subscription",
                      customerId: await customerOf(claimed.accountId),
                      priceId: subscription.priceId,
                      trialDays: subscription.trialDays ?? null
                    }
              }
              const price =
                typeof operation.priceKey === "string" && Object.hasOwn(stripe!.prices, operation.priceKey)
                  ? stripe!.prices[operation.priceKey]
                  : undefined
              return operation.family === "payment.one_time_purchase" && price !== undefined
                ? { mode: "one_time_purchase", amountMinor: price.amountMinor, currency: price.currency }
                : undefined
            }
          }
        }
      : {}),
    executor: {
      execute: async (claimed: ClaimedExecution) => {
        const operation = claimed.action.operation
        if (!Execution.isExtendTrialOperation(operation)) {
          return {
            outcome: "failed",
            providerReference: "none",
            evidence: { entitlement: "", reasonCode: "unsupported_operation", source: "customer_server_event" }
          }
        }
        const key = claimed.providerIdempotencyKey
        const now = Date.now()
        // One transaction: the extension record under the key, the trial change it causes, and the
        // pending entitlement_active event (the extension makes the trial active, so access is verified).
        const row = await run(
          sql.withTransaction(
            Effect.gen(function* () {
              const inserted = yield* sql`
            INSERT INTO example_trial_extensions (provider_idempotency_key, account_id, extension_days, trial_ends_at, extended_at, journey_id, version_id, action_request_id)
            VALUES (${key}, ${claimed.accountId}, ${operation.extensionDays}, 0, ${now}, ${claimed.binding.journeyId},
                    ${claimed.binding.publishedVersionId}, ${claimed.actionRequestId})
            ON CONFLICT DO NOTHING RETURNING provider_idempotency_key`
              if (inserted.length > 0) {
                const extension = operation.extensionDays * dayMillis
                const [trial] = yield* sql<{ trial_ends_at: string }>`
              INSERT INTO example_trials (account_id, trial_ends_at) VALUES (${claimed.accountId}, ${now + extension})
              ON CONFLICT (account_id) DO UPDATE SET trial_ends_at = GREATEST(example_trials.trial_ends_at, ${now}) + ${extension}
              RETURNING trial_ends_at`
                yield* sql`UPDATE example_trial_extensions SET trial_ends_at = ${trial!.trial_ends_at} WHERE provider_idempotency_key = ${key}`
              }
              return yield* settledExtension(key)
            })
          )
        )
        wakeEvents()
        return resultOf(key, row!)
      },
      lookup: async (key) => {
        const row = await run(settledExtension(key))
        if (row === undefined) return undefined
        wakeEvents()
        return resultOf(key, row)
      }
    }
  })

  const events =
    config.ingestApiKey === undefined
      ? undefined
      : // One attempt per call: the loop below owns the schedule, so it survives restarts.
        Sdk.DirectApiClient.make({ baseUrl: config.serviceUrl, apiKey: config.ingestApiKey, maxAttempts: 1 })
  const retry = config.eventRetry ?? defaultBackoff

  /** Sends the due pending events once each; the number it took. */
  const deliverDueEvents = (client: Sdk.DirectApiClient.DirectApiClient) =>
    Effect.gen(function* () {
      const now = Date.now()
      // Leased by moving next_attempt_at: several processes on one database never send an event at once.
      const due = yield* sql<{ event_id: string; event: string; attempts: number }>`
        UPDATE example_access_events SET next_attempt_at = ${now + eventLeaseMillis}
        WHERE event_id IN (SELECT event_id FROM example_access_events WHERE state = 'pending' AND next_attempt_at <= ${now}
                           ORDER BY next_attempt_at LIMIT 16 FOR UPDATE SKIP LOCKED)
        RETURNING event_id, event, attempts`
      yield* Effect.forEach(
        due,
        (row) =>
          Effect.gen(function* () {
            const sent = yield* Effect.either(client.ingest(JSON.parse(row.event)))
            const attempts = row.attempts + 1
            if (sent._tag === "Right") {
              yield* sql`UPDATE example_access_events SET state = 'delivered', attempts = ${attempts}, last_error = NULL WHERE event_id = ${row.event_id}`
              return
            }
            const error = sent.left
            // A refused key (401/403) is a configuration problem an operator fixes: keep the event.
            if (error._tag === "IngestRejected" && error.status !== 401 && error.status !== 403) {
              console.error(
                `entitlement_active ${row.event_id} refused by the service (HTTP ${error.status} ${error.code}); not retried`
              )
              yield* sql`UPDATE example_access_events SET state = 'refused', attempts = ${attempts}, last_error = ${error.code} WHERE event_id = ${row.event_id}`
              return
            }
            const reason = error._tag === "IngestRejected" ? `http_${error.status}` : error.reason
            if (error._tag === "IngestRejected")
              console.error(
                `entitlement_active: the service refused SERVICE_INGEST_API_KEY (HTTP ${error.status}); retrying`
              )
            // After an outage the service's `Retry-After` says when to come back, not the backoff's tail.
            const hint = error._tag === "IngestUnavailable" ? error.retryAfterMillis : undefined
            const next = Date.now() + retryDelay(retry, row.attempts, Math.random(), hint)
            yield* sql`UPDATE example_access_events SET attempts = ${attempts}, next_attempt_at = ${next}, last_error = ${reason} WHERE event_id = ${row.event_id}`
          }).pipe(
            // Stopped mid-attempt: due again at once for the next process.
            Effect.onInterrupt(() =>
              Effect.ignore(
                sql`UPDATE example_access_events SET next_attempt_at = ${Date.now()} WHERE event_id = ${row.event_id} AND state = 'pending'`
              )
            )
          ),
        { discard: true, concurrency: "unbounded" }
      ) // all within one time-out, well inside the lease
      return due.length
    })

  if (events === undefined)
    console.warn("SERVICE_INGEST_API_KEY is unset: entitlement_active events are recorded but not sent")
  const eventLoop =
    events === undefined
      ? undefined
      : runtime.runFork(
          Effect.forever(
            Effect.gen(function* () {
              const taken = yield* deliverDueEvents(events).pipe(
                Effect.catchAllCause((cause) =>
                  Cause.isInterruptedOnly(cause)
                    ? Effect.failCause(cause)
                    : Effect.as(
                        Effect.sync(() => console.error("entitlement_active delivery: the database failed; retrying")),
                        0
                      )
                )
              )
              if (taken === 0) yield* Effect.race(Queue.take(eventsDue), Effect.sleep(eventPollMillis))
            })
          )
        )

  const entitlement = (res: ServerResponse, encoded: string) => {
    let accountId: string
    try {
      accountId = decodeURIComponent(encoded)
    } catch {
      return json(res, 400, { error: "invalid_account_id" })
    }
    trialOf(accountId).then(
      (trial) =>
        json(res, 200, {
          accountId,
          trialActive: trial !== undefined && trial.trialEndsAt > Date.now(),
          trialEndsAt: trial === undefined ? null : new Date(trial.trialEndsAt).toISOString()
        }),
      () => json(res, 503, { error: "storage_unavailable" })
    )
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://backend")
    if (req.method === "POST" && url.pathname === "/connector") return kit.nodeHandler(req, res)
    // Stripe's webhook endpoint: verified with STRIPE_WEBHOOK_SECRET over the raw body.
    if (req.method === "POST" && url.pathname === "/stripe/webhook" && kit.webhook !== undefined)
      return kit.webhook.nodeHandler(req, res)
    // An example only: unauthenticated, so anyone who can reach it learns an account's trial state.
    // A real backend answers this behind its own authentication, for the signed-in account.
    const entitlementPath = /^\/entitlements\/([^/]+)$/.exec(url.pathname)
    if (req.method === "GET" && entitlementPath !== null) return entitlement(res, entitlementPath[1]!)
    if (req.method === "GET" && url.pathname === "/healthz") return void res.writeHead(200).end("ok")
    json(res, 404, { error: "not_found" })
  })
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve))
  const address = server.address() as AddressInfo
  return {
    url: `http://${config.host}:${address.port}`,
    trialOf,
    accessEvents: () =>
      run(sql<{ event_id: string; state: AccessEventStatus["state"]; attempts: number; last_error: string | null }>`
        SELECT event_id, state, attempts, last_error FROM example_access_events ORDER BY created_at, event_id`).then(
        (rows) =>
          rows.map((r) => ({
            eventId: r.event_id,
            state: r.state,
            attempts: Number(r.attempts),
            lastError: r.last_error
          }))
      ),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
      await kit.dispose()
      if (eventLoop !== undefined) await Effect.runPromise(Fiber.interrupt(eventLoop))
      await runtime.dispose()
    }
  }
}
