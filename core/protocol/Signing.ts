/**
 * Message signing (spec "Authentication"; docs/decisions.md "Raw body bytes", "Signing input",
 * "Timestamp freshness", "Nonce length and retention").
 *
 * The signed string is, lines separated by `\n`:
 *
 *     service-customer-action-v1
 *     {purpose}
 *     {timestamp}
 *     {nonce}
 *     {raw body bytes}
 *
 * and the header value is `v1=` followed by the 64 lowercase hex characters of its HMAC-SHA-256.
 * The body is the exact bytes sent: a sender serializes once, signs those bytes, sends those bytes.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { Crypto, type CryptoService, CryptoSync, type HmacKey } from "../ports/Crypto.ts"
import { formatTimestamp } from "./Timestamp.ts"

/**
 * The seven signing purposes.
 */
export const purposes = [
  "handshake_request",
  "handshake_response",
  "dispatch_request",
  "dispatch_response",
  "completion",
  "payment_reconciliation_request",
  "payment_reconciliation_response"
] as const

/** One of the seven signing purposes; each message and answer is signed for exactly one. */
export type Purpose = (typeof purposes)[number]

/**
 * The connector's two secrets: which one signs a message is fixed by its purpose.
 */
export type SecretName = "actionSigning" | "completion"

/**
 * "The action signing secret for handshake, dispatch and reconciliation messages in both directions;
 * the completion secret for `completion`."
 */
export const secretFor = (purpose: Purpose): SecretName => (purpose === "completion" ? "completion" : "actionSigning")

/** A connection revision's two secrets: the action signing secret and the completion secret. */
export interface ConnectorSecrets {
  readonly actionSigning: Redacted.Redacted<string>
  readonly completion: Redacted.Redacted<string>
}

/**
 * Both secrets imported once as HMAC keys; verification and signing pick one by purpose.
 */
export interface SigningKeys {
  readonly actionSigning: HmacKey
  readonly completion: HmacKey
}

/**
 * Imports both connector secrets as HMAC keys once, for the signer and verifier to pick by purpose.
 */
export const importSigningKeys = (secrets: ConnectorSecrets): Effect.Effect<SigningKeys, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) =>
    Effect.all({
      actionSigning: crypto.importHmacKey(secrets.actionSigning),
      completion: crypto.importHmacKey(secrets.completion)
    })
  )

/**
 * Header names, lowercase as HTTP/2 and the Fetch API present them.
 */
export const headerNames = {
  version: "x-service-customer-action-version",
  timestamp: "x-service-customer-action-timestamp",
  nonce: "x-service-customer-action-nonce",
  signature: "x-service-customer-action-signature",
  idempotencyKey: "x-service-customer-action-idempotency-key",
  connectionRevision: "x-service-customer-action-connection-revision"
} as const

/**
 * The protocol version, in every body's `protocolVersion` and in the version header.
 */
export const protocolVersion = 1

/**
 * The fixed first part of the signing input up to and including the newline before the body.
 */
export const signingPrefix = (purpose: Purpose, timestamp: string, nonce: string): string =>
  `service-customer-action-v1\n${purpose}\n${timestamp}\n${nonce}\n`

/**
 * The `v1=` signature header value for a message.
 */
export const computeSignature = (
  key: HmacKey,
  purpose: Purpose,
  timestamp: string,
  nonce: string,
  body: Uint8Array
): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) =>
    Effect.map(crypto.hmacSha256Hex(key, [signingPrefix(purpose, timestamp, nonce), body]), (mac) => "v1=" + mac)
  )

/**
 * Length in bytes of a sent nonce's entropy: 24 bytes give a 32-character base64url nonce (a sent
 * nonce has at least 32 characters).
 */
export const nonceBytes = 24

const base64url = (bytes: Uint8Array): string => {
  const table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
  let out = ""
  for (let i = 0; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out += table[n >> 18]! + table[(n >> 12) & 63]! + table[(n >> 6) & 63]! + table[n & 63]!
  }
  return out
}

/**
 * A fresh nonce from the CSPRNG: 32 base64url characters.
 */
export const freshNonce: Effect.Effect<string, never, Crypto> = Effect.flatMap(Crypto, (crypto) => nonceFrom(crypto))

const nonceFrom = (crypto: CryptoService): Effect.Effect<string> =>
  Effect.map(crypto.randomBytes(nonceBytes), base64url)

/**
 * The signed headers of one outgoing message.
 */
export type SignedHeaders = {
  readonly "content-type": "application/json"
  readonly "x-service-customer-action-version": "1"
  readonly "x-service-customer-action-timestamp": string
  readonly "x-service-customer-action-nonce": string
  readonly "x-service-customer-action-signature": string
}

/**
 * What one signature is asked for: the purpose (which picks the secret), the keys, the exact body
 * bytes and, for a handshake whose `challenge` must equal it, the nonce (else a fresh one).
 */
export interface Signing {
  readonly purpose: Purpose
  readonly keys: SigningKeys
  readonly body: Uint8Array
  readonly nonce?: string
}

/**
 * Signs outgoing messages, bound to its `Crypto` and the `Clock`. Build it once (`makeSigner`) and
 * call it per message: no service lookups on the hot path. With `CryptoSync` provided its effects
 * run {@link SignerSync}'s calls, so there is one signing path.
 */
export interface Signer {
  /** A fresh nonce from the CSPRNG (at least 32 characters). */
  readonly freshNonce: Effect.Effect<string>
  /** Signs `body` for `purpose` with the secret the purpose requires, at the Clock's current time. */
  readonly sign: (signing: Signing) => Effect.Effect<SignedHeaders>
}

/**
 * `Signer`'s operations as plain calls: a separate capability, built only over `CryptoSync` (an
 * HMAC that computes without waiting, `node:crypto`), for a caller that must sign with no effect
 * step. Each call answers what the `Signer` effect of the same name answers.
 */
export interface SignerSync {
  /** A fresh nonce from the CSPRNG, as `Signer.freshNonce`. */
  readonly freshNonce: () => string
  /** Signs at the Clock's current time, as `Signer.sign`. */
  readonly sign: (signing: Signing) => SignedHeaders
}

const signedHeaders = (timestamp: string, nonce: string, mac: string): SignedHeaders => ({
  "content-type": "application/json",
  "x-service-customer-action-version": "1",
  "x-service-customer-action-timestamp": timestamp,
  "x-service-customer-action-nonce": nonce,
  "x-service-customer-action-signature": "v1=" + mac
})

/** What one signature covers, at `now`: its timestamp, key and signing input. */
const signingInput = (signing: Signing, nonce: string, now: number) => {
  const timestamp = formatTimestamp(now)
  return {
    timestamp,
    key: signing.keys[secretFor(signing.purpose)],
    parts: [signingPrefix(signing.purpose, timestamp, nonce), signing.body]
  }
}

/**
 * The synchronous signer over `CryptoSync` and the `Clock`.
 */
export const makeSignerSync: Effect.Effect<SignerSync, never, CryptoSync> = Effect.map(
  Effect.zip(CryptoSync, Effect.clock),
  ([{ hmacSha256Hex, randomBytes }, clock]): SignerSync => {
    const freshNonce = () => base64url(randomBytes(nonceBytes))
    return {
      freshNonce,
      sign: (signing) => {
        const nonce = signing.nonce ?? freshNonce()
        const { key, parts, timestamp } = signingInput(signing, nonce, clock.unsafeCurrentTimeMillis())
        return signedHeaders(timestamp, nonce, hmacSha256Hex(key, parts))
      }
    }
  }
)

/**
 * The signer over `Crypto` and the `Clock`; when `CryptoSync` is provided too, its effects run
 * `makeSignerSync`'s calls, so there is one signing path.
 */
export const makeSigner: Effect.Effect<Signer, never, Crypto> = Effect.flatMap(
  Effect.serviceOption(CryptoSync),
  (cryptoSync) =>
    Option.isSome(cryptoSync)
      ? Effect.map(Effect.provideService(makeSignerSync, CryptoSync, cryptoSync.value), (sync) => ({
          freshNonce: Effect.sync(sync.freshNonce),
          sign: (signing: Signing) => Effect.sync(() => sync.sign(signing))
        }))
      : Effect.map(Effect.zip(Crypto, Effect.clock), ([crypto, clock]): Signer => {
          const freshNonce = nonceFrom(crypto)
          const signWith = (signing: Signing, nonce: string): Effect.Effect<SignedHeaders> => {
            const { key, parts, timestamp } = signingInput(signing, nonce, clock.unsafeCurrentTimeMillis())
            return Effect.map(crypto.hmacSha256Hex(key, parts), (mac) => signedHeaders(timestamp, nonce, mac))
          }
          return {
            freshNonce,
            sign: (signing) =>
              signing.nonce !== undefined
                ? Effect.suspend(() => signWith(signing, signing.nonce!))
                : Effect.flatMap(freshNonce, (nonce) => signWith(signing, nonce))
          }
        })
)

/**
 * Signs one message with the context's `Crypto` (see `Signer.sign`).
 */
export const sign = (signing: Signing): Effect.Effect<SignedHeaders, never, Crypto> =>
  Effect.flatMap(makeSigner, (signer) => signer.sign(signing))

const encoder = new TextEncoder()

/**
 * Serializes a body once, to the bytes that are then signed and sent.
 */
export const encodeBody = (body: unknown): Uint8Array => encoder.encode(JSON.stringify(body))
