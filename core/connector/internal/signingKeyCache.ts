/**
 * The service's signing keys of each connection revision, read from the secret vault and imported
 * once per process: the dispatcher signs executions with them and the reconciler signs reads. A
 * revision whose secrets are gone (retired) or cannot be opened has none. (The customer kit's
 * `RevisionKeys` are something else: the kit's own keys of one revision.)
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Crypto } from "../../ports/Crypto.ts"
import { connectorSecretRef, SecretVault } from "../../ports/SecretVault.ts"
import { importSigningKeys, type SigningKeys } from "../../protocol/Signing.ts"
import type { StorageError } from "../../ports/StorageError.ts"

/**
 * @since 0.1.0
 */
export type SigningKeyCache = (connectionId: string, revision: number) => Effect.Effect<Option.Option<SigningKeys>, StorageError>

/**
 * Keys per `(connectionId, revision)`, cached for the life of the returned function. Only the
 * action signing key is needed by its users; the completion secret may already be retired.
 *
 * @since 0.1.0
 */
export const makeSigningKeyCache: Effect.Effect<SigningKeyCache, never, SecretVault | Crypto> = Effect.gen(function*() {
  const vault = yield* SecretVault
  const crypto = yield* Crypto
  const cache = new Map<string, SigningKeys>()
  return (connectionId, revision) =>
    Effect.gen(function*() {
      const cacheKey = `${connectionId}:${revision}`
      const cached = cache.get(cacheKey)
      if (cached !== undefined) return Option.some(cached)
      const actionSigning = yield* vault.get(connectorSecretRef(connectionId, revision, "actionSigning"))
      if (Option.isNone(actionSigning)) return Option.none()
      const completion = yield* vault.get(connectorSecretRef(connectionId, revision, "completion"))
      const keys = yield* Effect.provideService(
        importSigningKeys({ actionSigning: actionSigning.value, completion: Option.getOrElse(completion, () => Redacted.make("unused")) }),
        Crypto,
        crypto
      )
      cache.set(cacheKey, keys)
      return Option.some(keys)
    }).pipe(Effect.catchTag("OpenFailed", () => Effect.succeed(Option.none<SigningKeys>())))
})
