/**
 * What the service needs to call a customer endpoint and check the signed answer, shared by the
 * dispatcher (executions) and the reconciler (payment reads): a signer, a verifier, the signing keys
 * of each connection revision, and the per-request time-out option.
 */
import * as Effect from "effect/Effect"
import type { Crypto } from "../../ports/Crypto.ts"
import { usedNoncesContext } from "../../protocol/UsedNonces.ts"
import type { SecretVault } from "../../ports/SecretVault.ts"
import { makeSigner, type Signer } from "../../protocol/Signing.ts"
import { makeVerifier, type Verifier } from "../../protocol/Verification.ts"
import { makeSigningKeyCache, type SigningKeyCache } from "./signingKeyCache.ts"

export interface Outbound {
  readonly signer: Signer
  readonly verifier: Verifier
  readonly keysFor: SigningKeyCache
  /** Spread into a transport request: the caller's time-out, or none (the transport's own). */
  readonly timeout: { readonly timeoutMillis?: number }
}

/**
 * Builds the outbound tools of one dispatcher or reconciler.
 */
export const makeOutbound = (options: {
  readonly timeoutMillis?: number
}): Effect.Effect<Outbound, never, SecretVault | Crypto> =>
  Effect.gen(function* () {
    const signer = yield* makeSigner
    // An answer must echo the fresh nonce of the one request it answers and arrives on the
    // connection this process opened for it, so no other process can ever be shown it: its nonce is
    // remembered in this process's memory, which costs no database write per request.
    const verifier = yield* Effect.provide(makeVerifier, usedNoncesContext())
    // Every message the service signs, and every answer it checks, uses the action signing secret.
    const keysFor = yield* makeSigningKeyCache("actionSigning")
    const timeout = options.timeoutMillis === undefined ? {} : { timeoutMillis: options.timeoutMillis }
    return { signer, verifier, keysFor, timeout }
  })
