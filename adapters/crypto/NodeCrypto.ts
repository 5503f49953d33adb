/**
 * The `Crypto` port on `node:crypto`: synchronous HMAC and hashing without the promise hop of
 * WebCrypto. Bun and Deno implement `node:crypto` too.
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
 * @since 0.1.0
 */
export const make = (): CryptoService => ({
  unsafeHmacSha256HexSync: hmacHex,
  unsafeSha256HexSync: sha256Hex,
  importHmacKey: (secret) =>
    Effect.sync((): HmacKey => ({ _tag: "HmacKey", handle: createSecretKey(Redacted.value(secret), "utf8") })),
  hmacSha256Hex: (key, parts) => Effect.sync(() => hmacHex(key, parts)),
  sha256Hex: (data) => Effect.sync(() => sha256Hex(data)),
  randomBytes: (size) => Effect.sync(() => randomFillSync(new Uint8Array(size))),
  randomUuid: Effect.sync(() => randomUUID())
})

/**
 * @since 0.1.0
 */
export const layer: Layer.Layer<Crypto> = Layer.sync(Crypto, make)
