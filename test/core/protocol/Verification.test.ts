import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as fc from "fast-check"
import { ExactStruct } from "../../../core/protocol/messages/Common.ts"
import * as NonceStore from "../../../core/ports/NonceStore.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { encodeBody, importSigningKeys, type Purpose, purposes, sign } from "../../../core/protocol/Signing.ts"
import {
  decodeBody,
  decodeBodyNow,
  makeVerifier,
  verify,
  verifyAndDecode,
  type VerifyInput
} from "../../../core/protocol/Verification.ts"
import { cryptoLayers } from "../../support/layers.ts"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { Crypto } from "../../../core/ports/Crypto.ts"

const secretArb = fc.string({ minLength: 32, maxLength: 80 })
const purposeArb = fc.constantFrom(...purposes)
const start = Date.UTC(2026, 10, 22, 10, 15, 30)

const keysFor = (actionSigning: string, completion: string) =>
  importSigningKeys({ actionSigning: Redacted.make(actionSigning), completion: Redacted.make(completion) })

const defaultKeys = keysFor(
  "as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e",
  "cs_8e6c4a2f0d1b3e5c7a9f1d3b5e7c9a1f3d5b7e9c"
)

const tagOf = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.either(effect), (result) => (Either.isLeft(result) ? result.left._tag : "ok"))

/** Signs `body` now, returning a `verify` input that tests then tamper with. */
const signed = (purpose: Purpose, body: Uint8Array) =>
  Effect.gen(function* () {
    const keys = yield* defaultKeys
    const headers = yield* sign({ purpose, keys, body })
    return {
      purpose,
      keys,
      headers: { ...headers } as Record<string, string>,
      body,
      nonceScope: "test"
    } satisfies VerifyInput
  })

const Greeting = ExactStruct({ type: Schema.Literal("greeting"), n: Schema.Int })

for (const [name, cryptoLayer] of cryptoLayers) {
  const layer = Layer.merge(cryptoLayer, MemoryNonceStore.layer)
  const run = <A, E>(
    effect: Effect.Effect<A, E, NonceStore.NonceStore | import("../../../core/ports/Crypto.ts").Crypto>
  ) => Effect.provide(effect, layer)

  describe(`verification (${name})`, () => {
    it.effect.prop(
      "sign then verify round-trips for arbitrary bodies, purposes and secrets",
      [fc.uint8Array({ maxLength: 2048 }), purposeArb, secretArb, secretArb],
      ([body, purpose, actionSigning, completion]) =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const keys = yield* keysFor(actionSigning, completion)
            const headers = yield* sign({ purpose, keys, body })
            const verified = yield* verify({ purpose, keys, headers, body, nonceScope: "p" })
            assert.strictEqual(verified.nonce, headers["x-service-customer-action-nonce"])
          })
        ),
      { fastCheck: { numRuns: 60 } }
    )

    it.effect(
      "verifyAny: the first candidate pair that verifies is named, none is InvalidSignature, the nonce is recorded once",
      () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const verifier = yield* makeVerifier
            const other = yield* keysFor(
              "as_other_0123456789abcdef0123456789abcdef",
              "cs_other_0123456789abcdef0123456789abcdef"
            )
            const input = yield* signed("dispatch_request", encodeBody({ type: "greeting", n: 1 }))
            const found = yield* verifier.verifyAny({ ...input, keys: [other, input.keys, input.keys] })
            assert.strictEqual(found.keyIndex, 1)
            assert.strictEqual(found.headers.nonce, input.headers["x-service-customer-action-nonce"])
            assert.strictEqual(yield* tagOf(verifier.verifyAny({ ...input, keys: [input.keys] })), "ReplayedNonce")
            const fresh = yield* signed("dispatch_request", encodeBody({ type: "greeting", n: 2 }))
            assert.strictEqual(yield* tagOf(verifier.verifyAny({ ...fresh, keys: [other] })), "InvalidSignature")
            assert.strictEqual(yield* tagOf(verifier.verifyAny({ ...fresh, keys: [] })), "InvalidSignature")
            // A failed attempt recorded nothing: the genuine pair still verifies the same message.
            assert.strictEqual((yield* verifier.verifyAny({ ...fresh, keys: [other, fresh.keys] })).keyIndex, 1)
          })
        )
    )

    it.effect.prop(
      "the other secret never verifies a message (each purpose has exactly one secret)",
      [fc.uint8Array({ maxLength: 256 }), purposeArb],
      ([body, purpose]) =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const keys = yield* defaultKeys
            const swapped = { actionSigning: keys.completion, completion: keys.actionSigning }
            const headers = yield* sign({ purpose, keys, body })
            assert.strictEqual(
              yield* tagOf(verify({ purpose, keys: swapped, headers, body, nonceScope: "p" })),
              "InvalidSignature"
            )
          })
        ),
      { fastCheck: { numRuns: 30 } }
    )

    const flipChar = (s: string, index: number, delta: number): string => {
      const i = index % s.length
      const code = 0x21 + ((s.charCodeAt(i) - 0x21 + delta) % 94)
      return s.slice(0, i) + String.fromCharCode(code) + s.slice(i + 1)
    }

    it.effect.prop(
      "flipping any single byte of the body is rejected",
      [fc.uint8Array({ minLength: 1, maxLength: 1024 }), purposeArb, fc.nat(), fc.integer({ min: 1, max: 255 })],
      ([body, purpose, index, mask]) =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed(purpose, body)
            const tampered = Uint8Array.from(body)
            tampered[index % body.length]! ^= mask
            assert.strictEqual(yield* tagOf(verify({ ...input, body: tampered })), "InvalidSignature")
          })
        ),
      { fastCheck: { numRuns: 60 } }
    )

    for (const header of ["timestamp", "nonce", "signature"] as const) {
      it.effect.prop(
        `flipping any single character of the ${header} is rejected`,
        [fc.uint8Array({ maxLength: 256 }), purposeArb, fc.nat(), fc.integer({ min: 1, max: 93 })],
        ([body, purpose, index, delta]) =>
          run(
            Effect.gen(function* () {
              yield* TestClock.setTime(start)
              const input = yield* signed(purpose, body)
              const name = `x-service-customer-action-${header}`
              input.headers[name] = flipChar(input.headers[name]!, index, delta)
              const tag = yield* tagOf(verify(input))
              assert.include(
                ["InvalidSignature", "InvalidTimestamp", "StaleTimestamp", "FutureTimestamp", "InvalidNonce"],
                tag
              )
            })
          ),
        { fastCheck: { numRuns: 60 } }
      )
    }

    it.effect.prop(
      "verifying under any other purpose is rejected",
      [fc.uint8Array({ maxLength: 256 }), purposeArb, purposeArb],
      ([body, purpose, other]) =>
        run(
          Effect.gen(function* () {
            fc.pre(purpose !== other)
            yield* TestClock.setTime(start)
            const input = yield* signed(purpose, body)
            assert.strictEqual(yield* tagOf(verify({ ...input, purpose: other })), "InvalidSignature")
          })
        ),
      { fastCheck: { numRuns: 40 } }
    )

    describe("clock skew boundary (300 s inclusive, both directions)", () => {
      const atOffset = (offsetMillis: number) =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", encodeBody({ a: 1 }))
            yield* TestClock.setTime(start + offsetMillis)
            return yield* tagOf(verify(input))
          })
        )
      it.effect("exactly 300 s old passes", () => Effect.map(atOffset(300_000), (tag) => assert.strictEqual(tag, "ok")))
      it.effect("300.001 s old is stale", () =>
        Effect.map(atOffset(300_001), (tag) => assert.strictEqual(tag, "StaleTimestamp"))
      )
      it.effect("exactly 300 s ahead passes", () =>
        Effect.map(atOffset(-300_000), (tag) => assert.strictEqual(tag, "ok"))
      )
      it.effect("300.001 s ahead is in the future", () =>
        Effect.map(atOffset(-300_001), (tag) => assert.strictEqual(tag, "FutureTimestamp"))
      )
    })

    describe("replay", () => {
      it.effect("a replayed nonce is rejected for as long as the timestamp is fresh, then the message is stale", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("completion", encodeBody({ a: 1 }))
            assert.strictEqual(yield* tagOf(verify(input)), "ok")
            assert.strictEqual(yield* tagOf(verify(input)), "ReplayedNonce")
            yield* TestClock.setTime(start + 300_000)
            assert.strictEqual(yield* tagOf(verify(input)), "ReplayedNonce")
            yield* TestClock.setTime(start + NonceStore.nonceRetentionMillis + 1)
            assert.strictEqual(yield* tagOf(verify(input)), "StaleTimestamp")
          })
        )
      )

      it.effect("the same nonce with a fresh signature and timestamp is still a replay", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const keys = yield* defaultKeys
            const body = encodeBody({ a: 1 })
            const first = yield* sign({ purpose: "dispatch_request", keys, body, nonce: "fixed-nonce-0123456789" })
            assert.strictEqual(
              yield* tagOf(verify({ purpose: "dispatch_request", keys, headers: first, body, nonceScope: "s" })),
              "ok"
            )
            yield* TestClock.adjust("1 second")
            const second = yield* sign({ purpose: "dispatch_request", keys, body, nonce: "fixed-nonce-0123456789" })
            assert.strictEqual(
              yield* tagOf(verify({ purpose: "dispatch_request", keys, headers: second, body, nonceScope: "s" })),
              "ReplayedNonce"
            )
          })
        )
      )

      it.effect("a forged message does not burn the nonce of a genuine one", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", encodeBody({ a: 1 }))
            const forged = { ...input, body: encodeBody({ a: 2 }) }
            assert.strictEqual(yield* tagOf(verify(forged)), "InvalidSignature")
            assert.strictEqual(yield* tagOf(verify(input)), "ok")
          })
        )
      )

      it.effect("nonce scopes are independent", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", encodeBody({ a: 1 }))
            assert.strictEqual(yield* tagOf(verify(input)), "ok")
            assert.strictEqual(yield* tagOf(verify({ ...input, nonceScope: "other" })), "ok")
          })
        )
      )
    })

    describe("one test per rejection reason", () => {
      const reject = (mutate: (h: Record<string, string>) => void, expected: string, body = encodeBody({ a: 1 })) =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", body)
            mutate(input.headers)
            assert.strictEqual(yield* tagOf(verify(input)), expected)
          })
        )
      const h = (name: string) => `x-service-customer-action-${name}`

      it.effect("missing version header", () => reject((x) => delete x[h("version")], "UnsupportedVersion"))
      it.effect("version 2", () => reject((x) => (x[h("version")] = "2"), "UnsupportedVersion"))
      it.effect("version 1.0", () => reject((x) => (x[h("version")] = "1.0"), "UnsupportedVersion"))
      it.effect("missing timestamp", () => reject((x) => delete x[h("timestamp")], "InvalidTimestamp"))
      it.effect("unix-seconds timestamp", () =>
        reject((x) => (x[h("timestamp")] = String(start / 1000)), "InvalidTimestamp")
      )
      it.effect("timestamp without a zone", () =>
        reject((x) => (x[h("timestamp")] = "2026-11-22T10:15:30.000"), "InvalidTimestamp")
      )
      it.effect("impossible calendar date", () =>
        reject((x) => (x[h("timestamp")] = "2026-02-30T10:15:30.000Z"), "InvalidTimestamp")
      )
      it.effect("stale timestamp", () =>
        reject((x) => (x[h("timestamp")] = new Date(start - 300_001).toISOString()), "StaleTimestamp")
      )
      it.effect("future timestamp", () =>
        reject((x) => (x[h("timestamp")] = new Date(start + 300_001).toISOString()), "FutureTimestamp")
      )
      it.effect("missing nonce", () => reject((x) => delete x[h("nonce")], "InvalidNonce"))
      it.effect("15-character nonce", () => reject((x) => (x[h("nonce")] = "a".repeat(15)), "InvalidNonce"))
      it.effect("161-character nonce", () => reject((x) => (x[h("nonce")] = "a".repeat(161)), "InvalidNonce"))
      it.effect("nonce with a space", () => reject((x) => (x[h("nonce")] = "abcdefgh ijklmnop"), "InvalidNonce"))
      it.effect("missing signature", () => reject((x) => delete x[h("signature")], "InvalidSignature"))
      it.effect("signature without v1=", () =>
        reject((x) => (x[h("signature")] = x[h("signature")]!.slice(3)), "InvalidSignature")
      )
      it.effect("uppercase signature", () =>
        reject((x) => (x[h("signature")] = "v1=" + x[h("signature")]!.slice(3).toUpperCase()), "InvalidSignature")
      )
      it.effect("truncated signature", () =>
        reject((x) => (x[h("signature")] = x[h("signature")]!.slice(0, -2)), "InvalidSignature")
      )
      it.effect("signature of another message", () =>
        reject((x) => (x[h("signature")] = "v1=" + "0".repeat(64)), "InvalidSignature")
      )

      it.effect("an authentic body that is not JSON is malformed", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", new TextEncoder().encode("{not json"))
            assert.strictEqual(yield* tagOf(verifyAndDecode(Greeting, input)), "MalformedBody")
          })
        )
      )
      it.effect("an authentic body with a byte-order mark is malformed", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed(
              "dispatch_request",
              new Uint8Array([0xef, 0xbb, 0xbf, ...encodeBody({ type: "greeting", n: 1 })])
            )
            assert.strictEqual(yield* tagOf(verifyAndDecode(Greeting, input)), "MalformedBody")
          })
        )
      )
      it.effect("an authentic body that is not UTF-8 is malformed", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", new Uint8Array([0x22, 0xff, 0x22]))
            assert.strictEqual(yield* tagOf(verifyAndDecode(Greeting, input)), "MalformedBody")
          })
        )
      )
      it.effect("an authentic body with an unknown field has the wrong shape, naming the field", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", encodeBody({ type: "greeting", n: 1, extra: "x" }))
            const result = yield* Effect.either(verifyAndDecode(Greeting, input))
            assert.isTrue(Either.isLeft(result) && result.left._tag === "InvalidShape")
            if (Either.isLeft(result) && result.left._tag === "InvalidShape") {
              assert.deepStrictEqual(
                result.left.issues.map((i) => i.path),
                ["extra"]
              )
            }
          })
        )
      )
      it.effect("an authentic, well-formed body decodes", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", encodeBody({ type: "greeting", n: 7 }))
            const { body } = yield* verifyAndDecode(Greeting, input)
            assert.deepStrictEqual(body, { type: "greeting", n: 7 })
          })
        )
      )
      it.effect("the body is not parsed before the signature is checked", () =>
        run(
          Effect.gen(function* () {
            yield* TestClock.setTime(start)
            const input = yield* signed("dispatch_request", encodeBody({ type: "greeting", n: 7 }))
            const forged = { ...input, body: new TextEncoder().encode("{not json") }
            assert.strictEqual(yield* tagOf(verifyAndDecode(Greeting, forged)), "InvalidSignature")
          })
        )
      )
    })

    it.effect("accepts a Fetch Headers object as well as a record", () =>
      run(
        Effect.gen(function* () {
          yield* TestClock.setTime(start)
          const input = yield* signed("handshake_response", encodeBody({ a: 1 }))
          const headers = new Headers(input.headers)
          assert.strictEqual(yield* tagOf(verify({ ...input, headers })), "ok")
        })
      )
    )
  })
}

describe("verifySync (node:crypto and the memory nonce store)", () => {
  const sync = Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer)
  // The same node:crypto HMAC without `CryptoSync`: the verifier's steps answer with effects.
  const general = Layer.merge(
    Layer.sync(Crypto, () => NodeCrypto.make()),
    MemoryNonceStore.layer
  )

  it.effect("is offered only when both the HMAC and the nonce store are synchronous", () =>
    Effect.gen(function* () {
      assert.isFunction((yield* Effect.provide(makeVerifier, sync)).verifySync)
      assert.isUndefined((yield* Effect.provide(makeVerifier, general)).verifySync)
      const webCrypto = Layer.merge(cryptoLayers[0]![1], MemoryNonceStore.layer)
      assert.isUndefined((yield* Effect.provide(makeVerifier, webCrypto)).verifySync)
    })
  )

  const headerNames = ["version", "timestamp", "nonce", "signature"] as const
  it.effect.prop(
    "returns what the general path gives, success or failure, for any tampered header, and records the nonce the same way",
    [
      fc.uint8Array({ maxLength: 256 }),
      purposeArb,
      fc.constantFrom(...headerNames),
      fc.option(fc.oneof(fc.string({ maxLength: 80 }), fc.constantFrom("1", "v1=" + "a".repeat(64)))),
      fc.boolean(),
      fc.integer({ min: -400_000, max: 400_000 })
    ],
    ([body, purpose, header, value, tamper, skew]) =>
      Effect.gen(function* () {
        yield* TestClock.setTime(start)
        const input = yield* Effect.provide(signed(purpose, body), sync)
        if (tamper) {
          const name = `x-service-customer-action-${header}`
          if (value === null) delete input.headers[name]
          else input.headers[name] = value
        }
        yield* TestClock.setTime(start + skew)
        const fast = yield* Effect.provide(makeVerifier, sync)
        const slow = yield* Effect.provide(makeVerifier, general)
        const outcome = (result: unknown) => JSON.stringify(result)
        const first = fast.verifySync!(input)
        assert.strictEqual(
          outcome(first),
          outcome(yield* Effect.either(slow.verify(input)).pipe(Effect.map(Either.merge)))
        )
        // A second time: a replay on both, or the same failure.
        const again = fast.verifySync!(input)
        assert.strictEqual(
          outcome(again),
          outcome(yield* Effect.either(slow.verify(input)).pipe(Effect.map(Either.merge)))
        )
        if (!("_tag" in first)) assert.strictEqual((again as { _tag: string })._tag, "ReplayedNonce")
      }),
    { fastCheck: { numRuns: 100 } }
  )
})

describe("decodeBody and decodeBodyNow", () => {
  const Message = ExactStruct({ type: Schema.Literal("m"), n: Schema.Number })
  const bytes = (text: string) => new TextEncoder().encode(text)

  it.effect("decodeBody: MalformedBody for bytes that are not JSON, the value for a message", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* tagOf(decodeBody(Message, bytes("{not json"))), "MalformedBody")
      assert.deepStrictEqual(yield* decodeBody(Message, bytes(`{"type":"m","n":1}`)), { type: "m", n: 1 })
    })
  )

  it.effect(
    "decodeBodyNow answers the same: the value, MalformedBody, InvalidShape for an unknown field or a wrong type",
    () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* decodeBodyNow(Message, bytes(`{"type":"m","n":1}`)), { type: "m", n: 1 })
        assert.strictEqual(yield* tagOf(decodeBodyNow(Message, bytes("[1,"))), "MalformedBody")
        assert.strictEqual(
          yield* tagOf(decodeBodyNow(Message, bytes(`{"type":"m","n":1,"extra":true}`))),
          "InvalidShape"
        )
        assert.strictEqual(yield* tagOf(decodeBodyNow(Message, bytes(`{"type":"m","n":"1"}`))), "InvalidShape")
      })
  )
})
