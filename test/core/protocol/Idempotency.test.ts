import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fc from "fast-check"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import {
  checkIdempotencyKey,
  checkIdempotencyKeySync,
  deriveProviderIdempotencyKey,
  deriveProviderIdempotencyKeySync
} from "../../../core/protocol/Idempotency.ts"
import { cryptoLayers } from "../../support/layers.ts"

for (const [name, layer] of cryptoLayers) {
  describe(`idempotency key (${name})`, () => {
    it.effect.prop(
      "is pva_ plus 64 lowercase hex characters, and differs per action request",
      [fc.uuid(), fc.uuid(), fc.uuid()],
      ([workspaceId, a, b]) =>
        Effect.gen(function* () {
          const keyA = yield* deriveProviderIdempotencyKey(workspaceId, a)
          assert.match(keyA, /^pva_[0-9a-f]{64}$/)
          if (a !== b) assert.notStrictEqual(keyA, yield* deriveProviderIdempotencyKey(workspaceId, b))
        }).pipe(Effect.provide(layer)),
      { fastCheck: { numRuns: 30 } }
    )
  })
}

for (const [name, layer] of cryptoLayers) {
  // node:crypto takes the synchronous check (checkIdempotencyKeySync), WebCrypto the effect form: the same answers.
  describe(`customer-side key check: header = body = derived (${name})`, () => {
    const workspaceId = "6f1d2c3b-4a5e-4f60-8a71-92b3c4d5e6f7"
    const actionRequestId = "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8"
    const run = (header: string | undefined, providerIdempotencyKey: string, ws = workspaceId) =>
      Effect.either(
        checkIdempotencyKey({ header, body: { workspaceId: ws, actionRequestId, providerIdempotencyKey } })
      ).pipe(Effect.provide(layer))
    const derived = deriveProviderIdempotencyKey(workspaceId, actionRequestId).pipe(Effect.provide(layer))

    it.effect("all three equal: accepted, returning the key", () =>
      Effect.gen(function* () {
        const key = yield* derived
        const result = yield* run(key, key)
        assert.deepStrictEqual(result, Either.right(key))
      })
    )

    it.effect("missing header", () =>
      Effect.gen(function* () {
        const key = yield* derived
        const result = yield* run(undefined, key)
        assert.isTrue(Either.isLeft(result) && result.left.mismatch === "missing_header")
      })
    )

    it.effect("header differs from body", () =>
      Effect.gen(function* () {
        const key = yield* derived
        const result = yield* run("pva_" + "0".repeat(64), key)
        assert.isTrue(Either.isLeft(result) && result.left.mismatch === "header_differs_from_body")
      })
    )

    it.effect("header and body agree but were not derived from this workspace and action request", () =>
      Effect.gen(function* () {
        const key = yield* derived
        const result = yield* run(key, key, "00000000-0000-4000-8000-000000000000")
        assert.isTrue(Either.isLeft(result) && result.left.mismatch === "body_differs_from_derived")
      })
    )
  })
}

describe("synchronous forms (node:crypto's SHA-256)", () => {
  const sha256 = NodeCrypto.makeSync().sha256Hex

  it.prop(
    "deriveProviderIdempotencyKeySync equals the effect form for any workspace and action request",
    [fc.uuid(), fc.uuid()],
    ([ws, id]) =>
      deriveProviderIdempotencyKeySync(sha256, ws, id) ===
      Effect.runSync(deriveProviderIdempotencyKey(ws, id).pipe(Effect.provide(NodeCrypto.layer)))
  )

  it("checkIdempotencyKeySync answers the key, or the same mismatch as the effect form", () => {
    const ws = "6f1d2c3b-4a5e-4f60-8a71-92b3c4d5e6f7"
    const id = "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8"
    const key = deriveProviderIdempotencyKeySync(sha256, ws, id)
    const check = (header: string | undefined, providerIdempotencyKey: string, workspaceId = ws) =>
      checkIdempotencyKeySync(sha256, { header, body: { workspaceId, actionRequestId: id, providerIdempotencyKey } })
    assert.strictEqual(check(key, key), key)
    const mismatch = (answer: string | { readonly mismatch: string }) =>
      typeof answer === "string" ? answer : answer.mismatch
    assert.strictEqual(mismatch(check(undefined, key)), "missing_header")
    assert.strictEqual(mismatch(check("pva_" + "0".repeat(64), key)), "header_differs_from_body")
    assert.strictEqual(mismatch(check(key, key, "00000000-0000-4000-8000-000000000000")), "body_differs_from_derived")
  })
})
