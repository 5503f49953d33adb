/**
 * A local fake of the Stripe API for offline tests: the `stripe` client is pointed at it through
 * its `host`/`port`/`protocol` options (`apiBase`). It keeps payment intents, charges, setup
 * intents, subscriptions and invoices in memory, honours `Idempotency-Key` (the same key returns
 * the first response), refuses a wrong secret key (401), and lets a test move objects along
 * (`succeed`, `decline`, `cancel`, `refund`, …) and build correctly signed webhook deliveries with
 * `stripe.webhooks.generateTestHeaderString`.
 *
 * Invoices come in either of Stripe's shapes (`invoiceShape`): `payments` (API versions from
 * 2025-03-31: the paying intent only in the includable `payments` list, `expand[]=payments`, and the
 * invoice of an intent found through `GET /v1/invoice_payments`), or `legacy` (older versions:
 * `invoice.payment_intent`, `invoice.charge`, and `invoice` on the intent and charge).
 *
 * Objects created with a `Stripe-Account` header belong to that connected account: they are found
 * only with the same header (404 otherwise), as on Stripe.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import Stripe from "stripe"

type Obj = Record<string, unknown>

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly params: Obj
  readonly idempotencyKey: string | undefined
  readonly stripeAccount: string | undefined
}

/** `a[b][0][c]=d` form fields as nested objects (arrays as objects with numeric keys turned into arrays). */
const decodeForm = (body: string): Obj => {
  const out: Obj = {}
  for (const [key, value] of new URLSearchParams(body)) {
    const parts = key.replace(/\]/g, "").split("[")
    let target = out
    parts.forEach((part, i) => {
      if (i === parts.length - 1) target[part] = value
      else target = (target[part] ??= {}) as Obj
    })
  }
  return out
}

export interface FakeStripe {
  readonly apiBase: string
  readonly secretKey: string
  /** The account behind the secret key (`GET /v1/account`); a test may move the key to another. */
  accountId: string
  readonly requests: Array<RecordedRequest>
  readonly objects: Map<string, Obj>
  /** Makes every API call answer 503 while set. */
  outage: boolean
  /** Where the fake posts signed events after a confirm or refund made through the API (as Stripe would). */
  webhookTarget: string | undefined
  /** The card payment succeeds: a charge of the full amount, the intent `succeeded`. */
  readonly succeed: (paymentIntentId: string) => Obj
  /** A declined attempt: the intent back to `requires_payment_method`. */
  readonly decline: (paymentIntentId: string) => Obj
  /** A declined setup attempt: the setup intent back to `requires_payment_method`. */
  readonly declineSetup: (setupIntentId: string) => Obj
  /** The subscription's initial invoice's payment declined; returns the invoice. */
  readonly declineInitialInvoice: (subscriptionId: string) => Obj
  /** The payment intent that pays the subscription's initial invoice. */
  readonly initialPaymentIntent: (subscriptionId: string) => string
  readonly cancel: (id: string) => Obj
  /** Refunds `amountMinor` (default: everything left) of the intent's charge; returns the charge. */
  readonly refund: (paymentIntentId: string, amountMinor?: number) => Obj
  /** The setup intent confirmed with a card. */
  readonly confirmSetup: (setupIntentId: string) => Obj
  /** The subscription's initial invoice paid (the subscription `active`). */
  readonly payInitialInvoice: (subscriptionId: string) => Obj
  /** A renewal invoice, paid. */
  readonly renew: (subscriptionId: string) => Obj
  /**
   * A renewal invoice of `amountMinor` (default 4900) whose payment was declined: the invoice open,
   * the subscription `past_due`; returns the invoice.
   */
  readonly failRenewal: (subscriptionId: string, amountMinor?: number) => Obj
  /**
   * An open invoice paid through its payment intent (a recovery, a change's proration invoice):
   * the intent succeeds, a pending change takes effect, the subscription is `active`; returns the invoice.
   */
  readonly payInvoice: (invoiceId: string) => Obj
  /** The payment intent that collects an invoice. */
  readonly invoicePaymentIntent: (invoiceId: string) => string
  /** A webhook delivery of an event about `object`: its raw body and signature header. */
  readonly event: (
    type: string,
    object: Obj,
    options?: {
      readonly id?: string
      readonly secret?: string
      readonly timestamp?: number
      readonly livemode?: boolean
    }
  ) => {
    readonly id: string
    readonly payload: string
    readonly header: string
  }
  /** `event` signed with `generateTestHeaderStringAsync` (Bun, Deno and edge runtimes sign with SubtleCrypto only). */
  readonly eventAsync: (
    type: string,
    object: Obj,
    options?: { readonly id?: string; readonly secret?: string }
  ) => Promise<{
    readonly id: string
    readonly payload: string
    readonly header: string
  }>
  /** A signature header for any raw body (a body that is not an event, for instance). */
  readonly sign: (payload: string) => string
  readonly close: () => Promise<void>
}

export const startFakeStripe = async (options: {
  readonly secretKey?: string
  readonly webhookSecret: string
  readonly accountId?: string
  /** The invoice shape served (default `payments`, the newest). */
  readonly invoiceShape?: "payments" | "legacy"
  /** Connected accounts the platform key reaches (`GET /v1/accounts/{id}`). */
  readonly connectedAccounts?: ReadonlyArray<string>
}): Promise<FakeStripe> => {
  const legacy = options.invoiceShape === "legacy"
  const secretKey = options.secretKey ?? "sk_test_fake_0123456789"
  const accountId = options.accountId ?? "acct_1FakeAccount0001"
  const objects = new Map<string, Obj>()
  const idempotent = new Map<string, string>()
  const requests: Array<RecordedRequest> = []
  let counter = 0
  const nextId = (prefix: string) => `${prefix}_fake${String(++counter).padStart(8, "0")}`
  const signer = new Stripe(secretKey)
  const now = () => Math.floor(Date.now() / 1000)

  const paymentIntent = (params: Obj): Obj => {
    const id = nextId("pi")
    return {
      id,
      object: "payment_intent",
      amount: Number(params.amount),
      amount_received: 0,
      currency: params.currency,
      customer: params.customer ?? null,
      status: "requires_payment_method",
      client_secret: `${id}_secret_${counter}`,
      automatic_payment_methods:
        params.automatic_payment_methods === undefined
          ? null
          : {
              enabled: (params.automatic_payment_methods as Obj).enabled === "true",
              allow_redirects: (params.automatic_payment_methods as Obj).allow_redirects ?? "always"
            },
      payment_method: null,
      latest_charge: null,
      livemode: false,
      metadata: params.metadata ?? {}
    }
  }
  const setupIntent = (params: Obj): Obj => {
    const id = nextId("seti")
    return {
      id,
      object: "setup_intent",
      customer: params.customer ?? null,
      status: "requires_payment_method",
      client_secret: `${id}_secret_${counter}`,
      payment_method: null,
      livemode: false,
      metadata: params.metadata ?? {}
    }
  }
  /** What each fake price costs a month. */
  const priceAmount = (price: unknown): number =>
    price === "price_monthly" ? 1500 : price === "price_team" ? 4900 : price === "price_basic" ? 900 : 2500
  const invoice = (subscription: Obj, reason: string, amount: number, status: string): Obj => {
    const id = nextId("in")
    const inv: Obj = {
      id,
      object: "invoice",
      status,
      billing_reason: reason,
      amount_paid: status === "paid" ? amount : 0,
      amount_due: amount,
      currency: "usd",
      customer: subscription.customer,
      metadata: {},
      account_for_fake: subscription.account_for_fake,
      subscription_for_fake: subscription.id,
      livemode: false,
      parent: {
        type: "subscription_details",
        subscription_details: { subscription: subscription.id, metadata: subscription.metadata }
      }
    }
    objects.set(id, inv)
    return inv
  }
  const subscription = (params: Obj): Obj => {
    const id = nextId("sub")
    const trialDays = params.trial_period_days === undefined ? 0 : Number(params.trial_period_days)
    const sub: Obj = {
      id,
      object: "subscription",
      customer: params.customer,
      status: trialDays > 0 ? "trialing" : "incomplete",
      trial_end: trialDays > 0 ? now() + trialDays * 86400 : null,
      default_payment_method: null,
      livemode: false,
      metadata: params.metadata ?? {},
      latest_invoice: null,
      pending_setup_intent: null,
      pending_update: null,
      items: {
        object: "list",
        data: [
          {
            id: nextId("si"),
            object: "subscription_item",
            price: { id: String(((params.items as Obj)?.["0"] as Obj | undefined)?.price), object: "price" }
          }
        ]
      }
    }
    objects.set(id, sub)
    const price = ((params.items as Obj)?.["0"] as Obj | undefined)?.price
    const amount = priceAmount(price)
    const first = invoice(sub, "subscription_create", trialDays > 0 ? 0 : amount, trialDays > 0 ? "paid" : "open")
    sub.latest_invoice = first.id
    if (trialDays > 0) {
      const seti = setupIntent({ customer: params.customer, metadata: params.metadata })
      objects.set(seti.id as string, seti)
      sub.pending_setup_intent = seti.id
    } else collect(first)
    return {
      ...sub,
      latest_invoice: first,
      pending_setup_intent: sub.pending_setup_intent === null ? null : objects.get(sub.pending_setup_intent as string)
    }
  }

  /** An intent that collects `inv`, named by its confirmation secret (and on older versions by the invoice). */
  const collect = (inv: Obj): Obj => {
    const pi = paymentIntent({ amount: inv.amount_due, currency: inv.currency, customer: inv.customer, metadata: {} })
    pi.account_for_fake = inv.account_for_fake
    objects.set(pi.id as string, pi)
    inv.confirmation_secret = { client_secret: pi.client_secret, type: "payment_intent" }
    inv.payment_intent_for_fake = pi.id
    if (legacy) {
      inv.payment_intent = pi.id
      inv.charge = null
      pi.invoice = inv.id
    }
    return pi
  }

  /** `POST /v1/subscriptions/{id}`: the one item moved to another price, prorated as asked. */
  const updateSubscription = (sub: Obj, params: Obj): Obj => {
    const item = ((params.items as Obj | undefined)?.["0"] ?? {}) as Obj
    const current = (sub.items as { data: Array<Obj> }).data[0]!
    if (item.id !== current.id) throw new Error("fake stripe: the update names another item")
    if (params.metadata !== undefined) sub.metadata = { ...(params.metadata as Obj) }
    const from = priceAmount((current.price as Obj).id)
    const to = priceAmount(item.price)
    const apply = () => {
      current.price = { id: item.price, object: "price" }
      sub.pending_update = null
    }
    if (params.proration_behavior !== "always_invoice") {
      apply()
      return sub
    }
    const owed = Math.max(0, to - from)
    const inv = invoice(sub, "subscription_update", owed, owed > 0 ? "open" : "paid")
    sub.latest_invoice = inv.id
    if (owed > 0) {
      collect(inv)
      if (params.payment_behavior === "pending_if_incomplete") {
        sub.pending_update = { subscription_items: [{ id: current.id, price: item.price }] }
        pending.set(inv.id as string, apply)
      } else apply()
    } else apply()
    return sub
  }
  const pending = new Map<string, () => void>()

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json", "request-id": `req_${counter}` })
    res.end(JSON.stringify(body))
  }
  const error = (res: ServerResponse, status: number, type: string, code: string) =>
    send(res, status, { error: { type, code, message: code } })

  const route = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const url = new URL(req.url ?? "/", "http://fake")
    const params = req.method === "GET" ? decodeForm(url.search.slice(1)) : decodeForm(body)
    const idempotencyKey = req.headers["idempotency-key"] as string | undefined
    const stripeAccount = req.headers["stripe-account"] as string | undefined
    requests.push({ method: req.method ?? "", path: url.pathname, params, idempotencyKey, stripeAccount })
    if (fake.outage) return error(res, 503, "api_error", "service_unavailable")
    // Older API versions have no `confirmation_secret` on invoices: expanding it is an error there.
    if (
      legacy &&
      Object.values((params.expand ?? {}) as Obj).some((path) => String(path).endsWith("confirmation_secret"))
    )
      return error(res, 400, "invalid_request_error", "parameter_invalid")
    if (req.headers.authorization !== `Bearer ${secretKey}`)
      return error(res, 401, "invalid_request_error", "invalid_api_key")
    if (req.method === "GET" && url.pathname === "/v1/account") {
      // Acting for a connected account the platform does not reach: refused, as on Stripe.
      if (stripeAccount !== undefined && !(options.connectedAccounts ?? []).includes(stripeAccount)) {
        return error(res, 403, "invalid_request_error", "account_invalid")
      }
      return send(res, 200, { id: stripeAccount ?? fake.accountId, object: "account", charges_enabled: true })
    }
    const connectedAccount = /^\/v1\/accounts\/([^/]+)$/.exec(url.pathname)
    if (req.method === "GET" && connectedAccount !== null) {
      return (options.connectedAccounts ?? []).includes(connectedAccount[1]!)
        ? send(res, 200, { id: connectedAccount[1], object: "account", charges_enabled: true })
        : error(res, 404, "invalid_request_error", "resource_missing")
    }
    /** An object of this request's account (the `Stripe-Account` header), else nothing. */
    const owned = (id: string | undefined): Obj | undefined => {
      const found = id === undefined ? undefined : objects.get(id)
      return found !== undefined && found.account_for_fake === stripeAccount ? found : undefined
    }
    const payments = /^\/v1\/invoice_payments$/.exec(url.pathname)
    if (req.method === "GET" && payments !== null && !legacy) {
      const intent = (params.payment as Obj | undefined)?.payment_intent as string | undefined
      const data = [...objects.values()]
        .filter(
          (o) =>
            o.object === "invoice" &&
            intent !== undefined &&
            o.payment_intent_for_fake === intent &&
            owned(o.id as string) !== undefined
        )
        .map((o) => invoicePaymentOf(o))
      return send(res, 200, { object: "list", data, has_more: false, url: "/v1/invoice_payments" })
    }
    const cancel =
      /^\/v1\/(payment_intents|setup_intents)\/([^/]+)\/cancel$/.exec(url.pathname) ??
      (req.method === "DELETE" ? /^\/v1\/(subscriptions)\/([^/]+)$/.exec(url.pathname) : null)
    if ((req.method === "POST" || req.method === "DELETE") && cancel !== null) {
      const target = owned(cancel[2])
      if (target === undefined) return error(res, 404, "invalid_request_error", "resource_missing")
      if (target.status === "succeeded" || target.status === "processing") {
        return error(res, 400, "invalid_request_error", `${target.object}_unexpected_state`)
      }
      fake.cancel(cancel[2]!)
      if (target.object === "subscription") {
        const inv = objects.get(target.latest_invoice as string)
        if (inv !== undefined && inv.status === "open") inv.status = "void"
        if (inv !== undefined && typeof inv.payment_intent_for_fake === "string")
          fake.cancel(inv.payment_intent_for_fake)
      }
      push(`${target.object}.${target.object === "subscription" ? "deleted" : "canceled"}`, target)
      return send(res, 200, target)
    }
    const price = /^\/v1\/prices\/([^/]+)$/.exec(url.pathname)
    if (req.method === "GET" && price !== null) {
      return send(res, 200, {
        id: price[1],
        object: "price",
        livemode: price[1]!.includes("live"),
        unit_amount: 4900,
        currency: "usd"
      })
    }
    const confirm = /^\/v1\/payment_intents\/([^/]+)\/confirm$/.exec(url.pathname)
    if (req.method === "POST" && confirm !== null && owned(confirm[1]!) !== undefined) {
      if (params.payment_method === "pm_card_chargeDeclined") {
        const declined = fake.decline(confirm[1]!)
        push("payment_intent.payment_failed", declined)
        return error(res, 402, "card_error", "card_declined")
      }
      const paid = fake.succeed(confirm[1]!)
      push("payment_intent.succeeded", paid)
      return send(res, 200, paid)
    }
    if (
      req.method === "POST" &&
      url.pathname === "/v1/refunds" &&
      typeof params.payment_intent === "string" &&
      owned(params.payment_intent) !== undefined
    ) {
      const charge = fake.refund(params.payment_intent, params.amount === undefined ? undefined : Number(params.amount))
      push("charge.refunded", charge)
      return send(res, 200, {
        id: nextId("re"),
        object: "refund",
        payment_intent: params.payment_intent,
        status: "succeeded"
      })
    }
    const list = /^\/v1\/(subscriptions|invoices)$/.exec(url.pathname)
    if (req.method === "GET" && list !== null) {
      const kind = list[1] === "subscriptions" ? "subscription" : "invoice"
      const data = [...objects.values()]
        .filter(
          (o) =>
            o.object === kind &&
            o.account_for_fake === stripeAccount &&
            (params.customer === undefined || o.customer === params.customer) &&
            (params.status === undefined || params.status === "all" || o.status === params.status)
        )
        .reverse()
      return send(res, 200, { object: "list", data, has_more: false, url: url.pathname })
    }
    const voided = /^\/v1\/invoices\/([^/]+)\/void$/.exec(url.pathname)
    if (req.method === "POST" && voided !== null) {
      const inv = owned(voided[1])
      if (inv === undefined) return error(res, 404, "invalid_request_error", "resource_missing")
      if (inv.status !== "open") return error(res, 400, "invalid_request_error", "invoice_not_open")
      inv.status = "void"
      pending.delete(inv.id as string)
      const sub = typeof inv.subscription_for_fake === "string" ? objects.get(inv.subscription_for_fake) : undefined
      if (sub !== undefined) sub.pending_update = null
      if (typeof inv.payment_intent_for_fake === "string") fake.cancel(inv.payment_intent_for_fake)
      push("invoice.voided", inv)
      return send(res, 200, inv)
    }
    const updated = /^\/v1\/(subscriptions|invoices)\/([^/]+)$/.exec(url.pathname)
    if (req.method === "POST" && updated !== null) {
      const keyed = idempotencyKey === undefined ? undefined : `${url.pathname} ${idempotencyKey}`
      if (keyed !== undefined && idempotent.has(keyed)) return send(res, 200, JSON.parse(idempotent.get(keyed)!))
      const target = owned(updated[2])
      if (target === undefined) return error(res, 404, "invalid_request_error", "resource_missing")
      let answer: Obj
      if (target.object === "invoice") {
        if (params.metadata !== undefined)
          target.metadata = { ...(target.metadata as Obj), ...(params.metadata as Obj) }
        answer = target
      } else {
        // As on Stripe before 2026-05-27: a pending update takes only its own few parameters.
        if (params.payment_behavior === "pending_if_incomplete" && params.metadata !== undefined)
          return error(res, 400, "invalid_request_error", "parameter_unknown")
        const sub = updateSubscription(target, params)
        const latest = objects.get(sub.latest_invoice as string)
        const expand = Object.values((params.expand ?? {}) as Obj)
        answer =
          expand.includes("latest_invoice.confirmation_secret") && latest !== undefined
            ? { ...sub, latest_invoice: latest }
            : sub
      }
      const text = JSON.stringify(answer)
      if (keyed !== undefined) idempotent.set(keyed, text)
      return send(res, 200, answer)
    }
    const create: Record<string, (p: Obj) => Obj> = {
      "/v1/customers": (p) => ({ id: nextId("cus"), object: "customer", livemode: false, metadata: p.metadata ?? {} }),
      "/v1/payment_intents": paymentIntent,
      "/v1/setup_intents": setupIntent,
      "/v1/subscriptions": subscription
    }
    if (req.method === "POST" && Object.hasOwn(create, url.pathname)) {
      const keyed = idempotencyKey === undefined ? undefined : `${url.pathname} ${idempotencyKey}`
      if (keyed !== undefined && idempotent.has(keyed)) return send(res, 200, JSON.parse(idempotent.get(keyed)!))
      const created = create[url.pathname]!(params)
      if (!objects.has(created.id as string)) objects.set(created.id as string, created)
      // Everything this create made belongs to the request's account.
      for (const made of [created, created.latest_invoice, created.pending_setup_intent]) {
        if (typeof made === "object" && made !== null) {
          const stored = objects.get((made as Obj).id as string)
          if (stored !== undefined) stored.account_for_fake = stripeAccount
          const pi = stored?.payment_intent_for_fake
          if (typeof pi === "string") objects.get(pi)!.account_for_fake = stripeAccount
        }
      }
      const text = JSON.stringify(created)
      if (keyed !== undefined) idempotent.set(keyed, text)
      return send(res, 200, created)
    }
    const read = /^\/v1\/(payment_intents|charges|setup_intents|subscriptions|invoices)\/([^/]+)$/.exec(url.pathname)
    if (req.method === "GET" && read !== null) {
      const found = owned(read[2]!)
      if (found === undefined) return error(res, 404, "invalid_request_error", "resource_missing")
      const expand = Object.values((params.expand ?? {}) as Obj)
      if (found.object === "invoice" && legacy && expand.includes("payment_intent")) {
        const { confirmation_secret: _secret, ...older } = found
        const pi = typeof found.payment_intent === "string" ? objects.get(found.payment_intent) : undefined
        return send(res, 200, { ...older, payment_intent: pi ?? found.payment_intent ?? null })
      }
      if (found.object === "invoice" && !legacy && expand.includes("payments")) {
        return send(res, 200, {
          ...found,
          payments: {
            object: "list",
            data: [invoicePaymentOf(found)].filter((p) => p.payment.payment_intent !== undefined),
            has_more: false
          }
        })
      }
      return send(res, 200, found)
    }
    return error(res, 404, "invalid_request_error", "unknown_route")
  }

  /** The invoice payment of a fake invoice (the newest shape). */
  const invoicePaymentOf = (inv: Obj) => ({
    id: `inpay_${inv.id as string}`,
    object: "invoice_payment",
    invoice: inv.id,
    is_default: true,
    status: inv.status === "paid" ? "paid" : inv.status === "void" ? "canceled" : "open",
    amount_paid: inv.status === "paid" ? inv.amount_paid : null,
    amount_requested: inv.amount_due,
    currency: inv.currency,
    livemode: false,
    payment: { type: "payment_intent", payment_intent: inv.payment_intent_for_fake as string | undefined }
  })

  /** Stripe's own delivery of an event to the configured endpoint (fire and forget, as Stripe retries on its own). */
  const push = (type: string, object: Obj) => {
    const target = fake.webhookTarget
    if (target === undefined) return
    const delivery = fake.event(type, object)
    void fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": delivery.header },
      body: delivery.payload
    }).catch(() => undefined)
  }

  const server: Server = createServer((req, res) => {
    let body = ""
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => route(req, res, body))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port

  const get = (id: string) => {
    const found = objects.get(id)
    if (found === undefined) throw new Error(`fake stripe: no ${id}`)
    return found
  }
  const fake: FakeStripe = {
    apiBase: `http://127.0.0.1:${port}`,
    secretKey,
    accountId,
    requests,
    objects,
    outage: false,
    webhookTarget: undefined,
    succeed: (id) => {
      const pi = get(id)
      const chargeId = nextId("ch")
      objects.set(chargeId, {
        id: chargeId,
        object: "charge",
        payment_intent: id,
        status: "succeeded",
        amount: pi.amount,
        amount_captured: pi.amount,
        amount_refunded: 0,
        refunded: false,
        currency: pi.currency,
        livemode: false,
        ...(legacy ? { invoice: pi.invoice ?? null } : {}),
        account_for_fake: pi.account_for_fake
      })
      Object.assign(pi, {
        status: "succeeded",
        amount_received: pi.amount,
        latest_charge: chargeId,
        payment_method: "pm_card_visa"
      })
      return pi
    },
    decline: (id) =>
      Object.assign(get(id), { status: "requires_payment_method", last_payment_error: { code: "card_declined" } }),
    declineSetup: (id) =>
      Object.assign(get(id), { status: "requires_payment_method", last_setup_error: { code: "card_declined" } }),
    declineInitialInvoice: (id) => {
      const inv = get(get(id).latest_invoice as string)
      fake.decline(inv.payment_intent_for_fake as string)
      return Object.assign(inv, { attempted: true, attempt_count: 1 })
    },
    initialPaymentIntent: (id) => get(get(id).latest_invoice as string).payment_intent_for_fake as string,
    cancel: (id) => Object.assign(get(id), { status: "canceled" }),
    refund: (id, amount) => {
      const charge = get(get(id).latest_charge as string)
      const left = (charge.amount_captured as number) - (charge.amount_refunded as number)
      const refunded = (charge.amount_refunded as number) + (amount ?? left)
      return Object.assign(charge, {
        amount_refunded: refunded,
        refunded: refunded >= (charge.amount_captured as number)
      })
    },
    confirmSetup: (id) => Object.assign(get(id), { status: "succeeded", payment_method: "pm_card_visa" }),
    payInitialInvoice: (id) => {
      const sub = get(id)
      const inv = get(sub.latest_invoice as string)
      Object.assign(inv, { status: "paid", amount_paid: inv.amount_due })
      if (typeof inv.payment_intent_for_fake === "string") {
        const pi = fake.succeed(inv.payment_intent_for_fake)
        if (legacy) inv.charge = pi.latest_charge
      }
      return Object.assign(sub, { status: "active", default_payment_method: "pm_card_visa" })
    },
    renew: (id) => {
      const sub = get(id)
      const inv = invoice(sub, "subscription_cycle", 2500, "paid")
      sub.latest_invoice = inv.id
      return inv
    },
    failRenewal: (id, amount = 4900) => {
      const sub = get(id)
      const inv = invoice(sub, "subscription_cycle", amount, "open")
      sub.latest_invoice = inv.id
      fake.decline(collect(inv).id as string)
      Object.assign(inv, { attempted: true, attempt_count: 1 })
      sub.status = "past_due"
      return inv
    },
    payInvoice: (invoiceId) => {
      const inv = get(invoiceId)
      Object.assign(inv, { status: "paid", amount_paid: inv.amount_due })
      const pi = fake.succeed(inv.payment_intent_for_fake as string)
      if (legacy) inv.charge = pi.latest_charge
      pending.get(invoiceId)?.()
      pending.delete(invoiceId)
      const subId = (inv.parent as { subscription_details?: { subscription?: string } } | undefined)
        ?.subscription_details?.subscription
      if (subId !== undefined) Object.assign(get(subId), { status: "active", default_payment_method: "pm_card_visa" })
      return inv
    },
    invoicePaymentIntent: (invoiceId) => get(invoiceId).payment_intent_for_fake as string,
    event: (type, object, eventOptions = {}) => {
      const id = eventOptions.id ?? nextId("evt")
      const payload = JSON.stringify(
        {
          id,
          object: "event",
          api_version: "2026-10-28.endive",
          created: now(),
          livemode: eventOptions.livemode ?? false,
          type,
          data: { object }
        },
        null,
        2
      )
      const header = signer.webhooks.generateTestHeaderString({
        payload,
        secret: eventOptions.secret ?? options.webhookSecret,
        ...(eventOptions.timestamp !== undefined ? { timestamp: eventOptions.timestamp } : {})
      })
      return { id, payload, header }
    },
    eventAsync: async (type, object, eventOptions = {}) => {
      const id = eventOptions.id ?? nextId("evt")
      const payload = JSON.stringify({
        id,
        object: "event",
        api_version: "2026-10-28.endive",
        created: now(),
        livemode: false,
        type,
        data: { object }
      })
      const header = await signer.webhooks.generateTestHeaderStringAsync({
        payload,
        secret: eventOptions.secret ?? options.webhookSecret
      })
      return { id, payload, header }
    },
    sign: (payload) => signer.webhooks.generateTestHeaderString({ payload, secret: options.webhookSecret }),
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
  return fake
}
