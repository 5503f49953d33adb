/**
 * The service's keys of each connection revision, read from the secret vault and imported once per
 * process: the dispatcher signs executions with them, the reconciler signs reads, and completion
 * intake verifies completions. A revision whose secret is gone (retired) or cannot be opened has
 * none. (The customer kit's `RevisionKeys` are something else: the kit's own keys of one revision.)
 *
 * A revision's secrets are written once, when it is registered, and only ever deleted (retirement),
 * so a key once imported stays the revision's key. Whether a revision may still be used is never
 * answered here: callers read the revision's state from the connection store on every use, and a
 * retired revision's cached key is then never asked for.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Crypto } from "../../ports/Crypto.ts"
import { connectorSecretRef, SecretVault } from "../../ports/SecretVault.ts"
import { importSigningKeys, type SecretName, type SigningKeys } from "../../protocol/Signing.ts"
import type { StorageError } from "../../ports/StorageError.ts"

export type SigningKeyCache = (
  connectionId: string,
  revision: number
) => Effect.Effect<Option.Option<SigningKeys>, StorageError>

/**
 * Keys per `(connectionId, revision)`, cached for the life of the returned function, for the users
 * of one secret (`secret`: the action signing secret for the service's own messages, the completion
 * secret for completions). Only that secret is read; the other half of the answered keys is a
 * placeholder, which the purposes its users sign and verify never pick.
 *
 * Imported keys are kept as the very effect that answers them, so a delivery with keys in hand
 * runs no lookup step of its own. Concurrent calls for a revision not yet loaded share one load: a
 * dispatcher starting with a full lease would otherwise read and import the same secrets once per
 * delivery in flight. The load runs in its own fiber, so interrupting a caller interrupts only its
 * wait. A revision with no secret, or whose load failed, is not kept: the next call reads the vault
 * again.
 */
export const makeSigningKeyCache = (secret: SecretName): Effect.Effect<SigningKeyCache, never, SecretVault | Crypto> =>
  Effect.gen(function* () {
    const vault = yield* SecretVault
    const crypto = yield* Crypto
    const loaded = new Map<string, Effect.Effect<Option.Option<SigningKeys>>>()
    const loading = new Map<string, Deferred.Deferred<Option.Option<SigningKeys>, StorageError>>()
    const placeholder = Redacted.make("unused")

    const load = (connectionId: string, revision: number) =>
      Effect.gen(function* () {
        const value = yield* vault.get(connectorSecretRef(connectionId, revision, secret))
        if (Option.isNone(value)) return Option.none<SigningKeys>()
        const keys = yield* Effect.provideService(
          importSigningKeys(
            secret === "actionSigning"
              ? { actionSigning: value.value, completion: placeholder }
              : { actionSigning: placeholder, completion: value.value }
          ),
          Crypto,
          crypto
        )
        return Option.some(keys)
      }).pipe(Effect.catchTag("OpenFailed", () => Effect.succeed(Option.none<SigningKeys>())))

    return (connectionId, revision) => {
      const cacheKey = `${connectionId}:${revision}`
      const known = loaded.get(cacheKey)
      if (known !== undefined) return known
      // Registering a load and starting it happen together (uninterruptibly), so a registered load
      // always completes its `Deferred`. It runs in a fiber of its own: every caller, the one that
      // started it included, waits for it interruptibly, and an interrupted caller does not stop it
      // for the others.
      return Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          const settled = loaded.get(cacheKey)
          if (settled !== undefined) return settled
          const pending = loading.get(cacheKey)
          if (pending !== undefined) return restore(Deferred.await(pending))
          const deferred = Deferred.unsafeMake<Option.Option<SigningKeys>, StorageError>(FiberId.none)
          loading.set(cacheKey, deferred)
          const run = load(connectionId, revision).pipe(
            Effect.onExit((exit) => {
              loading.delete(cacheKey)
              if (Exit.isSuccess(exit) && Option.isSome(exit.value)) loaded.set(cacheKey, Effect.succeed(exit.value))
              return Deferred.done(deferred, exit)
            })
          )
          return Effect.zipRight(Effect.forkDaemon(run), restore(Deferred.await(deferred)))
        })
      )
    }
  })
