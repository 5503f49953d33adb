/**
 * Customer kit smoke run, by `test/runtimes.test.ts` under Bun and Deno: `makeCustomerKit` on memory
 * storage, its Fetch handler served by the runtime's own server (`Bun.serve` / `Deno.serve`), a
 * handshake answered and verified, an execution accepted with a signed acknowledgement, and the
 * signed completion reaching a loopback receiver served the same way. Prints one JSON line; exits
 * non-zero on any failure.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { makeCustomerKit } from "../../../adapters/customer/Kit.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import { layerAesGcm } from "../../../core/protocol/Cipher.ts"
import { Acknowledgement } from "../../../core/protocol/messages/Acknowledgement.ts"
import { HandshakeAck } from "../../../core/protocol/messages/Handshake.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { importSigningKeys } from "../../../core/protocol/Signing.ts"
import {
  executionBody,
  executionDelivery,
  handshakeDelivery,
  secrets,
  succeeded,
  verifyCompletion,
  verifyResponse,
  workspaceId
} from "../../support/deliveries.ts"

type FetchHandler = (request: Request) => Response | Promise<Response>
interface Served {
  readonly url: string
  readonly stop: () => Promise<void>
}

const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node"

/** Serves `fetch` on a free loopback port with the runtime's own HTTP server. */
const serve = (fetch: FetchHandler): Served => {
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

const answer = async (response: Response) => ({
  status: response.status,
  headers: Object.fromEntries(response.headers),
  body: new Uint8Array(await response.arrayBuffer())
})

// The "service": receives completions.
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
    execute: async (request) => succeeded(request.actionRequestId),
    lookup: async () => undefined
  }
})
const endpoint = serve(kit.fetch)

try {
  const keys = await run(importSigningKeys(secrets))
  const post = (delivery: { readonly headers: Record<string, string>; readonly body: Uint8Array }) =>
    fetch(`${endpoint.url}/connector`, { method: "POST", headers: delivery.headers, body: delivery.body }).then(answer)

  const handshake = await run(handshakeDelivery(keys))
  const handshakeAnswer = await post(handshake)
  if (handshakeAnswer.status !== 200) throw new Error(`handshake answered ${handshakeAnswer.status}`)
  const handshakeAck = await run(verifyResponse(HandshakeAck, "handshake_response", keys, handshakeAnswer))
  if (handshakeAck.challenge !== handshake.nonce) throw new Error("handshake_ack does not echo the challenge")

  const body = await run(executionBody(globalThis.crypto.randomUUID()))
  const execution = await run(executionDelivery(keys, body))
  const executionAnswer = await post(execution)
  if (executionAnswer.status !== 202) throw new Error(`execution answered ${executionAnswer.status}`)
  const ack = await run(verifyResponse(Acknowledgement, "dispatch_response", keys, executionAnswer))
  if (ack.state !== "accepted" || ack.requestNonce !== execution.nonce) throw new Error("execution not accepted")

  for (let i = 0; i < 400 && completions.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25))
  const received = completions[0]
  if (received === undefined) throw new Error("no completion arrived")
  const completion = await run(verifyCompletion(received))
  if (completion.actionRequestId !== body.actionRequestId) throw new Error("completion for another action")

  console.log(
    JSON.stringify({
      runtime,
      ok: true,
      handshake: handshakeAck.status,
      ack: ack.state,
      completion: completion.outcome
    })
  )
} finally {
  await endpoint.stop()
  await kit.dispose()
  await receiver.stop()
}
