import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import * as NonceStore from "../../core/NonceStore.ts"

/**
 * The contract every NonceStore implementation satisfies. Each adapter's test file calls `suite`.
 */
export const suite = (name: string, make: () => NonceStore.NonceStoreService) =>
  describe(`NonceStore contract (${name})`, () => {
    const claim = (store: NonceStore.NonceStoreService, nonce: string, now: number, scope = "s") =>
      store.claim({ scope, nonce, now, expiresAt: now + NonceStore.nonceRetentionMillis })

    it.effect("a first claim succeeds and a second is refused", () =>
      Effect.gen(function*() {
        const store = make()
        assert.isTrue(yield* claim(store, "nonce-0000000001", 0))
        assert.isFalse(yield* claim(store, "nonce-0000000001", 1))
      }))

    it.effect("a nonce stays claimed until its retention ends, then may be claimed again", () =>
      Effect.gen(function*() {
        const store = make()
        assert.isTrue(yield* claim(store, "nonce-0000000001", 0))
        assert.isFalse(yield* claim(store, "nonce-0000000001", NonceStore.nonceRetentionMillis - 1))
        assert.isTrue(yield* claim(store, "nonce-0000000001", NonceStore.nonceRetentionMillis))
      }))

    it.effect("scopes are independent", () =>
      Effect.gen(function*() {
        const store = make()
        assert.isTrue(yield* claim(store, "nonce-0000000001", 0, "a"))
        assert.isTrue(yield* claim(store, "nonce-0000000001", 0, "b"))
      }))

    it.effect.prop(
      "claims agree with a reference model over any sequence",
      [fc.array(fc.tuple(fc.constantFrom("n-aaaaaaaaaaaaaa", "n-bbbbbbbbbbbbbb", "n-cccccccccccccc"), fc.integer({ min: 0, max: 400_000 })), { maxLength: 200 })],
      ([steps]) =>
        Effect.gen(function*() {
          const store = make()
          const model = new Map<string, number>()
          let now = 0
          for (const [nonce, advance] of steps) {
            now += advance
            const held = model.get(nonce)
            const expected = held === undefined || held <= now
            if (expected) model.set(nonce, now + NonceStore.nonceRetentionMillis)
            assert.strictEqual(yield* claim(store, nonce, now), expected)
          }
        })
    )

    it.effect("50 concurrent claims of one nonce have exactly one winner", () =>
      Effect.gen(function*() {
        const store = make()
        const results = yield* Effect.all(Array.from({ length: 50 }, () => claim(store, "nonce-concurrent-01", 0)), {
          concurrency: "unbounded"
        })
        assert.strictEqual(results.filter(Boolean).length, 1)
      }))
  })

