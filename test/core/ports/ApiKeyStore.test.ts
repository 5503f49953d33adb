import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as ApiKeyStore from "../../../core/ports/ApiKeyStore.ts"
import * as MemoryApiKeyStore from "../../../adapters/memory/ApiKeyStore.ts"

const record: ApiKeyStore.ApiKeyRecord = {
  id: "k1",
  workspaceId: "w1",
  scope: "ingest",
  name: null,
  secretHash: "h1",
  createdAt: 0,
  revokedAt: null
}

describe("ApiKeyStore.withLookupCache", () => {
  it.effect("remembers a found key; a revocation through it is seen at once", () =>
    Effect.gen(function* () {
      const store = MemoryApiKeyStore.make()
      yield* store.ensureWorkspace("w1", 0)
      yield* store.create(record)
      const cached = ApiKeyStore.withLookupCache(store, 5_000)
      assert.isTrue(Option.isSome(yield* cached.findByHash("h1")))
      assert.isTrue(yield* cached.revoke("w1", "k1", 1))
      const after = yield* cached.findByHash("h1")
      assert.isTrue(Option.isSome(after) && after.value.revokedAt !== null)
    })
  )

  it.effect("a revocation made elsewhere is seen once the entry expires", () =>
    Effect.gen(function* () {
      const store = MemoryApiKeyStore.make()
      yield* store.ensureWorkspace("w1", 0)
      yield* store.create(record)
      const cached = ApiKeyStore.withLookupCache(store, 5_000)
      yield* cached.findByHash("h1")
      yield* store.revoke("w1", "k1", 1)
      const stale = yield* cached.findByHash("h1")
      assert.isTrue(Option.isSome(stale) && stale.value.revokedAt === null)
      yield* TestClock.adjust("5001 millis")
      const fresh = yield* cached.findByHash("h1")
      assert.isTrue(Option.isSome(fresh) && fresh.value.revokedAt !== null)
    })
  )

  it.effect("an unknown hash is not cached: a key created later is found at once", () =>
    Effect.gen(function* () {
      const store = MemoryApiKeyStore.make()
      const cached = ApiKeyStore.withLookupCache(store, 5_000)
      assert.isTrue(Option.isNone(yield* cached.findByHash("h1")))
      yield* store.ensureWorkspace("w1", 0)
      yield* store.create(record)
      assert.isTrue(Option.isSome(yield* cached.findByHash("h1")))
    })
  )

  it.effect("findCached: only a key the cache holds, until it expires or is revoked through it", () =>
    Effect.gen(function* () {
      const store = MemoryApiKeyStore.make()
      yield* store.ensureWorkspace("w1", 0)
      yield* store.create(record)
      const cached = ApiKeyStore.withLookupCache(store, 5_000)
      assert.isUndefined(cached.findCached("h1", 0), "not looked up yet")
      yield* cached.findByHash("h1")
      assert.strictEqual(cached.findCached("h1", 4_999)?.id, "k1")
      assert.isUndefined(cached.findCached("h1", 5_000), "expired")
      assert.isUndefined(cached.findCached("h2", 0), "another hash")
      yield* cached.findByHash("h1")
      yield* cached.revoke("w1", "k1", 1)
      assert.isUndefined(cached.findCached("h1", 1))
    })
  )
})
