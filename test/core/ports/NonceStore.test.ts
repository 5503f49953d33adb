import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import * as Context from "effect/Context"
import { NonceStore, NonceStoreSync } from "../../../core/ports/NonceStore.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
describe("NonceStore memory layer", () => {
  it("offers the synchronous claim the verifier's fast path uses, consistent with claim", () => {
    const context = MemoryNonceStore.context()
    const claim = { scope: "s", nonce: "nonce-0000000001", now: 0, expiresAt: 10 }
    assert.isTrue(Context.get(context, NonceStoreSync).claim(claim))
    assert.isFalse(Effect.runSync(Context.get(context, NonceStore).claim(claim)))
  })

  it("forgets expired entries so memory stays bounded by the retention window", () => {
    const store = MemoryNonceStore.make()
    for (let i = 0; i < 10_000; i++) {
      assert.isTrue(
        store.claim({
          scope: "s",
          nonce: `nonce-${i.toString().padStart(12, "0")}`,
          now: i,
          expiresAt: i + 100
        })
      )
    }
    // Entries older than the window were swept; an old nonce is claimable again.
    assert.isTrue(store.claim({ scope: "s", nonce: "nonce-000000000000", now: 20_000, expiresAt: 20_100 }))
  })

  it("drops expired nonces before each claim: after the retention, every old nonce is claimable again, none before", () => {
    const store = MemoryNonceStore.make()
    const claim = (nonce: string, now: number) => store.claim({ scope: "s", nonce, now, expiresAt: now + 100 })
    for (let i = 0; i < 5_000; i++) assert.isTrue(claim(`nonce-${i.toString().padStart(12, "0")}`, i))
    // At 5,050 the nonces claimed at 0..4,950 have expired, the later ones are held.
    assert.isTrue(claim("nonce-000000004950", 5_050))
    assert.isFalse(claim("nonce-000000004951", 5_050))
    assert.isFalse(claim("nonce-000000004999", 5_050))
    for (let i = 0; i < 4_950; i += 7) assert.isTrue(claim(`nonce-${i.toString().padStart(12, "0")}`, 5_050))
    // Claimed again, they are held again.
    assert.isFalse(claim("nonce-000000000007", 5_051))
  })

  it("a clock that goes back: each nonce is held exactly until its own expiry", () => {
    const store = MemoryNonceStore.make()
    const claim = (nonce: string, now: number, expiresAt = now + 100) =>
      store.claim({ scope: "s", nonce, now, expiresAt })
    assert.isTrue(claim("nonce-late-000001", 1_000))
    // The clock went back 500 ms: this claim expires before the one already held.
    assert.isTrue(claim("nonce-late-000002", 500))
    assert.isFalse(claim("nonce-late-000002", 550))
    assert.isFalse(claim("nonce-late-000001", 550))
    assert.isFalse(claim("nonce-late-000002", 599))
    // At 600 the second has expired, the first is still held.
    assert.isTrue(claim("nonce-late-000002", 600))
    assert.isFalse(claim("nonce-late-000001", 1_099))
    assert.isTrue(claim("nonce-late-000001", 1_100))
  })

  // With the clock going back, a nonce whose expiry the store has already seen pass may or may not be
  // remembered (it expired); every other claim has exactly one right answer.
  it("agrees with a reference model for any times, forward or back, and any retention", () =>
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom("n-aaaaaaaaaaaaaa", "n-bbbbbbbbbbbbbb", "n-cccccccccccccc", "n-dddddddddddddd"),
            fc.constantFrom("s1", "s2"),
            fc.oneof(fc.integer({ min: -4, max: 5 }), fc.integer({ min: -300, max: 400 })),
            fc.oneof(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 500 }))
          ),
          { maxLength: 200 }
        ),
        (steps) => {
          const store = MemoryNonceStore.make()
          const model = new Map<string, number>()
          let now = 1_000
          let latest = now
          for (const [nonce, scope, advance, retention] of steps) {
            now += advance
            const key = scope + " " + nonce
            const held = model.get(key)
            const claimed = store.claim({ scope, nonce, now, expiresAt: now + retention })
            if (held === undefined || held <= now) assert.isTrue(claimed, "free (never claimed, or expired)")
            else if (held > latest) assert.isFalse(claimed, "held, and never seen expired")
            if (claimed) model.set(key, now + retention)
            latest = Math.max(latest, now)
          }
        }
      ),
      { numRuns: 500 }
    ))
})
