/**
 * Per-runtime smoke check, run by `test/runtimes.test.ts` under Node, Bun and Deno: the core and
 * both `Crypto` layers load, every signature vector verifies, a tampered copy is rejected, and a
 * fresh sign/verify round-trip passes; it names the outbound transport the runtime gets. Prints one JSON line; exits non-zero on any failure.
 */
import * as Effect from "effect/Effect"
import { commitmentHash } from "../../../core/approval/Commitment.ts"
import * as commitmentVectors from "../../core/approval/vectors.ts"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as Transport from "../../../adapters/transport/Transport.ts"
import * as WebCrypto from "../../../adapters/crypto/WebCrypto.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { encodeBody, importSigningKeys, sign } from "../../../core/protocol/Signing.ts"
import { parseTimestamp } from "../../../core/protocol/Timestamp.ts"
import { verify } from "../../../core/protocol/Verification.ts"

interface Vector {
  secret: "actionSigning" | "completion"
  purpose: "dispatch_request"
  timestamp: string
  nonce: string
  rawBody: string
  signature: string
}

const text = await (await import("node:fs/promises")).readFile(
  new URL("../../fixtures/conformance/vectors.json", import.meta.url),
  "utf8"
)
const vectors = JSON.parse(text) as { secrets: Record<string, string>; signatures: Array<Vector> }

const check = (cryptoLayer: Layer.Layer<Crypto>) =>
  Effect.gen(function* () {
    const keys = yield* importSigningKeys({
      actionSigning: Redacted.make(vectors.secrets.actionSigning!),
      completion: Redacted.make(vectors.secrets.completion!)
    })
    let verified = 0
    for (const [i, v] of vectors.signatures.entries()) {
      yield* TestClock.setTime(parseTimestamp(v.timestamp)!)
      const headers = {
        "x-service-customer-action-version": "1",
        "x-service-customer-action-timestamp": v.timestamp,
        "x-service-customer-action-nonce": v.nonce,
        "x-service-customer-action-signature": v.signature
      }
      const body = new TextEncoder().encode(v.rawBody)
      yield* verify({ purpose: v.purpose, keys, headers, body, nonceScope: `v${i}` })
      const tampered = Uint8Array.from(body)
      tampered[0]! ^= 1
      const rejected = yield* Effect.either(
        verify({ purpose: v.purpose, keys, headers, body: tampered, nonceScope: `t${i}` })
      )
      if (Either.isRight(rejected)) return yield* Effect.die(new Error(`tampered ${v.purpose} vector verified`))
      verified++
    }
    const body = encodeBody({ runtime: "smoke" })
    const headers = yield* sign({ purpose: "completion", keys, body })
    yield* verify({ purpose: "completion", keys, headers, body, nonceScope: "roundtrip" })
    return verified
  }).pipe(Effect.provide(Layer.mergeAll(cryptoLayer, MemoryNonceStore.layer, TestContext.TestContext)))

const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node"
const result = await Effect.runPromise(
  Effect.all({ webcrypto: check(WebCrypto.layer), nodeCrypto: check(NodeCrypto.layer) })
)
// The approval commitment's canonical encoding gives the same hash here as everywhere.
const commitments = await Effect.runPromise(
  Effect.all({
    webcrypto: Effect.provide(commitmentHash(commitmentVectors.input), WebCrypto.layer),
    nodeCrypto: Effect.provide(commitmentHash(commitmentVectors.input), NodeCrypto.layer)
  })
)
const commitmentOk =
  commitments.webcrypto === commitmentVectors.vectors.commitment &&
  commitments.nodeCrypto === commitmentVectors.vectors.commitment
// The outbound transport this runtime gets: undici on Node, node:http on Bun and Deno.
console.log(
  JSON.stringify({ runtime, ok: true, vectorsVerified: result, commitmentOk, transport: Transport.implementation() })
)
