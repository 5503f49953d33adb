import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as fc from "fast-check"
import * as NonceStore from "../../core/ports/NonceStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/**
 * The contract every NonceStore implementation satisfies. `layer()` is one fresh store for the whole
 * suite; every test claims nonces of its own scope, so tests never see each other's rows.
 */
export const suite = (name: string, layer: () => Layer.Layer<NonceStore.NonceStore, unknown>) =>
  describe(`NonceStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const claim = (scope: string, nonce: string, now: number) =>
        Effect.flatMap(NonceStore.NonceStore, (store) =>
          store.claim({ scope, nonce, now, expiresAt: now + NonceStore.nonceRetentionMillis })
        )

      it.effect("a first claim succeeds and a second is refused", () =>
        Effect.gen(function* () {
          const scope = uid("scope-")
          assert.isTrue(yield* claim(scope, "nonce-0000000001", 0))
          assert.isFalse(yield* claim(scope, "nonce-0000000001", 1))
        })
      )

      it.effect("a nonce stays claimed until its retention ends, then may be claimed again", () =>
        Effect.gen(function* () {
          const scope = uid("scope-")
          assert.isTrue(yield* claim(scope, "nonce-0000000001", 0))
          assert.isFalse(yield* claim(scope, "nonce-0000000001", NonceStore.nonceRetentionMillis - 1))
          assert.isTrue(yield* claim(scope, "nonce-0000000001", NonceStore.nonceRetentionMillis))
          assert.isFalse(yield* claim(scope, "nonce-0000000001", NonceStore.nonceRetentionMillis + 1))
        })
      )

      it.effect("scopes are independent", () =>
        Effect.gen(function* () {
          const [a, b] = [uid("scope-"), uid("scope-")]
          assert.isTrue(yield* claim(a, "nonce-0000000001", 0))
          assert.isTrue(yield* claim(b, "nonce-0000000001", 0))
          assert.isFalse(yield* claim(a, "nonce-0000000001", 1))
          assert.isFalse(yield* claim(b, "nonce-0000000001", 1))
        })
      )

      it.effect.prop(
        "claims agree with a reference model over any sequence",
        [
          fc.array(
            fc.tuple(
              fc.constantFrom("n-aaaaaaaaaaaaaa", "n-bbbbbbbbbbbbbb", "n-cccccccccccccc"),
              fc.integer({ min: 0, max: 400_000 })
            ),
            { maxLength: 100 }
          )
        ],
        ([steps]) =>
          Effect.gen(function* () {
            const scope = uid("scope-")
            const model = new Map<string, number>()
            let now = 0
            for (const [nonce, advance] of steps) {
              now += advance
              const held = model.get(nonce)
              const expected = held === undefined || held <= now
              if (expected) model.set(nonce, now + NonceStore.nonceRetentionMillis)
              assert.strictEqual(yield* claim(scope, nonce, now), expected)
            }
          }),
        { fastCheck: { numRuns: 50 } }
      )

      it.effect("concurrent claims of distinct and repeated nonces: each distinct nonce is won exactly once", () =>
        Effect.gen(function* () {
          const scope = uid("scope-")
          const nonces = Array.from({ length: 60 }, (_, i) => `nonce-batch-${String(i % 20).padStart(4, "0")}`)
          const results = yield* Effect.all(
            nonces.map((n) => claim(scope, n, 0)),
            { concurrency: "unbounded" }
          )
          for (let k = 0; k < 20; k++) {
            assert.strictEqual(results.filter((won, i) => won && i % 20 === k).length, 1)
          }
          assert.isFalse(yield* claim(scope, "nonce-batch-0007", 1))
        })
      )

      it.effect("50 concurrent claims of one nonce have exactly one winner", () =>
        Effect.gen(function* () {
          const scope = uid("scope-")
          const results = yield* Effect.all(
            Array.from({ length: 50 }, () => claim(scope, "nonce-concurrent-01", 0)),
            {
              concurrency: "unbounded"
            }
          )
          assert.strictEqual(results.filter(Boolean).length, 1)
        })
      )
    })
  })
