/**
 * The `Crypto` port on `node:crypto`: HMAC and hashing without the promise hop of WebCrypto, so
 * the layer provides `CryptoSync` beside `Crypto` (the same operations as plain calls). Bun and
 * Deno implement `node:crypto` too.
 *
 * HMAC-SHA-256 is computed from each key's padded blocks (RFC 2104: `H((K ^ opad) || H((K ^ ipad) ||
 * m))`), prepared once when the key is imported, with two calls of the one-shot `crypto.hash`: a
 * `createHmac` per message re-derives both blocks from the key, and its `Hmac` object, two `update`
 * calls and `digest` cost more than the copy of the message into a scratch buffer that the
 * one-shot needs (measured: about 0.4 µs of a 2.7 µs MAC over 1 KiB). Messages larger than
 * `oneShotMax`, and runtimes without `crypto.hash` (Node before 20.12), take `createHmac` with the
 * key's `KeyObject`. The padded blocks sit only in the key's closure, never on the key object.
 *
 * Small random requests (nonces, ids: up to `pooledRandomMax` bytes) are served from a pool that
 * one `randomFillSync` call refills 4 KiB at a time, as Node does for `randomUUID`: a fill per
 * 24-byte nonce cost a measurable share of a delivery. Every pooled byte is handed out
 * once and zeroed in the pool as it is.
 */
import * as nodeCrypto from "node:crypto"
import { createHash, createHmac, createSecretKey, randomFillSync, randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Context from "effect/Context"
import {
  Crypto,
  type CryptoService,
  CryptoSync,
  type CryptoSyncService,
  type HmacKey,
  type Part
} from "../../core/ports/Crypto.ts"
import { constantTimeEqual } from "../../core/protocol/Hex.ts"

type OneShot = (algorithm: string, data: Part, outputEncoding: "hex" | "latin1") => string

/** `crypto.hash` (Node 20.12+, 21.7+), or `undefined` on a runtime without it. */
const oneShot = (nodeCrypto as { readonly hash?: OneShot }).hash

/**
 * The largest message (bytes, text counted at three bytes a character) whose HMAC is taken with the
 * one-shot hash; larger ones stream through `createHmac`, so the scratch buffer stays small.
 */
export const oneShotMax = 64 * 1024

const blockSize = 64

/** What `HmacKey.handle` holds for this layer: the MAC as a function; no key bytes are reachable. */
interface NodeHmacHandle {
  readonly hex: (parts: ReadonlyArray<Part>) => string
}

/** Per layer instance: the buffer a message is assembled in, behind its key's inner block. */
interface Scratch {
  buffer: Buffer
}

const makeHmacHandle = (secret: string, scratch: Scratch): NodeHmacHandle => {
  const keyObject = createSecretKey(secret, "utf8")
  const streaming = (parts: ReadonlyArray<Part>): string => {
    const hmac = createHmac("sha256", keyObject)
    for (let i = 0; i < parts.length; i++) hmac.update(parts[i]!)
    return hmac.digest("hex")
  }
  if (oneShot === undefined) return { hex: streaming }
  // RFC 2104: a key longer than the block is replaced by its hash; then both pads.
  let key = Buffer.from(secret, "utf8")
  if (key.length > blockSize) {
    const long = key
    key = createHash("sha256").update(long).digest()
    long.fill(0)
  }
  const inner = Buffer.alloc(blockSize, 0x36)
  // The outer hash's input: the outer block, then the inner digest.
  const outer = Buffer.alloc(blockSize + 32, 0x5c)
  for (let i = 0; i < key.length; i++) {
    inner[i]! ^= key[i]!
    outer[i]! ^= key[i]!
  }
  key.fill(0)
  const hash = oneShot
  return {
    hex: (parts) => {
      let size = blockSize
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i]!
        size += typeof part === "string" ? part.length * 3 : part.length
      }
      if (size > oneShotMax) return streaming(parts)
      if (size > scratch.buffer.length) scratch.buffer = Buffer.alloc(Math.max(size, 2 * scratch.buffer.length))
      const buffer = scratch.buffer
      buffer.set(inner, 0)
      let at = blockSize
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i]!
        if (typeof part === "string") {
          at += buffer.write(part, at, "utf8")
        } else {
          buffer.set(part, at)
          at += part.length
        }
      }
      // The inner digest as a one-byte string (`latin1`, a byte per character) written into the
      // outer block: a `Buffer` result cost a backing store allocated and freed per message.
      outer.write(hash("sha256", buffer.subarray(0, at), "latin1"), blockSize, "latin1")
      buffer.fill(0, 0, blockSize)
      return hash("sha256", outer, "hex")
    }
  }
}

const hmacHex = (key: HmacKey, parts: ReadonlyArray<Part>): string => (key.handle as NodeHmacHandle).hex(parts)

/** SHA-256 in hex: the one-shot `crypto.hash` where the runtime has it (about half of `createHash`'s cost per ingested event's payload), else `createHash`. */
const sha256Hex: (data: Part) => string =
  oneShot === undefined
    ? (data) => createHash("sha256").update(data).digest("hex")
    : (data) => oneShot("sha256", data, "hex")

/**
 * The largest request served from the random pool; larger ones get their own fill.
 */
export const pooledRandomMax = 64

const randomPoolSize = 4096

/** `size` bytes from the CSPRNG, small requests out of a pool (see the module's note). */
const makeRandomBytes = (): ((size: number) => Uint8Array) => {
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
 * The synchronous operations of one layer instance (its random pool and scratch buffer); `make`
 * wraps the same functions in effects.
 */
export const makeSync = (): CryptoSyncService => ({
  hmacSha256Hex: hmacHex,
  sha256Hex,
  randomBytes: makeRandomBytes(),
  randomUuid: randomUUID
})

/** The `Crypto` service over `sync`'s operations (its keys are imported for `sync` too). */
export const make = (sync: CryptoSyncService = makeSync()): CryptoService => {
  const scratch: Scratch = { buffer: Buffer.alloc(2048) }
  return {
    importHmacKey: (secret) =>
      Effect.sync((): HmacKey => ({ _tag: "HmacKey", handle: makeHmacHandle(Redacted.value(secret), scratch) })),
    hmacSha256Hex: (key, parts) => Effect.sync(() => sync.hmacSha256Hex(key, parts)),
    verifyHmacSha256Hex: (key, parts, macHex) =>
      Effect.sync(() => constantTimeEqual(sync.hmacSha256Hex(key, parts), macHex)),
    sha256Hex: (data) => Effect.sync(() => sync.sha256Hex(data)),
    randomBytes: (size) => Effect.sync(() => sync.randomBytes(size))
  }
}

/** `Crypto` and, over the same functions, `CryptoSync`. */
export const layer: Layer.Layer<Crypto | CryptoSync> = Layer.syncContext(() => {
  const sync = makeSync()
  return Context.make(Crypto, make(sync)).pipe(Context.add(CryptoSync, sync))
})
