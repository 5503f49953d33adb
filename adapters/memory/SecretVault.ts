/**
 * SecretVault in memory: the vault (`SecretVault.make`) over a map of sealed values.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { make, type SealedSecretTable, SecretVault } from "../../core/ports/SecretVault.ts"
import type { Cipher } from "../../core/protocol/Cipher.ts"

/**
 * An in-memory sealed table; exposed so tests can see that only ciphertext is kept.
 */
export const makeTable = (): SealedSecretTable & { readonly rows: ReadonlyMap<string, string> } => {
  const rows = new Map<string, string>()
  return {
    rows,
    put: (ref, sealed) => Effect.sync(() => void rows.set(ref, sealed)),
    get: (ref) => Effect.sync(() => Option.fromNullable(rows.get(ref))),
    delete: (ref) => Effect.sync(() => rows.delete(ref))
  }
}

/**
 * A fresh, empty table per build (the table is made when the layer is built, not when the module loads).
 */
export const layerMemory: Layer.Layer<SecretVault, never, Cipher> = Layer.effect(
  SecretVault,
  Effect.suspend(() => make(makeTable()))
)
