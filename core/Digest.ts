/**
 * Reference hashes (DESIGN D3): lowercase hex SHA-256 over UTF-8.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { Crypto } from "./Crypto.ts"

/**
 * @since 0.1.0
 */
export const sha256Hex = (text: string): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) => crypto.sha256Hex(text))

/**
 * `connectedAccountReferenceHash`: SHA-256 of the JSON serialization of the provider account ID
 * (quotes included).
 *
 * @since 0.1.0
 */
export const connectedAccountReferenceHash = (accountId: string): Effect.Effect<string, never, Crypto> =>
  sha256Hex(JSON.stringify(accountId))
