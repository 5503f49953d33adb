/**
 * UUIDs: the one UUID schema every route, parameter and message decodes with, fresh version 4
 * UUIDs from the `Crypto` port, and time-ordered version 7 UUIDs for rows written at a high rate.
 *
 * RFC 9562, section 4: the hex digits "are output as lower case characters and are case
 * insensitive on input". So a UUID is taken in any case and decoded to lower case, the form every
 * UUID Accord makes and stores has: the same identifier names the same row or catalog entry
 * however its sender wrote it (docs/decisions.md, "UUIDs in any case").
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Option from "effect/Option"
import { Crypto, type CryptoService, CryptoSync, type CryptoSyncService } from "../ports/Crypto.ts"
import { toHex } from "./Hex.ts"

/** The canonical text form: 8-4-4-4-12 lower-case hex digits. */
const CanonicalUuid = Schema.UUID.pipe(Schema.lowercased()).annotations({ identifier: "CanonicalUuid" })

/**
 * A UUID: 8-4-4-4-12 hex digits in any case, decoded to lower case (encoding takes the lower-case
 * form only).
 */
export const Uuid: Schema.Schema<string> = Schema.transform(Schema.UUID, CanonicalUuid, {
  strict: true,
  decode: (text) => text.toLowerCase(),
  encode: (text) => text
}).annotations({ identifier: "UUID" })

/**
 * Whether `value` is a UUID in its canonical (lower-case) text form, as `Uuid` decodes one.
 */
export const isUuid: (value: unknown) => value is string = Schema.is(CanonicalUuid)

/**
 * `value` as a canonical UUID when it is a UUID in any case (`Uuid`), else `None`: how a path
 * parameter or a configured id is read.
 */
export const canonicalUuid: (value: unknown) => Option.Option<string> = Schema.decodeUnknownOption(Uuid)

/**
 * A random version 4 UUID from the `Crypto` port (key ids).
 */
export const randomUuid: Effect.Effect<string, never, Crypto> = Effect.flatMap(
  Effect.serviceOption(CryptoSync),
  (sync) => (Option.isSome(sync) ? Effect.sync(sync.value.randomUuid) : Effect.flatMap(Crypto, randomUuidWith))
)

/**
 * A random version 4 UUID with a `Crypto` already in hand: 16 random bytes with the version and
 * variant bits set (`CryptoSync.randomUuid` is the native generator, where there is one).
 */
export const randomUuidWith = (crypto: CryptoService): Effect.Effect<string> =>
  Effect.map(crypto.randomBytes(16), (bytes) => {
    bytes[6] = (bytes[6]! & 0x0f) | 0x40
    bytes[8] = (bytes[8]! & 0x3f) | 0x80
    return formatUuid(bytes)
  })

/** 16 bytes in the canonical 8-4-4-4-12 form. */
const formatUuid = (bytes: Uint8Array): string => {
  const hex = toHex(bytes)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * A version 7 UUID (RFC 9562, section 5.7): `unixMillis` (0 to 2^48 - 1) as its first 48 bits,
 * big-endian, then the version, then 74 bits of `random` (its first 10 bytes; the bits the version
 * and variant take are dropped), then the variant. UUIDs of later milliseconds sort after earlier
 * ones, as bytes and as lowercase text, so a B-tree index over them takes new keys at its right
 * edge rather than at random pages.
 */
export const uuidV7 = (unixMillis: number, random: Uint8Array): string => {
  if (random.length < 10) throw new RangeError("a version 7 UUID takes 10 random bytes")
  if (!Number.isInteger(unixMillis) || unixMillis < 0 || unixMillis > 0xffff_ffff_ffff) {
    throw new RangeError("a version 7 UUID's time is a whole number of milliseconds from 0 to 2^48 - 1")
  }
  const bytes = new Uint8Array(16)
  const high = Math.floor(unixMillis / 0x1_0000_0000)
  const low = unixMillis >>> 0
  bytes[0] = high >>> 8
  bytes[1] = high & 0xff
  bytes[2] = low >>> 24
  bytes[3] = (low >>> 16) & 0xff
  bytes[4] = (low >>> 8) & 0xff
  bytes[5] = low & 0xff
  bytes.set(random.subarray(0, 10), 6)
  bytes[6] = 0x70 | (bytes[6]! & 0x0f)
  bytes[8] = 0x80 | (bytes[8]! & 0x3f)
  return formatUuid(bytes)
}

const noRandomBits = new Uint8Array(10)

/**
 * Fresh version 7 UUIDs (see `uuidV7`) of a given time, made synchronously with `CryptoSync` (where
 * there is none, use `timeOrderedUuidWith`).
 *
 * A UUID is the time's part (`tttttttt-tttt-7`, kept while the millisecond lasts) followed by the
 * last 21 characters of a fresh version 4 UUID (`node:crypto`'s pooled `randomUUID`): exactly the
 * 74 random bits and the variant a version 7 UUID has there. Measured about a third of the cost of
 * drawing 10 bytes and formatting 16.
 */
export const timeOrderedUuidSync = (sync: CryptoSyncService): ((unixMillis: number) => string) => {
  const v4Sync = sync.randomUuid
  let millis = Number.NaN
  let timePart = ""
  return (unixMillis) => {
    if (unixMillis !== millis) {
      // The time's part as `uuidV7` writes it (which also checks the time).
      timePart = uuidV7(unixMillis, noRandomBits).slice(0, 15)
      millis = unixMillis
    }
    return timePart + v4Sync().slice(15)
  }
}

/**
 * A fresh version 7 UUID (see `uuidV7`) of `unixMillis`, with the `Crypto` port's randomness.
 */
export const timeOrderedUuidWith = (crypto: CryptoService, unixMillis: number): Effect.Effect<string> =>
  Effect.map(crypto.randomBytes(10), (random) => uuidV7(unixMillis, random))
