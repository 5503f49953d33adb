import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type ApiKeyRecord, ApiKeyStore } from "../../core/ports/ApiKeyStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/**
 * The ApiKeyStore contract. One store per suite; each test works in workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<ApiKeyStore, unknown>) =>
  describe(`ApiKeyStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const key = (workspaceId: string, createdAt: number, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
        id: uid("key-"),
        workspaceId,
        scope: "ingest",
        name: null,
        secretHash: uid("hash-"),
        createdAt,
        revokedAt: null,
        ...overrides
      })
      /** A workspace that exists. */
      const workspace = Effect.gen(function* () {
        const workspaceId = uid("ws-")
        assert.isTrue(yield* (yield* ApiKeyStore).ensureWorkspace(workspaceId, 1_000))
        return workspaceId
      })

      it.effect("ensureWorkspace creates once, then reports it exists", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = uid("ws-")
          assert.isFalse(yield* store.workspaceExists(workspaceId))
          assert.isTrue(yield* store.ensureWorkspace(workspaceId, 1_000))
          assert.isFalse(yield* store.ensureWorkspace(workspaceId, 2_000))
          assert.isTrue(yield* store.workspaceExists(workspaceId))
        })
      )

      it.effect("a created key is found by its hash, exactly as stored", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = yield* workspace
          const record = key(workspaceId, 1_700_000_000_123, { scope: "developer:read", name: "ci reader" })
          assert.isTrue(yield* store.create(record))
          assert.deepStrictEqual(yield* store.findByHash(record.secretHash), Option.some(record))
          assert.isTrue(Option.isNone(yield* store.findByHash(uid("hash-"))))
        })
      )

      it.effect("findCached answers nothing, or exactly what findByHash answers", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = yield* workspace
          const record = key(workspaceId, 1_700_000_000_456)
          assert.isUndefined(store.findCached(record.secretHash, 0), "a key not stored")
          assert.isTrue(yield* store.create(record))
          const cached = store.findCached(record.secretHash, 0)
          if (cached !== undefined) {
            assert.deepStrictEqual(Option.some(cached), yield* store.findByHash(record.secretHash))
          }
        })
      )

      it.effect("a duplicate id is refused and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = yield* workspace
          const first = key(workspaceId, 1)
          assert.isTrue(yield* store.create(first))
          const clash = key(workspaceId, 2, { id: first.id, scope: "admin" })
          assert.isFalse(yield* store.create(clash))
          assert.isTrue(Option.isNone(yield* store.findByHash(clash.secretHash)))
          assert.deepStrictEqual(yield* store.list(workspaceId), [first])
        })
      )

      it.effect("a duplicate secret hash is refused and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = yield* workspace
          const first = key(workspaceId, 1)
          assert.isTrue(yield* store.create(first))
          const clash = key(workspaceId, 2, { secretHash: first.secretHash, scope: "admin" })
          assert.isFalse(yield* store.create(clash))
          assert.deepStrictEqual(yield* store.findByHash(first.secretHash), Option.some(first))
          assert.deepStrictEqual(yield* store.list(workspaceId), [first])
        })
      )

      it.effect("list returns only the workspace's keys, oldest first, revoked ones included", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = yield* workspace
          const other = yield* workspace
          const newest = key(workspaceId, 300)
          const oldest = key(workspaceId, 100)
          const middle = key(workspaceId, 200, { revokedAt: 250 })
          for (const record of [newest, oldest, middle, key(other, 150)]) assert.isTrue(yield* store.create(record))
          assert.deepStrictEqual(yield* store.list(workspaceId), [oldest, middle, newest])
          assert.deepStrictEqual(yield* store.list(uid("ws-")), [])
        })
      )

      it.effect("revoke succeeds once, then reports there is no live key", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = yield* workspace
          const record = key(workspaceId, 100)
          assert.isTrue(yield* store.create(record))
          assert.isTrue(yield* store.revoke(workspaceId, record.id, 500))
          assert.isFalse(yield* store.revoke(workspaceId, record.id, 600))
          assert.deepStrictEqual(yield* store.findByHash(record.secretHash), Option.some({ ...record, revokedAt: 500 }))
          assert.isFalse(yield* store.revoke(workspaceId, uid("key-"), 600))
        })
      )

      it.effect("a key cannot be revoked through another workspace", () =>
        Effect.gen(function* () {
          const store = yield* ApiKeyStore
          const workspaceId = yield* workspace
          const other = yield* workspace
          const record = key(workspaceId, 100)
          assert.isTrue(yield* store.create(record))
          assert.isFalse(yield* store.revoke(other, record.id, 500))
          assert.deepStrictEqual(yield* store.findByHash(record.secretHash), Option.some(record))
        })
      )
    })
  })
