/**
 * Reference hashes (docs/decisions.md, "Hex digests"): lowercase hex SHA-256 over UTF-8.
 */
import * as Effect from "effect/Effect"
import { Crypto, type CryptoService, type Part } from "../ports/Crypto.ts"

/** Lowercase hex SHA-256 of the text's UTF-8 bytes. */
export const sha256Hex = (text: string): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) => sha256HexWith(crypto, text))

/**
 * SHA-256 with a `Crypto` already in hand.
 */
export const sha256HexWith = (crypto: CryptoService, data: Part): Effect.Effect<string> => crypto.sha256Hex(data)

/**
 * `connectedAccountReferenceHash`: SHA-256 of the JSON serialization of the provider account ID
 * (quotes included).
 */
export const connectedAccountReferenceHash = (accountId: string): Effect.Effect<string, never, Crypto> =>
  sha256Hex(JSON.stringify(accountId))
