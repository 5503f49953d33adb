/**
 * Verification throughput for a 1 KiB body: header parse, freshness, in-memory nonce check and
 * HMAC, for Accord's WebCrypto and node:crypto layers, side by side with baselines measured in
 * the same run: a bare `node:crypto` `createHmac` over the same signing input (the limit of the
 * node:crypto layer), a bare WebCrypto `subtle.verify` over it, awaited one message after another as
 * a verifier does (the limit of the WebCrypto layer), and the `standardwebhooks` package's `verify`
 * (a well-known peer). Each Accord layer's share of its own limit is printed.
 *
 * Runs on Node (`npm run bench:verify`), Bun (`bun bench/verify.bench.ts`) and Deno
 * (`deno run -A bench/verify.bench.ts`).
 *
 * Rounds are interleaved and the median is reported, because this machine is shared and noisy.
 */
import { createHmac } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Webhook } from "standardwebhooks"
import * as NodeCrypto from "../adapters/crypto/NodeCrypto.ts"
import { type Crypto, layerWebCrypto } from "../core/ports/Crypto.ts"
import * as NonceStore from "../core/ports/NonceStore.ts"
import { importSigningKeys, sign, signingPrefix } from "../core/protocol/Signing.ts"
import { makeVerifier, type VerifyInput } from "../core/protocol/Verification.ts"

const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const batch = Number(process.env.BENCH_BATCH ?? 20_000)
const secret = "as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e"
const body = new TextEncoder().encode(JSON.stringify({ type: "service.customer_action.ack", pad: "x".repeat(1024 - 47) }))
if (body.length !== 1024) throw new Error(`body is ${body.length} bytes`)

type Runner = () => Promise<number> // returns elapsed ms for `batch` verifications

/** Collects the garbage of setting up a round (e.g. signing its messages) before timing it. */
const settle = (): void => (globalThis as { gc?: () => void }).gc?.()

/** Accord: a batch of distinct signed messages (fresh nonces), verified inside one Effect. */
const accord = (layer: Layer.Layer<Crypto>): Runner => {
  const full = Layer.merge(layer, NonceStore.layerMemory)
  return () =>
    Effect.runPromise(
      Effect.gen(function*() {
        const keys = yield* importSigningKeys({ actionSigning: Redacted.make(secret), completion: Redacted.make(secret + "c") })
        const inputs: Array<VerifyInput> = []
        for (let i = 0; i < batch; i++) {
          const headers = yield* sign({ purpose: "dispatch_response", keys, body })
          // As an HTTP parser would hand them over: fresh, flat strings.
          inputs.push({ purpose: "dispatch_response", keys, headers: JSON.parse(JSON.stringify(headers)), body, nonceScope: "bench" })
        }
        const verifier = yield* makeVerifier
        settle()
        const t0 = performance.now()
        yield* Effect.forEach(inputs, verifier.verify, { discard: true })
        return performance.now() - t0
      }).pipe(Effect.provide(full))
    )
}

/**
 * The limit: per message, only the HMAC of its signing input (literal, purpose, timestamp, nonce,
 * body) with `createHmac`, hex digest. No header parsing, freshness, nonce check or comparison.
 */
const rawHmac: Runner = async () => {
  const now = new Date().toISOString()
  const nonces = Array.from({ length: batch }, (_, i) => `nonce-${i.toString().padStart(26, "0")}`)
  let sink = 0
  settle()
  const t0 = performance.now()
  for (let i = 0; i < batch; i++) {
    sink += createHmac("sha256", secret).update(signingPrefix("dispatch_response", now, nonces[i]!)).update(body).digest("hex").length
  }
  const elapsed = performance.now() - t0
  if (sink === 0) throw new Error("unreachable")
  return elapsed
}

/**
 * The WebCrypto limit: per message, the signing input as one buffer (prefix bytes and body) and one
 * awaited `subtle.verify` with a key imported once. No header parsing, freshness or nonce check.
 */
const rawWebCrypto: Runner = async () => {
  const subtle = globalThis.crypto.subtle
  const encoder = new TextEncoder()
  const key = await subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"])
  const now = new Date().toISOString()
  const messages = await Promise.all(Array.from({ length: batch }, async (_, i) => {
    const nonce = `nonce-${i.toString().padStart(26, "0")}`
    const prefix = encoder.encode(signingPrefix("dispatch_response", now, nonce))
    const input = new Uint8Array(prefix.length + body.length)
    input.set(prefix)
    input.set(body, prefix.length)
    return { nonce, signature: new Uint8Array(await subtle.sign("HMAC", key, input)) }
  }))
  settle()
  const t0 = performance.now()
  let valid = 0
  for (const { nonce, signature } of messages) {
    const prefix = encoder.encode(signingPrefix("dispatch_response", now, nonce))
    const input = new Uint8Array(prefix.length + body.length)
    input.set(prefix)
    input.set(body, prefix.length)
    if (await subtle.verify("HMAC", key, signature, input)) valid++
  }
  const elapsed = performance.now() - t0
  if (valid !== batch) throw new Error("unreachable")
  return elapsed
}

/** The peer: standardwebhooks verify (header parse, tolerance check, HMAC, base64 compare). */
const standardWebhooks: Runner = async () => {
  const wh = new Webhook(Buffer.from(secret).toString("base64"))
  const payload = new TextDecoder().decode(body)
  const messages = Array.from({ length: batch }, (_, i) => {
    const id = `msg_${i.toString().padStart(28, "0")}`
    const now = new Date()
    const headers = {
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
      "webhook-signature": wh.sign(id, now, payload)
    }
    return JSON.parse(JSON.stringify(headers)) as typeof headers
  })
  settle()
  const t0 = performance.now()
  for (const headers of messages) wh.verify(payload, headers)
  return performance.now() - t0
}

/** Each contender and the limit its share is printed against (itself for the limits and the peer). */
const contenders: ReadonlyArray<readonly [string, Runner, string]> = [
  ["raw node:crypto createHmac (limit)", rawHmac, "raw node:crypto createHmac (limit)"],
  ["raw WebCrypto subtle.verify (limit)", rawWebCrypto, "raw WebCrypto subtle.verify (limit)"],
  ["standardwebhooks verify (peer)", standardWebhooks, "raw node:crypto createHmac (limit)"],
  ["Accord verify, WebCrypto layer", accord(layerWebCrypto), "raw WebCrypto subtle.verify (limit)"],
  ["Accord verify, node:crypto layer", accord(NodeCrypto.layer), "raw node:crypto createHmac (limit)"]
]

const runtime = (): string => {
  const g = globalThis as { Bun?: { version: string }; Deno?: { version: { deno: string } } }
  return g.Bun !== undefined ? `bun ${g.Bun.version}` : g.Deno !== undefined ? `deno ${g.Deno.version.deno}` : `node ${process.version}`
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const main = async () => {
  const samples = new Map<string, Array<number>>(contenders.map(([name]) => [name, []]))
  for (const [, run] of contenders) await run() // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of contenders) samples.get(name)!.push((batch / (await run())) * 1000)
  }
  console.log(`verify throughput, 1 KiB body, ${rounds} interleaved rounds of ${batch}, median ops/s`)
  console.log(`${runtime()}, ${new Date().toISOString()}, gc between rounds: ${typeof (globalThis as { gc?: unknown }).gc === "function"}`)
  for (const [name, , limitName] of contenders) {
    const ops = median(samples.get(name)!)
    const limit = median(samples.get(limitName)!)
    const share = name === limitName ? "" : `  ${((ops / limit) * 100).toFixed(1).padStart(5)}% of ${limitName.replace(" (limit)", "")}`
    console.log(`${name.padEnd(38)} ${Math.round(ops).toString().padStart(9)} ops/s${share}`)
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
