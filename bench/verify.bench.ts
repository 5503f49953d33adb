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
 * that JIT and GC noise does not dominate a round, and each round is cut in `BENCH_CHUNKS` slices
 * (default 20) run in turn across the contenders, with a young-generation collection before each
 * slice, so that a share's two sides always run within milliseconds of each other on this shared
 * machine (`BENCH_ROUNDS` rounds, default 7). Printed per contender: the median ops/s and the
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
import * as WebCrypto from "../adapters/crypto/WebCrypto.ts"
import type { Crypto } from "../core/ports/Crypto.ts"
import * as MemoryNonceStore from "../adapters/memory/NonceStore.ts"
import { importSigningKeys, sign, type SigningKeys, signingPrefix } from "../core/protocol/Signing.ts"
import { makeVerifier, type VerifyInput } from "../core/protocol/Verification.ts"
import { runBuilt } from "./build.ts"

// On Node the bench runs compiled, as the image ships Accord (bench/build.ts); `BENCH_TSX=1` runs it through tsx.
runBuilt("bench/verify.bench.ts", [])

const rounds = Number(process.env.BENCH_ROUNDS ?? 7)
const syncBatch = Number(process.env.BENCH_BATCH ?? 200_000)
const asyncBatch = Number(process.env.BENCH_ASYNC_BATCH ?? 20_000)
const chunks = Number(process.env.BENCH_CHUNKS ?? 20)
const secret = "as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e"
const body = new TextEncoder().encode(
  JSON.stringify({ type: "service.customer_action.ack", pad: "x".repeat(1024 - 47) })
)
if (body.length !== 1024) throw new Error(`body is ${body.length} bytes`)

/**
 * One round of one contender: its `batch` messages are prepared untimed, then verified in
 * `chunks` slices; `run(c)` verifies slice `c` and returns the elapsed ms. The slices of all
 * contenders are interleaved, so a share's two sides run within milliseconds of each other.
 */
interface Round {
  readonly run: (chunk: number) => Promise<number>
}
type Runner = (batch: number) => Promise<Round>

/** Collects the garbage of setting up a round (e.g. signing its messages) before timing it. */
const settle = (): void => (globalThis as { gc?: () => void }).gc?.()
/** Between two slices: a young-generation collection, so one contender's garbage is not collected in another's time. */
const settleYoung = (): void => (globalThis as { gc?: (options?: { type: string }) => void }).gc?.({ type: "minor" })

/** The slice `c` of `n` items in `chunks` slices. */
const slice = (n: number, c: number): readonly [number, number] => [
  Math.floor((n * c) / chunks),
  Math.floor((n * (c + 1)) / chunks)
]

/**
 * Accord: a batch of distinct signed messages (fresh nonces), verified with a fresh verifier and
 * nonce store per round, each slice inside one Effect. The messages are signed once (the largest
 * batch asked for) and each round verifies fresh copies of their headers, as an HTTP parser would
 * hand them over: fresh, flat strings.
 */
const accord = (layer: Layer.Layer<Crypto>, synchronous = false): Runner => {
  const full = Layer.merge(layer, MemoryNonceStore.layer)
  let signed: { readonly keys: SigningKeys; readonly headers: ReadonlyArray<string> } | undefined
  return (batch) =>
    Effect.runPromise(
      Effect.gen(function* () {
        if (signed === undefined || signed.headers.length < batch) {
          const keys = yield* importSigningKeys({
            actionSigning: Redacted.make(secret),
            completion: Redacted.make(secret + "c")
          })
          const headers: Array<string> = []
          for (let i = 0; i < batch; i++)
            headers.push(JSON.stringify(yield* sign({ purpose: "dispatch_response", keys, body })))
          signed = { keys, headers }
        }
        const { headers, keys } = signed
        const slices = Array.from({ length: chunks }, (_, c) => {
          const [from, to] = slice(batch, c)
          const inputs: Array<VerifyInput> = []
          for (let i = from; i < to; i++) {
            inputs.push({
              purpose: "dispatch_response",
              keys,
              headers: JSON.parse(headers[i]!),
              body,
              nonceScope: "bench"
            })
          }
          return inputs
        })
        const verifier = yield* makeVerifier
        const verifySync = verifier.verifySync
        if (synchronous) {
          if (verifySync === undefined) throw new Error("this layer has no synchronous verification")
          return {
            run: async (c: number) => {
              const inputs = slices[c]!
              const t0 = performance.now()
              for (let i = 0; i < inputs.length; i++) {
                const result = verifySync(inputs[i]!)
                if ("_tag" in result) throw new Error(result._tag)
              }
              return performance.now() - t0
            }
          }
        }
        return {
          run: (c: number) =>
            Effect.runPromise(
              Effect.suspend(() => {
                const t0 = performance.now()
                return Effect.map(
                  Effect.forEach(slices[c]!, verifier.verify, { discard: true }),
                  () => performance.now() - t0
                )
              })
            )
        }
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
  return {
    run: async (c) => {
      const [from, to] = slice(batch, c)
      let sink = 0
      const t0 = performance.now()
      for (let i = from; i < to; i++) {
        sink += createHmac("sha256", secret)
          .update(signingPrefix("dispatch_response", now, nonces[i]!))
          .update(body)
          .digest("hex").length
      }
      const elapsed = performance.now() - t0
      if (sink === 0 && to > from) throw new Error("unreachable")
      return elapsed
    }
  }
}

/**
 * The harness alone: the raw HMAC above, each message as one effect of the shape `verify` returns
 * (`Effect.suspend` answering `Effect.succeed`), run by the same `Effect.forEach`. Its share of the
 * raw loop is what the Effect steps around one message cost, before any verification work.
 */
const rawHmacInEffect: Runner = async (batch) => {
  const now = new Date().toISOString()
  const indices = Array.from({ length: batch }, (_, i) => i)
  const nonces = indices.map((i) => `nonce-${i.toString().padStart(26, "0")}`)
  const mac = (i: number) =>
    Effect.suspend(() =>
      Effect.succeed(
        createHmac("sha256", secret)
          .update(signingPrefix("dispatch_response", now, nonces[i]!))
          .update(body)
          .digest("hex")
      )
    )
  return {
    run: (c) =>
      Effect.runPromise(
        Effect.suspend(() => {
          const [from, to] = slice(batch, c)
          const t0 = performance.now()
          return Effect.map(
            Effect.forEach(indices.slice(from, to), mac, { discard: true }),
            () => performance.now() - t0
          )
        })
      )
  }
}

/**
 * The WebCrypto limit: per message, the signing input as one buffer (prefix bytes and body) and one
 * awaited `subtle.verify` with a key imported once. No header parsing, freshness or nonce check.
 */
const rawWebCrypto: Runner = async (batch) => {
  const subtle = globalThis.crypto.subtle
  const encoder = new TextEncoder()
  const key = await subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify"
  ])
  const now = new Date().toISOString()
  const messages = await Promise.all(
    Array.from({ length: batch }, async (_, i) => {
      const nonce = `nonce-${i.toString().padStart(26, "0")}`
      const prefix = encoder.encode(signingPrefix("dispatch_response", now, nonce))
      const input = new Uint8Array(prefix.length + body.length)
      input.set(prefix)
      input.set(body, prefix.length)
      return { nonce, signature: new Uint8Array(await subtle.sign("HMAC", key, input)) }
    })
  )
  return {
    run: async (c) => {
      const [from, to] = slice(batch, c)
      const t0 = performance.now()
      let valid = 0
      for (let i = from; i < to; i++) {
        const { nonce, signature } = messages[i]!
        const prefix = encoder.encode(signingPrefix("dispatch_response", now, nonce))
        const input = new Uint8Array(prefix.length + body.length)
        input.set(prefix)
        input.set(body, prefix.length)
        if (await subtle.verify("HMAC", key, signature, input)) valid++
      }
      const elapsed = performance.now() - t0
      if (valid !== to - from) throw new Error("unreachable")
      return elapsed
    }
  }
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
  return {
    run: async (c) => {
      const [from, to] = slice(batch, c)
      const t0 = performance.now()
      for (let i = from; i < to; i++) wh.verify(payload, messages[i]!)
      return performance.now() - t0
    }
  }
}

/** Each contender, its batch, and the limit its share is printed against (itself for the limits). */
const contenders: ReadonlyArray<readonly [string, Runner, number, string]> = [
  ["raw node:crypto createHmac (limit)", rawHmac, syncBatch, "raw node:crypto createHmac (limit)"],
  ["raw WebCrypto subtle.verify (limit)", rawWebCrypto, asyncBatch, "raw WebCrypto subtle.verify (limit)"],
  ["standardwebhooks verify (peer)", standardWebhooks, asyncBatch, "raw node:crypto createHmac (limit)"],
  ["raw createHmac, each in an effect (harness)", rawHmacInEffect, syncBatch, "raw node:crypto createHmac (limit)"],
  ["Accord verify, WebCrypto layer", accord(WebCrypto.layer), asyncBatch, "raw WebCrypto subtle.verify (limit)"],
  ["Accord verify, node:crypto layer", accord(NodeCrypto.layer), syncBatch, "raw node:crypto createHmac (limit)"],
  [
    "Accord verifySync (no Effect), node:crypto",
    accord(NodeCrypto.layer, true),
    syncBatch,
    "raw node:crypto createHmac (limit)"
  ]
]

const runtime = (): string => {
  const g = globalThis as { Bun?: { version: string }; Deno?: { version: { deno: string } } }
  return g.Bun !== undefined
    ? `bun ${g.Bun.version}`
    : g.Deno !== undefined
      ? `deno ${g.Deno.version.deno}`
      : `node ${process.version}`
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
  const round = async (sizeOf: (batch: number) => number, record: boolean) => {
    const prepared: Array<Round> = []
    for (const [, runner, batch] of contenders) prepared.push(await runner(sizeOf(batch)))
    const elapsed = contenders.map(() => 0)
    const cpuTotal = contenders.map(() => 0)
    settle()
    for (let c = 0; c < chunks; c++) {
      for (let k = 0; k < contenders.length; k++) {
        settleYoung()
        const c0 = cpuMicros()
        elapsed[k]! += await prepared[k]!.run(c)
        cpuTotal[k]! += cpuMicros() - c0
      }
    }
    if (!record) return
    contenders.forEach(([name, , batch], k) => {
      ops.get(name)!.push((sizeOf(batch) / elapsed[k]!) * 1000)
      cpu.get(name)!.push(cpuTotal[k]! / sizeOf(batch))
    })
  }
  await round((batch) => Math.min(batch, 20_000), false) // warm-up
  for (let r = 0; r < rounds; r++) await round((batch) => batch, true)
  console.log(
    `verify throughput, 1 KiB body, ${rounds} rounds of ${syncBatch} (node:crypto) and ${asyncBatch} (WebCrypto, peer) messages, each in ${chunks} slices interleaved across contenders`
  )
  console.log(
    `${runtime()}, ${new Date().toISOString()}, gc between slices: ${typeof (globalThis as { gc?: unknown }).gc === "function"}, ${process.env["BENCH_BUILD_DIR"] === undefined ? "sources" : "built as in the image"}`
  )
  console.log(
    `${"".padEnd(43)} ${"median ops/s".padStart(12)}  ${"spread".padStart(15)}  cpu µs/msg  share of its limit, median of rounds (spread)`
  )
  for (const [name, , , limitName] of contenders) {
    const mine = ops.get(name)!
    const shares = mine.map((x, r) => (x / ops.get(limitName)![r]!) * 100)
    const share =
      name === limitName
        ? ""
        : `  ${median(shares).toFixed(1).padStart(5)}% (${spread(shares, 1)}%) of ${limitName.replace(" (limit)", "")}`
    console.log(
      `${name.padEnd(43)} ${Math.round(median(mine)).toString().padStart(12)}  ${spread(mine, 0).padStart(15)}  ${median(
        cpu.get(name)!
      )
        .toFixed(2)
        .padStart(10)}${share}`
    )
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
