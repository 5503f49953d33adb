import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import { connectedAccountReferenceHash } from "../../../core/protocol/Digest.ts"
import { deriveProviderIdempotencyKey, deriveProviderIdempotencyKeySync } from "../../../core/protocol/Idempotency.ts"
import { CryptoSync } from "../../../core/ports/Crypto.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import {
  computeSignature,
  importSigningKeys,
  makeSigner,
  makeSignerSync,
  secretFor
} from "../../../core/protocol/Signing.ts"
import { parseTimestamp } from "../../../core/protocol/Timestamp.ts"
import { verify } from "../../../core/protocol/Verification.ts"
import { cryptoLayers } from "../../support/layers.ts"
import { vectors } from "../../support/vectors.ts"

const encoder = new TextEncoder()
const keys = importSigningKeys({
  actionSigning: Redacted.make(vectors.secrets.actionSigning),
  completion: Redacted.make(vectors.secrets.completion)
})

const headersOf = (v: { timestamp: string; nonce: string; signature: string }) => ({
  "x-service-customer-action-version": "1",
  "x-service-customer-action-timestamp": v.timestamp,
  "x-service-customer-action-nonce": v.nonce,
  "x-service-customer-action-signature": v.signature
})

for (const [name, cryptoLayer] of cryptoLayers) {
  const layer = Layer.merge(cryptoLayer, MemoryNonceStore.layer)

  describe(`conformance vectors (${name})`, () => {
    it("the vector file has cases of every kind", () => {
      assert.isAbove(vectors.signatures.length, 0)
      assert.isAbove(vectors.mustReject.length, 0)
      assert.isAbove(vectors.idempotencyKeys.length, 0)
      assert.isAbove(vectors.connectedAccountReferenceHashes.length, 0)
    })

    for (const v of vectors.signatures) {
      it.effect(`signature ${v.name}: computed value matches and verifies`, () =>
        Effect.gen(function* () {
          assert.strictEqual(secretFor(v.purpose), v.secret, "the purpose selects the vector's secret")
          const k = yield* keys
          const body = encoder.encode(v.rawBody)
          assert.strictEqual(yield* computeSignature(k[v.secret], v.purpose, v.timestamp, v.nonce, body), v.signature)
          yield* TestClock.setTime(parseTimestamp(v.timestamp)!)
          // The signer, its effect form and (node:crypto) its synchronous form, at the vector's time and nonce.
          const signer = yield* makeSigner
          const signing = { purpose: v.purpose, keys: k, body, nonce: v.nonce }
          assert.strictEqual((yield* signer.sign(signing))["x-service-customer-action-signature"], v.signature)
          const cryptoSync = yield* Effect.serviceOption(CryptoSync)
          if (Option.isSome(cryptoSync)) {
            const signerSync = yield* Effect.provideService(makeSignerSync, CryptoSync, cryptoSync.value)
            const headers = signerSync.sign(signing)
            assert.strictEqual(headers["x-service-customer-action-signature"], v.signature)
            assert.strictEqual(headers["x-service-customer-action-timestamp"], v.timestamp)
          }
          assert.strictEqual(
            Option.isSome(cryptoSync),
            name === "node:crypto",
            "node:crypto signs synchronously, WebCrypto does not"
          )
          const verified = yield* verify({ purpose: v.purpose, keys: k, headers: headersOf(v), body, nonceScope: "t" })
          assert.strictEqual(verified.nonce, v.nonce)
        }).pipe(Effect.provide(layer))
      )
    }

    for (const v of vectors.mustReject) {
      it.effect(`must reject: ${v.why}`, () =>
        Effect.gen(function* () {
          const k = yield* keys
          yield* TestClock.setTime(parseTimestamp(v.timestamp)!)
          const result = yield* Effect.either(
            verify({
              purpose: v.purpose,
              keys: k,
              headers: headersOf(v),
              body: encoder.encode(v.rawBody),
              nonceScope: "t"
            })
          )
          assert.isTrue(Either.isLeft(result))
          if (Either.isLeft(result)) assert.strictEqual(result.left._tag, "InvalidSignature")
        }).pipe(Effect.provide(layer))
      )
    }

    for (const v of vectors.idempotencyKeys) {
      it.effect(`idempotency key for ${v.workspaceId} / ${v.actionRequestId}`, () =>
        Effect.gen(function* () {
          assert.strictEqual(yield* deriveProviderIdempotencyKey(v.workspaceId, v.actionRequestId), v.key)
          // The synchronous form, where the layer has a synchronous SHA-256.
          const sync = yield* Effect.serviceOption(CryptoSync)
          if (Option.isSome(sync))
            assert.strictEqual(
              deriveProviderIdempotencyKeySync(sync.value.sha256Hex, v.workspaceId, v.actionRequestId),
              v.key
            )
        }).pipe(Effect.provide(layer))
      )
    }

    for (const v of vectors.connectedAccountReferenceHashes) {
      it.effect(`connected account reference hash for ${v.accountId}`, () =>
        Effect.gen(function* () {
          assert.strictEqual(JSON.stringify(v.accountId), v.jsonSerialization)
          assert.strictEqual(yield* connectedAccountReferenceHash(v.accountId), v.hash)
        }).pipe(Effect.provide(layer))
      )
    }
  })
}
