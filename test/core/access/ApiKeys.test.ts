import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as ApiKeyStore from "../../../core/ports/ApiKeyStore.ts"
import * as MemoryApiKeyStore from "../../../adapters/memory/ApiKeyStore.ts"
import * as WebCrypto from "../../../adapters/crypto/WebCrypto.ts"
import { bootstrapWorkspace, hashSecret, issue, mintSecret } from "../../../core/access/ApiKeys.ts"
import { randomUuid } from "../../../core/protocol/Uuid.ts"

const workspaceId = "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11"
const adminKey = Redacted.make("bootstrap-admin-key-0123456789abcdef")
const ingestKey = Redacted.make("bootstrap-ingest-key-0123456789abcdef")
const layer = () => Layer.merge(MemoryApiKeyStore.layerMemory, NodeCrypto.layer)

describe("ApiKeys", () => {
  it.effect("mints acc_<scope-tag>_ + 43 base64url characters (32 bytes)", () =>
    Effect.gen(function* () {
      assert.match(Redacted.value(yield* mintSecret("admin")), /^acc_admin_[A-Za-z0-9_-]{43}$/)
      assert.match(Redacted.value(yield* mintSecret("ingest")), /^acc_ingest_[A-Za-z0-9_-]{43}$/)
      assert.match(Redacted.value(yield* mintSecret("developer:read")), /^acc_read_[A-Za-z0-9_-]{43}$/)
      const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
      assert.match(yield* randomUuid, uuidV4)
      // Built from random bytes where the Crypto implementation has no native generator.
      const fromBytes = yield* Effect.provide(randomUuid, WebCrypto.layer)
      assert.match(fromBytes, uuidV4)
      assert.notStrictEqual(fromBytes, yield* Effect.provide(randomUuid, WebCrypto.layer))
    }).pipe(Effect.provide(NodeCrypto.layer))
  )

  it.effect("issue stores only the hash, with the Clock's time", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(1_700_000_000_000)
      const { record, secret } = yield* issue({ workspaceId, scope: "ingest", name: "backend" })
      assert.strictEqual(record.secretHash, yield* hashSecret(secret))
      assert.strictEqual(record.createdAt, 1_700_000_000_000)
      assert.notInclude(JSON.stringify(record), Redacted.value(secret))
      const found = yield* (yield* ApiKeyStore.ApiKeyStore).findByHash(record.secretHash)
      assert.deepStrictEqual(Option.getOrThrow(found), record)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("bootstrap creates the workspace and admin key once, then finds them", () =>
    Effect.gen(function* () {
      const first = yield* bootstrapWorkspace(workspaceId, adminKey)
      assert.deepStrictEqual(first, { workspaceCreated: true, adminKey: "created" })
      const second = yield* bootstrapWorkspace(workspaceId, adminKey)
      assert.deepStrictEqual(second, { workspaceCreated: false, adminKey: "present" })
      const keys = yield* (yield* ApiKeyStore.ApiKeyStore).list(workspaceId)
      assert.strictEqual(keys.length, 1)
      assert.strictEqual(keys[0]!.scope, "admin")
      assert.strictEqual(keys[0]!.secretHash, yield* hashSecret(adminKey))
    }).pipe(Effect.provide(layer()))
  )

  it.effect("bootstrap with an ingest key creates it once in the workspace, beside the admin key", () =>
    Effect.gen(function* () {
      const first = yield* bootstrapWorkspace(workspaceId, adminKey, ingestKey)
      assert.deepStrictEqual(first, { workspaceCreated: true, adminKey: "created", ingestKey: "created" })
      const again = yield* bootstrapWorkspace(workspaceId, adminKey, ingestKey)
      assert.deepStrictEqual(again, { workspaceCreated: false, adminKey: "present", ingestKey: "present" })
      const store = yield* ApiKeyStore.ApiKeyStore
      const ingest = Option.getOrThrow(yield* store.findByHash(yield* hashSecret(ingestKey)))
      assert.strictEqual(ingest.scope, "ingest")
      assert.strictEqual(ingest.workspaceId, workspaceId)
      assert.strictEqual((yield* store.list(workspaceId)).length, 2)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("bootstrap refuses an ingest key whose secret is another scope's key", () =>
    Effect.gen(function* () {
      yield* bootstrapWorkspace(workspaceId, adminKey)
      // the admin key's secret given as the ingest key: registered, but as an admin key
      const result = yield* Effect.either(bootstrapWorkspace(workspaceId, ingestKey, adminKey))
      assert.isTrue(Either.isLeft(result) && result.left._tag === "BootstrapKeyConflict")
      assert.strictEqual(
        Either.isLeft(result) ? result.left.message : "",
        "ACCORD_BOOTSTRAP_INGEST_KEY is already registered as a different key (another workspace or scope)"
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("bootstrap does not bring back a revoked key", () =>
    Effect.gen(function* () {
      yield* bootstrapWorkspace(workspaceId, adminKey)
      const store = yield* ApiKeyStore.ApiKeyStore
      const [key] = yield* store.list(workspaceId)
      yield* store.revoke(workspaceId, key!.id, 1)
      assert.deepStrictEqual(yield* bootstrapWorkspace(workspaceId, adminKey), {
        workspaceCreated: false,
        adminKey: "revoked"
      })
      assert.isNotNull((yield* store.list(workspaceId))[0]!.revokedAt)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("bootstrap refuses a key already registered to another workspace", () =>
    Effect.gen(function* () {
      yield* bootstrapWorkspace(workspaceId, adminKey)
      const result = yield* Effect.either(bootstrapWorkspace("7e57c0de-0000-4000-8000-000000000002", adminKey))
      assert.isTrue(Either.isLeft(result) && result.left._tag === "BootstrapKeyConflict")
      assert.notInclude(Either.isLeft(result) ? result.left.message : "", Redacted.value(adminKey))
    }).pipe(Effect.provide(layer()))
  )
})
