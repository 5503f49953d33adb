/**
 * Version 7 UUIDs (RFC 9562, section 5.7): the layout for any time and randomness, the order of
 * their text by time, the refusals, and fresh ones from the `Crypto` port and the clock.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as WebCrypto from "../../../adapters/crypto/WebCrypto.ts"
import { isUuid, timeOrderedUuidSync, timeOrderedUuidWith, uuidV7 } from "../../../core/protocol/Uuid.ts"
import { uuidV7Millis, uuidV7Pattern } from "../../support/uuid.ts"

const maxMillis = 2 ** 48 - 1
const millis = fc.integer({ min: 0, max: maxMillis })
const random = fc.uint8Array({ minLength: 10, maxLength: 16 })

/** The 16 bytes of a UUID's text. */
const bytesOf = (uuid: string): Uint8Array => Uint8Array.from(Buffer.from(uuid.replaceAll("-", ""), "hex"))

describe("uuidV7", () => {
  it.prop(
    "the time in the first 48 bits, version 7, variant 10, and the 74 random bits from the first 10 random bytes",
    [millis, random],
    ([time, bytes]) => {
      const uuid = uuidV7(time, bytes)
      assert.isTrue(isUuid(uuid))
      assert.match(uuid, uuidV7Pattern)
      const out = bytesOf(uuid)
      assert.strictEqual(parseInt(Buffer.from(out.subarray(0, 6)).toString("hex"), 16), time)
      assert.strictEqual(out[6]! >> 4, 7)
      assert.strictEqual(out[8]! >> 6, 0b10)
      assert.strictEqual(out[6]! & 0x0f, bytes[0]! & 0x0f)
      assert.strictEqual(out[8]! & 0x3f, bytes[2]! & 0x3f)
      assert.deepStrictEqual([out[7], ...out.subarray(9)], [bytes[1], ...bytes.subarray(3, 10)])
    }
  )

  it.prop(
    "a later millisecond sorts after an earlier one, as text, whatever the random bits",
    [millis, millis, random, random],
    ([a, b, ra, rb]) => {
      fc.pre(a !== b)
      const [early, late] = a < b ? [a, b] : [b, a]
      assert.isTrue(uuidV7(early, a < b ? ra : rb) < uuidV7(late, a < b ? rb : ra))
    }
  )

  it("refuses fewer than 10 random bytes, and a time that is negative, fractional or past 48 bits", () => {
    assert.throws(() => uuidV7(0, new Uint8Array(9)), RangeError)
    for (const time of [-1, 1.5, maxMillis + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => uuidV7(time, new Uint8Array(10)), RangeError)
    }
    assert.strictEqual(uuidV7(maxMillis, new Uint8Array(10)), "ffffffff-ffff-7000-8000-000000000000")
    assert.strictEqual(uuidV7(0, new Uint8Array(10).fill(255)), "00000000-0000-7fff-bfff-ffffffffffff")
  })
})

describe("fresh time-ordered UUIDs", () => {
  it.effect(
    "from node:crypto synchronously, and node:crypto and WebCrypto as an effect: the given time, and never the same twice",
    () =>
      Effect.gen(function* () {
        const time = Date.UTC(2026, 10, 28, 12)
        const webCrypto = WebCrypto.make(globalThis.crypto.subtle, (bytes) => globalThis.crypto.getRandomValues(bytes))
        const sync = timeOrderedUuidSync(NodeCrypto.makeSync())
        const seen = new Set<string>()
        for (let i = 0; i < 10_000; i++) seen.add(sync(time))
        for (const crypto of [NodeCrypto.make(), webCrypto]) {
          for (let i = 0; i < 1_000; i++) seen.add(yield* timeOrderedUuidWith(crypto, time))
        }
        assert.strictEqual(seen.size, 12_000)
        for (const uuid of seen) assert.strictEqual(uuidV7Millis(uuid), time)
      })
  )

  it("over the port's version 4 generator: the time's part follows the time as it changes, the rest is the version 4 UUID's last 21 characters", () => {
    let n = 0
    const v4 = () => `0123456${n % 10}-89ab-4cde-${"89ab"[n % 4]}f01-23456789abc${n++ % 10}`
    const sync = timeOrderedUuidSync({ ...NodeCrypto.makeSync(), randomUuid: v4 })
    const times = [1_000, 1_000, 1_001, 1_000, maxMillis, 0, 0]
    times.forEach((time, i) => {
      const uuid = sync(time)
      assert.strictEqual(
        uuid,
        uuidV7(time, new Uint8Array(10)).slice(0, 15) + `cde-${"89ab"[i % 4]}f01-23456789abc${i % 10}`
      )
      assert.strictEqual(uuidV7Millis(uuid), time)
      assert.isTrue(isUuid(uuid))
    })
    assert.throws(() => sync(maxMillis + 1), RangeError)
    assert.throws(() => sync(-1), RangeError)
  })

  it.effect("without `CryptoSync` the effect answers", () =>
    Effect.gen(function* () {
      assert.match(yield* timeOrderedUuidWith(NodeCrypto.make(), 0), /^00000000-0000-7/)
    })
  )
})
