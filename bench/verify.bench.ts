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
 * Rounds are long (`BENCH_BATCH`, default 200,000 messages, about a second, for the node:crypto
 * contenders; `BENCH_ASYNC_BATCH`, default 20,000, for the slower WebCrypto ones and the peer), so
 * that JIT and GC noise does not dominate a round, and interleaved (`BENCH_ROUNDS`, default 7), so
 * that a share's two sides always run side by side. Printed per contender: the median ops/s and the
 * spread over the rounds, CPU µs per message (all threads of the process), and a share of its limit
 * as the median of the per-round shares (each round's contender against the same round's limit),
 * with their spread: on a shared machine that pairing is steadier than a ratio of two medians.
 */
import { createHmac } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Webhook } from "standardwebhooks"
import * as NodeCrypto from "../adapters/crypto/NodeCrypto.ts"
import { type Crypto, layerWebCrypto } from "../core/ports/Crypto.ts"
import * as NonceStore from "../core/ports/NonceStore.ts"
import { importSigningKeys, sign, type SigningKeys, signingPrefix } from "../core/protocol/Signing.ts"
import { makeVerifier, type VerifyInput } from "../core/protocol/Verification.ts"

const rounds = Number(process.env.BENCH_ROUNDS ?? 7)
const syncBatch = Number(process.env.BENCH_BATCH ?? 200_000)
const asyncBatch = Number(process.env.BENCH_ASYNC_BATCH ?? 20_000)
const secret = "as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e"
const body = new TextEncoder().encode(JSON.stringify({ type: "service.customer_action.ack", pad: "x".repeat(1024 - 47) }))
if (body.length !== 1024) throw new Error(`body is ${body.length} bytes`)

/** One round: `batch` verifications; returns the elapsed ms. */
type Runner = (batch: number) => Promise<number>

/** Collects the garbage of setting up a round (e.g. signing its messages) before timing it. */
const settle = (): void => (globalThis as { gc?: () => void }).gc?.()

/**
 * Accord: a batch of distinct signed messages (fresh nonces), verified inside one Effect with a fresh
 * verifier and nonce store per round. The messages are signed once (the first round's batch) and
 * each round verifies fresh copies of their headers, as an HTTP parser would hand them over: fresh,
 * flat strings.
 */
const accord = (layer: Layer.Layer<Crypto>): Runner => {
  const full = Layer.merge(layer, NonceStore.layerMemory)
  let signed: { readonly keys: SigningKeys; readonly headers: ReadonlyArray<string> } | undefined
  return (batch) =>
    Effect.runPromise(
      Effect.gen(function*() {
        if (signed === undefined || signed.headers.length < batch) {
          const keys = yield* importSigningKeys({ actionSigning: Redacted.make(secret), completion: Redacted.make(secret + "c") })
          const headers: Array<string> = []
          for (let i = 0; i < batch; i++) headers.push(JSON.stringify(yield* sign({ purpose: "dispatch_response", keys, body })))
          signed = { keys, headers }
        }
        const { headers, keys } = signed
        const inputs: Array<VerifyInput> = []
        for (let i = 0; i < batch; i++) {
          inputs.push({ purpose: "dispatch_response", keys, headers: JSON.parse(headers[i]!), body, nonceScope: "bench" })
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
const rawHmac: Runner = async (batch) => {
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
const rawWebCrypto: Runner = async (batch) => {
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
const standardWebhooks: Runner = async (batch) => {
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

/** Each contender, its batch, and the limit its share is printed against (itself for the limits). */
const contenders: ReadonlyArray<readonly [string, Runner, number, string]> = [
  ["raw node:crypto createHmac (limit)", rawHmac, syncBatch, "raw node:crypto createHmac (limit)"],
  ["raw WebCrypto subtle.verify (limit)", rawWebCrypto, asyncBatch, "raw WebCrypto subtle.verify (limit)"],
  ["standardwebhooks verify (peer)", standardWebhooks, asyncBatch, "raw node:crypto createHmac (limit)"],
  ["Accord verify, WebCrypto layer", accord(layerWebCrypto), asyncBatch, "raw WebCrypto subtle.verify (limit)"],
  ["Accord verify, node:crypto layer", accord(NodeCrypto.layer), syncBatch, "raw node:crypto createHmac (limit)"]
]

const runtime = (): string => {
  const g = globalThis as { Bun?: { version: string }; Deno?: { version: { deno: string } } }
  return g.Bun !== undefined ? `bun ${g.Bun.version}` : g.Deno !== undefined ? `deno ${g.Deno.version.deno}` : `node ${process.version}`
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const spread = (xs: ReadonlyArray<number>, digits: number) =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`

/** CPU time of the whole process (every thread), in µs, where the runtime reports it. */
const cpuMicros = (): number => {
  const usage = typeof process.cpuUsage === "function" ? process.cpuUsage() : undefined
  return usage === undefined ? Number.NaN : usage.user + usage.system
}

const main = async () => {
  const ops = new Map<string, Array<number>>(contenders.map(([name]) => [name, []]))
  const cpu = new Map<string, Array<number>>(contenders.map(([name]) => [name, []]))
  for (const [, run, batch] of contenders) await run(Math.min(batch, 20_000)) // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [name, run, batch] of contenders) {
      const c0 = cpuMicros()
      const elapsed = await run(batch)
      cpu.get(name)!.push((cpuMicros() - c0) / batch)
      ops.get(name)!.push((batch / elapsed) * 1000)
    }
  }
  console.log(
    `verify throughput, 1 KiB body, ${rounds} interleaved rounds of ${syncBatch} (node:crypto) and ${asyncBatch} (WebCrypto, peer) messages`
  )
  console.log(`${runtime()}, ${new Date().toISOString()}, gc between rounds: ${typeof (globalThis as { gc?: unknown }).gc === "function"}`)
  console.log(`${"".padEnd(38)} ${"median ops/s".padStart(12)}  ${"spread".padStart(15)}  cpu µs/msg  share of its limit, median of rounds (spread)`)
  for (const [name, , , limitName] of contenders) {
    const mine = ops.get(name)!
    const shares = mine.map((x, r) => (x / ops.get(limitName)![r]!) * 100)
    const share = name === limitName
      ? ""
      : `  ${median(shares).toFixed(1).padStart(5)}% (${spread(shares, 1)}%) of ${limitName.replace(" (limit)", "")}`
    console.log(
      `${name.padEnd(38)} ${Math.round(median(mine)).toString().padStart(12)}  ${spread(mine, 0).padStart(15)}  ${
        median(cpu.get(name)!).toFixed(2).padStart(10)
      }${share}`
    )
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
