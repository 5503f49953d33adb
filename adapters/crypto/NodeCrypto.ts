/**
 * The `Crypto` port on `node:crypto`: synchronous HMAC and hashing without the promise hop of
 * WebCrypto. Bun and Deno implement `node:crypto` too.
 *
 * Small random requests (nonces, ids: up to `pooledRandomMax` bytes) are served from a pool that
 * one `randomFillSync` call refills 4 KiB at a time, as Node does for `randomUUID`: a fill per
 * 24-byte nonce cost a measurable share of a delivery (issue 20). Every pooled byte is handed out
 * once and zeroed in the pool as it is.
 *
 * @since 0.1.0
 */
import { createHash, createHmac, createSecretKey, type KeyObject, randomFillSync, randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Crypto, type CryptoService, type HmacKey, type Part } from "../../core/ports/Crypto.ts"

const hmacHex = (key: HmacKey, parts: ReadonlyArray<Part>): string => {
  const hmac = createHmac("sha256", key.handle as KeyObject)
  for (let i = 0; i < parts.length; i++) hmac.update(parts[i]!)
  return hmac.digest("hex")
}

const sha256Hex = (data: Part): string => createHash("sha256").update(data).digest("hex")

/**
 * The largest request served from the random pool; larger ones get their own fill.
 *
 * @since 0.1.0
 */
export const pooledRandomMax = 64

const randomPoolSize = 4096

/** `size` bytes from the CSPRNG, small requests out of a pool (see the module's note). */
const makeRandomBytes = (): (size: number) => Uint8Array => {
  const pool = new Uint8Array(randomPoolSize)
  let offset = randomPoolSize
  return (size) => {
    if (size > pooledRandomMax) return randomFillSync(new Uint8Array(size))
    if (offset + size > randomPoolSize) {
      randomFillSync(pool)
      offset = 0
    }
    const bytes = pool.slice(offset, offset + size)
    pool.fill(0, offset, offset + size)
    offset += size
    return bytes
  }
}

/**
 * @since 0.1.0
 */
export const make = (): CryptoService => {
  const randomBytes = makeRandomBytes()
  return {
    unsafeHmacSha256HexSync: hmacHex,
    unsafeSha256HexSync: sha256Hex,
    importHmacKey: (secret) =>
      Effect.sync((): HmacKey => ({ _tag: "HmacKey", handle: createSecretKey(Redacted.value(secret), "utf8") })),
    hmacSha256Hex: (key, parts) => Effect.sync(() => hmacHex(key, parts)),
    sha256Hex: (data) => Effect.sync(() => sha256Hex(data)),
    randomBytes: (size) => Effect.sync(() => randomBytes(size)),
    randomUuid: Effect.sync(() => randomUUID()),
    unsafeRandomUuidSync: randomUUID
  }
}

/**
 * @since 0.1.0
 */
export const layer: Layer.Layer<Crypto> = Layer.sync(Crypto, make)
