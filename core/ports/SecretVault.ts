/**
 * The `SecretVault` port: server-side storage of connector secrets (spec "Storage of secrets";
 * docs/decisions.md, "Secret handling").
 *
 * Secrets go in as `Redacted` and are sealed with the `Cipher` (AES-256-GCM under the master key,
 * bound to their reference) before they reach any store, so the table, or the memory map, only
 * ever holds ciphertext, and never the connector row. Retiring deletes the ciphertext.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Cipher, type OpenFailed } from "../protocol/Cipher.ts"
import type { StorageError } from "./StorageError.ts"

/**
 * Where sealed secrets live: the part each storage adapter implements.
 */
export interface SealedSecretTable {
  /** Stores a sealed value under `ref`, replacing any. */
  readonly put: (ref: string, sealed: string, now: number) => Effect.Effect<void, StorageError>
  /** The sealed value stored under `ref`, if any. */
  readonly get: (ref: string) => Effect.Effect<Option.Option<string>, StorageError>
  /** Deletes the sealed value; `true` when there was one. */
  readonly delete: (ref: string) => Effect.Effect<boolean, StorageError>
}

/** The secret port: seals secrets under the master key by reference, opens and retires them. */
export interface SecretVaultService {
  /** Seals the secret under the master key, bound to `ref`, and stores it. */
  readonly put: (ref: string, secret: Redacted.Redacted<string>, now: number) => Effect.Effect<void, StorageError>
  /**
   * Opens the secret stored under `ref`, if any; fails when it does not open under the master key.
   */
  readonly get: (ref: string) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, StorageError | OpenFailed>
  /** Deletes the sealed secret; `true` when there was one. */
  readonly retire: (ref: string) => Effect.Effect<boolean, StorageError>
}

/** The service tag of the secret vault. */
export class SecretVault extends Context.Tag("@accord/core/SecretVault")<SecretVault, SecretVaultService>() {}

/**
 * The associated data a connector secret is sealed with: binds the ciphertext to its reference.
 */
export const associatedData = (ref: string): string => `accord-secret:${ref}`

/**
 * A vault over any table of sealed values.
 */
export const make = (table: SealedSecretTable): Effect.Effect<SecretVaultService, never, Cipher> =>
  Effect.map(Cipher, (cipher) => ({
    put: (ref, secret, now) =>
      Effect.flatMap(cipher.seal(Redacted.value(secret), associatedData(ref)), (sealed) => table.put(ref, sealed, now)),
    get: (ref) =>
      Effect.flatMap(table.get(ref), (sealed) =>
        Option.isNone(sealed)
          ? Effect.succeedNone
          : Effect.map(cipher.open(sealed.value, associatedData(ref)), (plain) => Option.some(Redacted.make(plain)))
      ),
    retire: (ref) => table.delete(ref)
  }))

/**
 * The reference of a connector secret: one per connection, revision and secret name.
 */
export const connectorSecretRef = (
  connectionId: string,
  revision: number,
  name: "actionSigning" | "completion"
): string => `connector:${connectionId}:${revision}:${name}`
