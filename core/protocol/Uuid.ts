/**
 * UUIDs: the one UUID schema and test every route and message uses (canonical 8-4-4-4-12 hex, any
 * case, as `Schema.UUID` accepts), and fresh version 4 UUIDs from the `Crypto` port.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Crypto, type CryptoService } from "../ports/Crypto.ts"
import { toHex } from "./Hex.ts"

/**
 * A UUID in its canonical text form.
 *
 * @since 0.1.0
 */
export const Uuid: typeof Schema.UUID = Schema.UUID

/**
 * Whether `value` is a UUID in its canonical text form (see `Uuid`).
 *
 * @since 0.1.0
 */
export const isUuid: (value: unknown) => value is string = Schema.is(Uuid)

/**
 * A random version 4 UUID from the `Crypto` port (key ids).
 *
 * @since 0.1.0
 */
export const randomUuid: Effect.Effect<string, never, Crypto> = Effect.flatMap(Crypto, (crypto) => randomUuidWith(crypto))

/**
 * A random version 4 UUID with a `Crypto` already in hand: the implementation's native generator
 * when it has one, else 16 random bytes with the version and variant bits set.
 *
 * @since 0.1.0
 */
export const randomUuidWith = (crypto: CryptoService): Effect.Effect<string> =>
  crypto.randomUuid ?? Effect.map(crypto.randomBytes(16), (bytes) => {
    bytes[6] = (bytes[6]! & 0x0f) | 0x40
    bytes[8] = (bytes[8]! & 0x3f) | 0x80
    const hex = toHex(bytes)
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
  })

