/**
 * The `Crypto` port: HMAC-SHA-256, SHA-256 and a CSPRNG, the only cryptography the protocol needs.
 *
 * Two contracts. `Crypto` is every implementation's, its operations effects: the portable one is
 * `adapters/crypto/WebCrypto.ts` (WebCrypto is global on Node, Bun and Deno). `CryptoSync` is the
 * same operations as plain calls, a separate capability that only an implementation which computes
 * without waiting provides, beside its `Crypto` (`adapters/crypto/NodeCrypto.ts`). A hot path looks
 * it up once, when it is built (`Effect.serviceOption`), and runs without an effect step when it is
 * there; with or without it the answers are the same.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"

/**
 * An imported HMAC key. Opaque: each layer keeps its own handle (a non-extractable `CryptoKey`, a
 * `KeyObject`), so the secret itself is not reachable from, or printed with, the key.
 */
export interface HmacKey {
  readonly _tag: "HmacKey"
  readonly handle: unknown
}

/**
 * A message part to authenticate: text (encoded as UTF-8) or raw bytes.
 */
export type Part = string | Uint8Array

/**
 * The crypto port core uses: HMAC-SHA-256 keys, SHA-256, random bytes and constant-time
 * verification.
 */
export interface CryptoService {
  /** Imports a secret (its UTF-8 bytes) as an HMAC-SHA-256 key. */
  readonly importHmacKey: (secret: Redacted.Redacted<string>) => Effect.Effect<HmacKey>
  /**
   * HMAC-SHA-256 over the concatenation of `parts`, as lowercase hex: the protocol only ever
   * compares and sends MACs as lowercase hex, and native hex encoding is the cheapest path.
   */
  readonly hmacSha256Hex: (key: HmacKey, parts: ReadonlyArray<Part>) => Effect.Effect<string>
  /**
   * Whether `macHex` (64 lowercase hex characters, anything else is `false`) is the HMAC-SHA-256 of
   * `parts`, compared in constant time. An implementation without a native verify computes the MAC
   * and compares with `Hex.constantTimeEqual`; WebCrypto's `subtle.verify` skips the hex encoding.
   */
  readonly verifyHmacSha256Hex: (key: HmacKey, parts: ReadonlyArray<Part>, macHex: string) => Effect.Effect<boolean>
  /** SHA-256 of `data` (text as UTF-8), as lowercase hex, the form of every protocol digest. */
  readonly sha256Hex: (data: Part) => Effect.Effect<string>
  /** `size` bytes from a cryptographically secure generator. */
  readonly randomBytes: (size: number) => Effect.Effect<Uint8Array>
}

/** The service tag of the crypto port (`node:crypto` or WebCrypto). */
export class Crypto extends Context.Tag("@accord/core/Crypto")<Crypto, CryptoService>() {}

/**
 * `Crypto`'s operations as synchronous calls, on the keys of the `Crypto` provided beside it: each
 * answers what the effect of the same name answers. Provided only by implementations that compute
 * without waiting (`node:crypto`); WebCrypto's digests and MACs are promises and it provides none.
 */
export interface CryptoSyncService {
  /** HMAC-SHA-256 of the parts, as lowercase hex, at once. */
  readonly hmacSha256Hex: (key: HmacKey, parts: ReadonlyArray<Part>) => string
  /** SHA-256 of the data, as lowercase hex, at once. */
  readonly sha256Hex: (data: Part) => string
  /** `size` bytes from a CSPRNG, at once. */
  readonly randomBytes: (size: number) => Uint8Array
  /** A random version 4 UUID (`node:crypto` keeps a pool of random bytes for it). */
  readonly randomUuid: () => string
}

/**
 * The service tag of the crypto port's synchronous form, provided where the platform allows it
 * (`node:crypto`).
 */
export class CryptoSync extends Context.Tag("@accord/core/CryptoSync")<CryptoSync, CryptoSyncService>() {}
