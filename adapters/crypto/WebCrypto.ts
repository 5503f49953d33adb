/**
 * The portable `Crypto` implementation over WebCrypto (`globalThis.crypto`, on Node, Bun and
 * Deno). Its digests and MACs are promises, so it provides no `CryptoSync`.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Crypto, type CryptoService, type HmacKey, type Part } from "../../core/ports/Crypto.ts"
import { toHex } from "../../core/protocol/Hex.ts"

const encoder = new TextEncoder()

type Subtle = typeof globalThis.crypto.subtle
type WebCryptoKey = Awaited<ReturnType<Subtle["importKey"]>>

const toBytes = (part: Part): Uint8Array => (typeof part === "string" ? encoder.encode(part) : part)

/** The parts as one buffer (WebCrypto signs one buffer): the common two-part case without arrays. */
const concat = (parts: ReadonlyArray<Part>): Uint8Array => {
  if (parts.length === 1) return toBytes(parts[0]!)
  if (parts.length === 2) {
    const first = toBytes(parts[0]!)
    const second = toBytes(parts[1]!)
    const out = new Uint8Array(first.length + second.length)
    out.set(first)
    out.set(second, first.length)
    return out
  }
  const chunks = parts.map(toBytes)
  let length = 0
  for (const chunk of chunks) length += chunk.length
  const out = new Uint8Array(length)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

/** 64 lowercase hex characters as 32 bytes; `undefined` for anything else. */
const macBytes = (hex: string): Uint8Array | undefined => {
  if (hex.length !== 64) return undefined
  const out = new Uint8Array(32)
  for (let i = 0; i < 32; i++) {
    const high = hexValue(hex.charCodeAt(2 * i))
    const low = hexValue(hex.charCodeAt(2 * i + 1))
    if (high < 0 || low < 0) return undefined
    out[i] = (high << 4) | low
  }
  return out
}
const hexValue = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1)

/**
 * How many imported keys the WebCrypto layer keeps (see `make`).
 */
export const keyCacheSize = 256

/**
 * The WebCrypto implementation over `globalThis.crypto`.
 *
 * Each secret's `CryptoKey` is imported once and kept (at most `keyCacheSize` keys, the
 * least recently used dropped first), so a caller that holds only the secret (a completion's key,
 * opened from the vault per request) does not import it again. The cache is keyed by the SHA-256
 * of a random per-instance salt followed by the secret, never by the secret: the secret's bytes
 * are zeroed once digested and imported, and the key is non-extractable.
 */
export const make = (subtle: Subtle, getRandomValues: (a: Uint8Array) => Uint8Array): CryptoService => {
  const salt = getRandomValues(new Uint8Array(32))
  const keys = new Map<string, HmacKey>()
  const cacheKeyOf = async (secret: Uint8Array): Promise<string> => {
    const salted = new Uint8Array(salt.length + secret.length)
    salted.set(salt)
    salted.set(secret, salt.length)
    try {
      return toHex(new Uint8Array(await subtle.digest("SHA-256", salted)))
    } finally {
      salted.fill(0)
    }
  }
  const importHmacKey = async (secret: Redacted.Redacted<string>): Promise<HmacKey> => {
    const bytes = encoder.encode(Redacted.value(secret))
    try {
      const cacheKey = await cacheKeyOf(bytes)
      const cached = keys.get(cacheKey)
      if (cached !== undefined) {
        // Most recently used last: the first entry is the one to drop.
        keys.delete(cacheKey)
        keys.set(cacheKey, cached)
        return cached
      }
      const handle = await subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"])
      const key: HmacKey = { _tag: "HmacKey", handle }
      keys.set(cacheKey, key)
      if (keys.size > keyCacheSize) keys.delete(keys.keys().next().value!)
      return key
    } finally {
      bytes.fill(0)
    }
  }
  return {
    importHmacKey: (secret) => Effect.promise(() => importHmacKey(secret)),
    hmacSha256Hex: (key, parts) =>
      Effect.promise(() => subtle.sign("HMAC", key.handle as WebCryptoKey, concat(parts))).pipe(
        Effect.map((buffer) => toHex(new Uint8Array(buffer)))
      ),
    verifyHmacSha256Hex: (key, parts, macHex) => {
      const mac = macBytes(macHex)
      return mac === undefined
        ? Effect.succeed(false)
        : Effect.promise(() => subtle.verify("HMAC", key.handle as WebCryptoKey, mac, concat(parts)))
    },
    sha256Hex: (data) =>
      Effect.promise(() => subtle.digest("SHA-256", toBytes(data))).pipe(
        Effect.map((buffer) => toHex(new Uint8Array(buffer)))
      ),
    randomBytes: (size) => Effect.sync(() => getRandomValues(new Uint8Array(size)))
  }
}

/**
 * The `Crypto` port over the runtime's global WebCrypto (`crypto.subtle`), for hosts without
 * `node:crypto`.
 */
export const layer: Layer.Layer<Crypto> = Layer.sync(Crypto, () =>
  make(globalThis.crypto.subtle, (a) => globalThis.crypto.getRandomValues(a))
)
