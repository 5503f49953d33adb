/**
 * The `Crypto` port: HMAC-SHA-256, SHA-256 and a CSPRNG, the only cryptography the protocol needs.
 *
 * `layerWebCrypto` is the portable implementation (WebCrypto is global on Node, Bun and Deno);
 * `adapters/crypto/NodeCrypto.ts` is the fast synchronous one for `node:crypto` runtimes.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { toHex } from "../protocol/Hex.ts"

/**
 * An imported HMAC key. Opaque: each layer keeps its own handle (a non-extractable `CryptoKey`, a
 * `KeyObject`), so the secret itself is not reachable from, or printed with, the key.
 *
 * @since 0.1.0
 */
export interface HmacKey {
  readonly _tag: "HmacKey"
  readonly handle: unknown
}

/**
 * A message part to authenticate: text (encoded as UTF-8) or raw bytes.
 *
 * @since 0.1.0
 */
export type Part = string | Uint8Array

/**
 * @since 0.1.0
 */
export interface CryptoService {
  /** Imports a secret (its UTF-8 bytes) as an HMAC-SHA-256 key. */
  readonly importHmacKey: (secret: Redacted.Redacted<string>) => Effect.Effect<HmacKey>
  /**
   * HMAC-SHA-256 over the concatenation of `parts`, as lowercase hex: the protocol only ever
   * compares and sends MACs as hex (D2), and native hex encoding is the cheapest path.
   */
  readonly hmacSha256Hex: (key: HmacKey, parts: ReadonlyArray<Part>) => Effect.Effect<string>
  /**
   * The same, computed synchronously, for implementations that can (`node:crypto`). Verification
   * of every inbound message takes this path when present; WebCrypto is asynchronous and has none.
   */
  readonly unsafeHmacSha256HexSync?: (key: HmacKey, parts: ReadonlyArray<Part>) => string
  /** SHA-256 of `data` (text as UTF-8), as lowercase hex (D3). */
  readonly sha256Hex: (data: Part) => Effect.Effect<string>
  /** The same, computed synchronously, for implementations that can (`node:crypto`). */
  readonly unsafeSha256HexSync?: (data: Part) => string
  /** `size` bytes from a cryptographically secure generator. */
  readonly randomBytes: (size: number) => Effect.Effect<Uint8Array>
  /**
   * A random version 4 UUID, for implementations with a native generator (`node:crypto` keeps a
   * pool of random bytes for it); without it, UUIDs are built from `randomBytes`.
   */
  readonly randomUuid?: Effect.Effect<string>
}

/**
 * @since 0.1.0
 */
export class Crypto extends Context.Tag("@accord/core/Crypto")<Crypto, CryptoService>() {}

const encoder = new TextEncoder()

type Subtle = typeof globalThis.crypto.subtle
type WebCryptoKey = Awaited<ReturnType<Subtle["importKey"]>>

const toBytes = (part: Part): Uint8Array => (typeof part === "string" ? encoder.encode(part) : part)

const concat = (parts: ReadonlyArray<Part>): Uint8Array => {
  if (parts.length === 1) return toBytes(parts[0]!)
  const chunks = parts.map(toBytes)
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

/**
 * The WebCrypto implementation over `globalThis.crypto`.
 *
 * @since 0.1.0
 */
export const makeWebCrypto = (subtle: Subtle, getRandomValues: (a: Uint8Array) => Uint8Array): CryptoService => ({
  importHmacKey: (secret) =>
    Effect.promise(() =>
      subtle.importKey("raw", encoder.encode(Redacted.value(secret)), { name: "HMAC", hash: "SHA-256" }, false, [
        "sign"
      ])
    ).pipe(Effect.map((handle): HmacKey => ({ _tag: "HmacKey", handle }))),
  hmacSha256Hex: (key, parts) =>
    Effect.promise(() => subtle.sign("HMAC", key.handle as WebCryptoKey, concat(parts))).pipe(
      Effect.map((buffer) => toHex(new Uint8Array(buffer)))
    ),
  sha256Hex: (data) =>
    Effect.promise(() => subtle.digest("SHA-256", toBytes(data))).pipe(
      Effect.map((buffer) => toHex(new Uint8Array(buffer)))
    ),
  randomBytes: (size) => Effect.sync(() => getRandomValues(new Uint8Array(size)))
})

/**
 * @since 0.1.0
 */
export const layerWebCrypto: Layer.Layer<Crypto> = Layer.sync(Crypto, () =>
  makeWebCrypto(globalThis.crypto.subtle, (a) => globalThis.crypto.getRandomValues(a))
)
