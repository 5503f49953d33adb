import { createHash, createHmac } from "node:crypto"
import { inspect } from "node:util"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as WebCrypto from "../../../adapters/crypto/WebCrypto.ts"
import { makeSignerSync } from "../../../core/protocol/Signing.ts"

type Subtle = typeof globalThis.crypto.subtle

/** The platform's `subtle`, counting key imports and keeping every buffer it was handed. */
const countingSubtle = () => {
  const subtle = globalThis.crypto.subtle
  const seen = { imports: 0, buffers: [] as Array<Uint8Array> }
  const counting = {
    importKey: (...args: Parameters<Subtle["importKey"]>) => {
      seen.imports++
      seen.buffers.push(args[1] as Uint8Array)
      return subtle.importKey(...args)
    },
    digest: (algorithm: Parameters<Subtle["digest"]>[0], data: Uint8Array) => {
      seen.buffers.push(data)
      return subtle.digest(algorithm, data)
    },
    sign: subtle.sign.bind(subtle),
    verify: subtle.verify.bind(subtle)
  } as unknown as Subtle
  return { seen, crypto: WebCrypto.make(counting, (bytes) => globalThis.crypto.getRandomValues(bytes)) }
}

/** `node:crypto`'s synchronous operations (`CryptoSync`); they take keys any of its layers imported. */
const nodeSync = NodeCrypto.makeSync()

const secret = (i: number) => Redacted.make(`whsec_${i.toString().padStart(32, "0")}`)
const message = [
  "service-customer-action-v1\ncompletion\n2026-01-01T00:00:00.000Z\nnonce-0123456789abcdef\n",
  new Uint8Array([123, 125])
]

describe("WebCrypto layer: imported keys", () => {
  it.effect("a secret is imported once: the same key again, and its MACs equal node:crypto's", () =>
    Effect.gen(function* () {
      const { crypto, seen } = countingSubtle()
      const first = yield* crypto.importHmacKey(secret(1))
      const again = yield* crypto.importHmacKey(secret(1))
      assert.strictEqual(again, first)
      assert.strictEqual(seen.imports, 1)
      const node = NodeCrypto.make()
      const expected = yield* node.hmacSha256Hex(yield* node.importHmacKey(secret(1)), message)
      assert.strictEqual(yield* crypto.hmacSha256Hex(again, message), expected)
      assert.isTrue(yield* crypto.verifyHmacSha256Hex(again, message, expected))
    })
  )

  it.effect("different secrets get different keys", () =>
    Effect.gen(function* () {
      const { crypto, seen } = countingSubtle()
      const one = yield* crypto.importHmacKey(secret(1))
      const two = yield* crypto.importHmacKey(secret(2))
      assert.notStrictEqual(one, two)
      assert.strictEqual(seen.imports, 2)
      assert.notStrictEqual(yield* crypto.hmacSha256Hex(one, message), yield* crypto.hmacSha256Hex(two, message))
    })
  )

  it.effect("the cache is bounded: past its size the least recently used key is imported again", () =>
    Effect.gen(function* () {
      const { crypto, seen } = countingSubtle()
      const first = yield* crypto.importHmacKey(secret(0))
      for (let i = 1; i < WebCrypto.keyCacheSize; i++) yield* crypto.importHmacKey(secret(i))
      // Using the first key again makes the second the least recently used.
      assert.strictEqual(yield* crypto.importHmacKey(secret(0)), first)
      yield* crypto.importHmacKey(secret(WebCrypto.keyCacheSize))
      assert.strictEqual(seen.imports, WebCrypto.keyCacheSize + 1)
      assert.strictEqual(yield* crypto.importHmacKey(secret(0)), first)
      assert.strictEqual(seen.imports, WebCrypto.keyCacheSize + 1)
      yield* crypto.importHmacKey(secret(1))
      assert.strictEqual(seen.imports, WebCrypto.keyCacheSize + 2)
    })
  )

  it.effect("the secret's bytes are zeroed once imported, and the key does not show it", () =>
    Effect.gen(function* () {
      const { crypto, seen } = countingSubtle()
      const key = yield* crypto.importHmacKey(secret(7))
      yield* crypto.importHmacKey(secret(7))
      assert.isAbove(seen.buffers.length, 2)
      for (const buffer of seen.buffers) assert.isTrue(buffer.every((byte) => byte === 0))
      assert.notInclude(JSON.stringify(key), "whsec_")
      assert.notInclude(String(key.handle), "whsec_")
    })
  )

  it.effect("verify is false for a wrong MAC and for anything but 64 lowercase hex characters", () =>
    Effect.gen(function* () {
      const { crypto } = countingSubtle()
      const key = yield* crypto.importHmacKey(secret(3))
      const mac = yield* crypto.hmacSha256Hex(key, message)
      const flipped = (mac[0] === "0" ? "1" : "0") + mac.slice(1)
      assert.isFalse(yield* crypto.verifyHmacSha256Hex(key, message, flipped))
      assert.isFalse(yield* crypto.verifyHmacSha256Hex(key, message, mac.toUpperCase()))
      assert.isFalse(yield* crypto.verifyHmacSha256Hex(key, message, mac.slice(2)))
      assert.isFalse(yield* crypto.verifyHmacSha256Hex(key, message, mac.slice(0, 62) + "zz"))
    })
  )
})

describe("node:crypto layer: random bytes", () => {
  it.effect("small requests come from a pool: every one is fresh, of its size, and the pool refills", () =>
    Effect.gen(function* () {
      const crypto = NodeCrypto.make()
      const seen = new Set<string>()
      // 24-byte nonces across several 4 KiB refills, with odd sizes in between.
      for (let i = 0; i < 1_000; i++) {
        const size = i % 7 === 0 ? 13 : 24
        const bytes = yield* crypto.randomBytes(size)
        assert.strictEqual(bytes.length, size)
        const hex = Buffer.from(bytes).toString("hex")
        assert.isFalse(seen.has(hex))
        seen.add(hex)
      }
    })
  )

  it.effect("handed-out bytes are the caller's own: changing them changes no later answer", () =>
    Effect.gen(function* () {
      const crypto = NodeCrypto.make()
      const first = yield* crypto.randomBytes(NodeCrypto.pooledRandomMax)
      first.fill(0)
      const second = yield* crypto.randomBytes(NodeCrypto.pooledRandomMax)
      assert.isTrue(second.some((b) => b !== 0))
      const large = yield* crypto.randomBytes(NodeCrypto.pooledRandomMax + 1)
      assert.strictEqual(large.length, NodeCrypto.pooledRandomMax + 1)
      assert.isTrue(large.some((b) => b !== 0))
    })
  )
})

describe("random bytes", () => {
  const webCrypto = countingSubtle().crypto
  for (const [name, random] of [
    ["node:crypto", NodeCrypto.makeSync().randomBytes],
    ["WebCrypto", (size: number) => Effect.runSync(webCrypto.randomBytes(size))]
  ] as const) {
    it(`${name}: fresh bytes of the asked size, pooled or not`, () => {
      const seen = new Set<string>()
      for (const size of [1, 13, 24, 24, NodeCrypto.pooledRandomMax, NodeCrypto.pooledRandomMax + 1]) {
        const bytes = random(size)
        assert.strictEqual(bytes.length, size)
        const hex = Buffer.from(bytes).toString("hex")
        assert.isFalse(seen.has(hex))
        seen.add(hex)
      }
    })
  }

  it("node:crypto's signer draws its nonces synchronously: 32 base64url characters, each fresh", () => {
    const signer = Effect.runSync(Effect.provide(makeSignerSync, NodeCrypto.layer))
    const nonces = Array.from({ length: 500 }, () => signer.freshNonce())
    for (const nonce of nonces) assert.match(nonce, /^[A-Za-z0-9_-]{32}$/)
    assert.strictEqual(new Set(nonces).size, nonces.length)
  })
})

describe("node:crypto layer: SHA-256", () => {
  it.effect(
    "equals createHash for text (non-ASCII and lone surrogates included), bytes, empty and large input, in both APIs",
    () =>
      Effect.gen(function* () {
        const crypto = NodeCrypto.make()
        const inputs: ReadonlyArray<string | Uint8Array> = [
          "",
          "abc",
          "é☃ and a lone \ud800 surrogate",
          "x".repeat(100_000),
          new Uint8Array(0),
          new Uint8Array([0, 255, 1, 128]),
          new Uint8Array(70_000).fill(7)
        ]
        for (const input of inputs) {
          const expected = createHash("sha256").update(input).digest("hex")
          assert.strictEqual(nodeSync.sha256Hex(input), expected)
          assert.strictEqual(yield* crypto.sha256Hex(input), expected)
        }
      })
  )
})

describe("node:crypto layer: HMAC from the key's padded blocks", () => {
  const reference = (secret: string, parts: ReadonlyArray<string | Uint8Array>) => {
    const hmac = createHmac("sha256", secret)
    for (const part of parts) hmac.update(part)
    return hmac.digest("hex")
  }
  const secrets = [
    "",
    "k",
    "as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e",
    "x".repeat(64),
    "y".repeat(65),
    "é☃".repeat(40)
  ]
  const messages: ReadonlyArray<ReadonlyArray<string | Uint8Array>> = [
    [],
    [""],
    ["abc"],
    message,
    ["lone \ud800 surrogate", new Uint8Array([0, 255, 1])],
    ["☃".repeat(30_000)],
    // Larger than the one-shot path takes: streamed through createHmac.
    [new Uint8Array(NodeCrypto.oneShotMax + 1).fill(7)],
    ["a", new Uint8Array(3_000).fill(9), "b", new Uint8Array(0), "c"]
  ]

  it.effect("equals createHmac for short, block-sized, long and non-ASCII keys and any parts, in both APIs", () =>
    Effect.gen(function* () {
      const crypto = NodeCrypto.make()
      for (const text of secrets) {
        const key = yield* crypto.importHmacKey(Redacted.make(text))
        for (const parts of messages) {
          const expected = reference(text, parts)
          assert.strictEqual(nodeSync.hmacSha256Hex(key, parts), expected)
          assert.strictEqual(yield* crypto.hmacSha256Hex(key, parts), expected)
        }
      }
    })
  )

  // Every byte value of the inner digest must survive its trip through the outer block (the
  // one-shot path carries it as a one-byte string): any secret, any parts, against createHmac.
  it.prop(
    "equals createHmac for any secret and parts",
    [
      fc.string({ unit: "binary", maxLength: 100 }),
      fc.array(fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.uint8Array({ maxLength: 3_000 })), {
        maxLength: 5
      })
    ],
    ([text, parts]) => {
      const crypto = NodeCrypto.make()
      const key = Effect.runSync(crypto.importHmacKey(Redacted.make(text)))
      assert.strictEqual(nodeSync.hmacSha256Hex(key, parts), reference(text, parts))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.effect("keys of one layer do not disturb each other: interleaved MACs over a growing scratch buffer", () =>
    Effect.gen(function* () {
      const crypto = NodeCrypto.make()
      const one = yield* crypto.importHmacKey(secret(1))
      const two = yield* crypto.importHmacKey(secret(2))
      for (let size = 0; size < 20_000; size += 1_999) {
        const body = new Uint8Array(size).fill(size & 255)
        assert.strictEqual(nodeSync.hmacSha256Hex(one, ["p", body]), reference(Redacted.value(secret(1)), ["p", body]))
        assert.strictEqual(nodeSync.hmacSha256Hex(two, ["p", body]), reference(Redacted.value(secret(2)), ["p", body]))
      }
    })
  )

  it.effect("the key shows nothing of the secret, printed or serialized", () =>
    Effect.gen(function* () {
      const key = yield* NodeCrypto.make().importHmacKey(Redacted.make("whsec_0123456789abcdef"))
      for (const shown of [JSON.stringify(key), String(key.handle), inspect(key, { depth: 10, showHidden: true })]) {
        assert.notInclude(shown, "whsec_")
        assert.notInclude(shown, "0123456789abcdef")
        // Nor key-derived bytes (the padded blocks are the key XORed with a constant).
        assert.notMatch(shown, /Buffer|Uint8Array|ArrayBuffer/)
      }
    })
  )
})
