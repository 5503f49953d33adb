/**
 * The service's key cache: concurrent first calls share one vault read and import, loaded keys are
 * answered without reading again, a revision with no secret, whose secret cannot be opened or whose
 * read failed is read again on the next call, and a cache answers keys only for the secret it is
 * for (a revision missing that secret has none, whatever else it holds).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import { makeSigningKeyCache, type SigningKeyCache } from "../../../../core/connector/internal/signingKeyCache.ts"
import { Crypto } from "../../../../core/ports/Crypto.ts"
import { OpenFailed } from "../../../../core/protocol/Cipher.ts"
import type { SecretName } from "../../../../core/protocol/Signing.ts"
import { connectorSecretRef, SecretVault, type SecretVaultService } from "../../../../core/ports/SecretVault.ts"
import { StorageError } from "../../../../core/ports/StorageError.ts"

/** A vault over a map that counts reads and can be told to fail the next ones. */
const countingVault = () => {
  const secrets = new Map<string, string>()
  const state = { reads: 0, fail: undefined as "storage" | "open" | undefined }
  const service: SecretVaultService = {
    put: (ref, secret) => Effect.sync(() => void secrets.set(ref, Redacted.value(secret))),
    get: (ref) =>
      Effect.suspend(() => {
        state.reads++
        const secret = secrets.get(ref)
        // Every read waits a turn, so concurrent callers overlap as they do against a database.
        const answer: Effect.Effect<
          Option.Option<Redacted.Redacted<string>>,
          StorageError | OpenFailed
        > = state.fail === "storage"
          ? Effect.fail(new StorageError({ operation: "secret.get", message: "down" }))
          : state.fail === "open"
            ? Effect.fail(new OpenFailed())
            : Effect.succeed(secret === undefined ? Option.none() : Option.some(Redacted.make(secret)))
        return Effect.zipRight(Effect.yieldNow(), answer)
      }),
    retire: (ref) => Effect.sync(() => secrets.delete(ref))
  }
  const put = (connectionId: string, revision: number, only?: SecretName) => {
    if (only !== "completion")
      secrets.set(
        connectorSecretRef(connectionId, revision, "actionSigning"),
        secretOf(connectionId, revision, "actionSigning")
      )
    if (only !== "actionSigning")
      secrets.set(
        connectorSecretRef(connectionId, revision, "completion"),
        secretOf(connectionId, revision, "completion")
      )
  }
  return { service, state, put }
}

const secretOf = (connectionId: string, revision: number, name: SecretName) =>
  `${name === "actionSigning" ? "as" : "cs"}_${connectionId}_${revision}_${"x".repeat(32)}`

const withCache = <A, E>(
  body: (cache: SigningKeyCache, vault: ReturnType<typeof countingVault>) => Effect.Effect<A, E, Crypto>,
  secret: SecretName = "actionSigning"
) => {
  const vault = countingVault()
  return Effect.flatMap(makeSigningKeyCache(secret), (cache) => body(cache, vault)).pipe(
    Effect.provideService(SecretVault, vault.service),
    Effect.provide(NodeCrypto.layer)
  )
}

describe("signing key cache", () => {
  it.effect("concurrent first calls for one revision read the vault once and get the same keys", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        vault.put("conn_1", 1)
        const all = yield* Effect.all(
          Array.from({ length: 50 }, () => cache("conn_1", 1)),
          { concurrency: "unbounded" }
        )
        // One load: the one secret the cache is for.
        assert.strictEqual(vault.state.reads, 1)
        const first = Option.getOrThrow(all[0]!)
        for (const keys of all) assert.strictEqual(Option.getOrThrow(keys), first)
        yield* cache("conn_1", 1)
        assert.strictEqual(vault.state.reads, 1)
      })
    )
  )

  it.effect("each revision has its own keys", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        vault.put("conn_1", 1)
        vault.put("conn_1", 2)
        const [one, two] = yield* Effect.all([cache("conn_1", 1), cache("conn_1", 2)], { concurrency: "unbounded" })
        assert.notStrictEqual(Option.getOrThrow(one), Option.getOrThrow(two))
        assert.strictEqual(vault.state.reads, 2)
      })
    )
  )

  it.effect("a revision with no secret is read again on the next call", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        assert.isTrue(Option.isNone(yield* cache("conn_1", 1)))
        vault.put("conn_1", 1)
        assert.isTrue(Option.isSome(yield* cache("conn_1", 1)))
      })
    )
  )

  it.effect("a secret that cannot be opened is no keys, and is read again on the next call", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        vault.put("conn_1", 1)
        vault.state.fail = "open"
        assert.isTrue(Option.isNone(yield* cache("conn_1", 1)))
        vault.state.fail = undefined
        assert.isTrue(Option.isSome(yield* cache("conn_1", 1)))
      })
    )
  )

  it.effect("a failed read fails every caller waiting on it, and the next call reads again", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        vault.put("conn_1", 1)
        vault.state.fail = "storage"
        const failed = yield* Effect.all(
          Array.from({ length: 5 }, () => Effect.either(cache("conn_1", 1))),
          { concurrency: "unbounded" }
        )
        for (const result of failed) assert.isTrue(result._tag === "Left" && result.left._tag === "StorageError")
        assert.strictEqual(vault.state.reads, 1)
        vault.state.fail = undefined
        assert.isTrue(Option.isSome(yield* cache("conn_1", 1)))
      })
    )
  )

  it.effect("callers waiting on a load get its keys when the caller that started it is interrupted", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        vault.put("conn_1", 1)
        const starter = yield* Effect.fork(cache("conn_1", 1))
        const waiter = yield* Effect.fork(cache("conn_1", 1))
        yield* Effect.yieldNow()
        yield* Effect.fork(starter.interruptAsFork(starter.id()))
        const keys = yield* waiter.await
        assert.isTrue(keys._tag === "Success" && Option.isSome(keys.value))
        assert.strictEqual(vault.state.reads, 1)
      })
    )
  )

  it.effect("a load whose only caller was interrupted still completes, and its keys answer the next call", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        vault.put("conn_1", 1)
        const starter = yield* Effect.fork(cache("conn_1", 1))
        yield* Effect.yieldNow()
        const interrupted = yield* starter.interruptAsFork(starter.id()).pipe(Effect.zipRight(starter.await))
        assert.strictEqual(interrupted._tag, "Failure")
        assert.isTrue(Option.isSome(yield* cache("conn_1", 1)))
        assert.strictEqual(vault.state.reads, 1)
      })
    )
  )

  it.effect("a caller waiting on a load can be interrupted; the others still get the keys", () =>
    withCache((cache, vault) =>
      Effect.gen(function* () {
        vault.put("conn_1", 1)
        const first = yield* Effect.fork(cache("conn_1", 1))
        const waiter = yield* Effect.fork(cache("conn_1", 1))
        yield* Effect.yieldNow()
        yield* waiter.interruptAsFork(waiter.id())
        const keys = yield* first.await
        assert.isTrue(keys._tag === "Success" && Option.isSome(keys.value))
        assert.strictEqual((yield* waiter.await)._tag, "Failure")
        assert.strictEqual(vault.state.reads, 1)
      })
    )
  )

  for (const secret of ["actionSigning", "completion"] as const) {
    const other = secret === "actionSigning" ? "completion" : "actionSigning"

    it.effect(`a cache for the ${secret} secret answers that secret's key`, () =>
      withCache(
        (cache, vault) =>
          Effect.gen(function* () {
            vault.put("conn_1", 1)
            const crypto = yield* Crypto
            const keys = Option.getOrThrow(yield* cache("conn_1", 1))
            const expected = yield* crypto.importHmacKey(Redacted.make(secretOf("conn_1", 1, secret)))
            const mac = yield* crypto.hmacSha256Hex(expected, ["message"])
            assert.isTrue(yield* crypto.verifyHmacSha256Hex(keys[secret], ["message"], mac))
            // The other half is a placeholder that verifies nothing the other secret signed.
            const otherMac = yield* crypto.hmacSha256Hex(
              yield* crypto.importHmacKey(Redacted.make(secretOf("conn_1", 1, other))),
              ["message"]
            )
            assert.isFalse(yield* crypto.verifyHmacSha256Hex(keys[other], ["message"], otherMac))
          }),
        secret
      )
    )

    it.effect(`a cache for the ${secret} secret has no keys for a revision holding only the ${other} secret`, () =>
      withCache(
        (cache, vault) =>
          Effect.gen(function* () {
            vault.put("conn_1", 1, other)
            assert.isTrue(Option.isNone(yield* cache("conn_1", 1)))
          }),
        secret
      )
    )
  }
})
