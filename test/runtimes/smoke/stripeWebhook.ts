/**
 * Stripe webhook smoke run, by `test/runtimes/Runtimes.test.ts` under Bun and Deno: the customer kit
 * with `payments.stripe` (the official `stripe` client pointed at a local fake Stripe API), its
 * connector and webhook Fetch handlers served by the runtime's own server (`Bun.serve` /
 * `Deno.serve`). A Payment execution gets its continuation; a forged webhook is refused; a
 * correctly signed one (`generateTestHeaderStringAsync`) is verified with `constructEventAsync` over the
 * raw body, read back from the provider, and its signed completion reaches a loopback receiver.
 * Prints one JSON line; exits non-zero on any failure.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { makeCustomerKit } from "../../../adapters/customer/Kit.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import { layerAesGcm } from "../../../core/protocol/Cipher.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { importSigningKeys } from "../../../core/protocol/Signing.ts"
import { startFakeStripe } from "../../adapters/stripe/FakeStripe.ts"
import { executionBody, executionDelivery, secrets, verifyCompletion, workspaceId } from "../../support/deliveries.ts"

type FetchHandler = (request: Request) => Response | Promise<Response>
const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node"

const serve = (fetch: FetchHandler): { readonly url: string; readonly stop: () => Promise<void> } => {
  const global = globalThis as any
  if (runtime === "bun") {
    const server = global.Bun.serve({ hostname: "127.0.0.1", port: 0, fetch })
    return { url: `http://127.0.0.1:${server.port}`, stop: async () => void server.stop(true) }
  }
  if (runtime === "deno") {
    const server = global.Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, fetch)
    return { url: `http://127.0.0.1:${server.addr.port}`, stop: () => server.shutdown() }
  }
  throw new Error("run under Bun or Deno")
}

const client = Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer)
const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof client>>) =>
  Effect.runPromise(Effect.provide(effect, client))

const webhookSecret = "whsec_smoke_0123456789abcdef0123"
const fake = await startFakeStripe({ webhookSecret })
const completions: Array<{ readonly headers: Record<string, string>; readonly body: Uint8Array }> = []
const receiver = serve(async (request) => {
  completions.push({ headers: Object.fromEntries(request.headers), body: new Uint8Array(await request.arrayBuffer()) })
  return new Response("{}", { status: 200, headers: { "content-type": "application/json" } })
})
const kit = await makeCustomerKit({
  workspaceId,
  secrets,
  serviceUrl: receiver.url,
  allowInsecureServiceUrl: true,
  storage: MemoryStorage.layer.pipe(Layer.provide(layerAesGcm(Redacted.make(new Uint8Array(32).fill(7))))),
  worker: { pollMillis: 50 },
  executor: {
    execute: async () => {
      throw new Error("unused")
    },
    lookup: async () => undefined
  },
  payments: {
    stripe: {
      secretKey: Redacted.make(fake.secretKey),
      publishableKey: "pk_test_smoke",
      webhookSecret: Redacted.make(webhookSecret),
      apiBase: fake.apiBase,
      maxNetworkRetries: 0
    },
    plan: async () => ({ mode: "one_time_purchase", amountMinor: 4900, currency: "usd" })
  }
})
const endpoint = serve((request) =>
  new URL(request.url).pathname === "/stripe/webhook" ? kit.webhook!.fetch(request) : kit.fetch(request)
)

try {
  const keys = await run(importSigningKeys(secrets))
  const base = await run(executionBody(globalThis.crypto.randomUUID()))
  const body = {
    ...base,
    action: { ...base.action, key: "buy_addon", operation: { family: "payment.one_time_purchase", priceKey: "addon" } }
  }
  // Until the kit has read the Stripe account, a Payment execution answers 503 and claims nothing;
  // the service retries it, freshly signed, as here.
  const deliver = async () => {
    const execution = await run(executionDelivery(keys, body))
    return fetch(`${endpoint.url}/connector`, { method: "POST", headers: execution.headers, body: execution.body })
  }
  let answered = await deliver()
  for (let attempt = 0; answered.status === 503 && attempt < 100; attempt++) {
    await answered.body?.cancel()
    await new Promise((resolve) => setTimeout(resolve, 50))
    answered = await deliver()
  }
  const ack = (await answered.json()) as { state: string; continuation?: { intent: string; clientSecret: string } }
  if (answered.status !== 202 || ack.continuation === undefined) throw new Error(`no continuation (${answered.status})`)
  const intentId = ack.continuation.clientSecret.split("_secret_")[0]!
  fake.succeed(intentId)

  const event = await fake.eventAsync("payment_intent.succeeded", { id: intentId, object: "payment_intent" })
  const post = (header: string) =>
    fetch(`${endpoint.url}/stripe/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": header },
      body: event.payload
    })
  const forged = await post((await fake.eventAsync("x", {}, { secret: "whsec_forger" })).header)
  await forged.arrayBuffer()
  const genuine = await post(event.header)
  await genuine.arrayBuffer()

  for (let i = 0; i < 400 && completions.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25))
  const received = completions[0]
  if (received === undefined) throw new Error("no completion arrived")
  const completion = await run(verifyCompletion(received))
  console.log(
    JSON.stringify({
      runtime,
      ok: true,
      continuation: ack.continuation.intent,
      forged: forged.status,
      webhook: genuine.status,
      completion: completion.outcome
    })
  )
} finally {
  await endpoint.stop()
  await kit.dispose()
  await receiver.stop()
  await fake.close()
}
