import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as NonceStore from "../../../core/ports/NonceStore.ts"
import { suite } from "./suites/NonceStore.ts"

suite("memory", () => NonceStore.layerMemory)

describe("NonceStore memory layer", () => {
  it("offers the synchronous claim the verifier's fast path uses, consistent with claim", () => {
    const store = NonceStore.makeMemory()
    const claim = { scope: "s", nonce: "nonce-0000000001", now: 0, expiresAt: 10 }
    assert.isTrue(store.unsafeClaimSync!(claim))
    assert.isFalse(Effect.runSync(store.claim(claim)))
  })

  it("forgets expired entries so memory stays bounded by the retention window", () => {
    const store = NonceStore.makeMemory()
    for (let i = 0; i < 10_000; i++) {
      assert.isTrue(store.unsafeClaimSync!({ scope: "s", nonce: `nonce-${i.toString().padStart(12, "0")}`, now: i, expiresAt: i + 100 }))
    }
    // Entries older than the window were swept; an old nonce is claimable again.
    assert.isTrue(store.unsafeClaimSync!({ scope: "s", nonce: "nonce-000000000000", now: 20_000, expiresAt: 20_100 }))
  })
})
