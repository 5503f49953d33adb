/**
 * Verification of a signed message (spec "Authentication" 4–6; docs/decisions.md "Raw body bytes",
 * "Signing input", "Timestamp freshness", "Nonce length and retention").
 *
 * "A verifier checks the protocol version, timestamp freshness, nonce and HMAC, with a
 * constant-time comparison, before using the parsed payload." Checks run in that order and the
 * body is parsed only after all of them pass. The nonce is checked for shape before the HMAC but
 * recorded as used only after it: a forged message must not be able to burn a nonce that a
 * genuine one will carry. A replay of a genuine message is caught by that atomic claim.
 *
 * Every failure is its own tagged error so callers can map it to a response.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { identity } from "effect/Function"
import * as Schema from "effect/Schema"
import { Crypto, type HmacKey, type Part } from "../ports/Crypto.ts"
import { constantTimeEqual } from "./Hex.ts"
import * as FastDecode from "./FastDecode.ts"
import { exactParseOptions } from "./messages/Common.ts"
import { type NonceClaim, NonceStore, nonceRetentionMillis } from "../ports/NonceStore.ts"
import { headerNames, type Purpose, secretFor, type SigningKeys, signingPrefix } from "./Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { FieldIssue, type MalformedBody, parseJsonBytes, toFieldIssues } from "./Json.ts"
import { parseTimestamp } from "./Timestamp.ts"

/**
 * "At most five minutes of clock skew is accepted", either way, bounds included.
 */
export const maxSkewMillis = 300_000

/**
 * The version header is missing or not `1`.
 */
export class UnsupportedVersion extends Schema.TaggedError<UnsupportedVersion>()("UnsupportedVersion", {}) {
  override get message(): string {
    return "x-service-customer-action-version must be 1"
  }
}

/**
 * The timestamp header is missing or not an RFC 3339 timestamp.
 */
export class InvalidTimestamp extends Schema.TaggedError<InvalidTimestamp>()("InvalidTimestamp", {}) {
  override get message(): string {
    return "x-service-customer-action-timestamp must be an RFC 3339 timestamp"
  }
}

/**
 * The timestamp is more than five minutes in the past.
 */
export class StaleTimestamp extends Schema.TaggedError<StaleTimestamp>()("StaleTimestamp", {
  skewMillis: Schema.Number
}) {
  override get message(): string {
    return `timestamp is ${this.skewMillis} ms old; at most ${maxSkewMillis} ms is accepted`
  }
}

/**
 * The timestamp is more than five minutes in the future.
 */
export class FutureTimestamp extends Schema.TaggedError<FutureTimestamp>()("FutureTimestamp", {
  skewMillis: Schema.Number
}) {
  override get message(): string {
    return `timestamp is ${this.skewMillis} ms ahead; at most ${maxSkewMillis} ms is accepted`
  }
}

/**
 * The nonce header is missing or not 16 to 160 visible ASCII characters.
 */
export class InvalidNonce extends Schema.TaggedError<InvalidNonce>()("InvalidNonce", {}) {
  override get message(): string {
    return "x-service-customer-action-nonce must be 16 to 160 visible ASCII characters"
  }
}

/**
 * The nonce was already used within the retention window.
 */
export class ReplayedNonce extends Schema.TaggedError<ReplayedNonce>()("ReplayedNonce", {}) {
  override get message(): string {
    return "nonce was already used"
  }
}

/**
 * The signature header is missing, not `v1=` plus 64 lowercase hex characters, or does not match.
 */
export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", {
  reason: Schema.Literal("missing", "malformed", "mismatch")
}) {
  override get message(): string {
    return this.reason === "mismatch"
      ? "signature does not match"
      : `x-service-customer-action-signature is ${this.reason}; expected v1= and 64 lowercase hex characters`
  }
}

/**
 * The (authentic) body is JSON but not the expected message shape.
 */
export class InvalidShape extends Schema.TaggedError<InvalidShape>()("InvalidShape", {
  issues: Schema.Array(FieldIssue)
}) {
  override get message(): string {
    return (
      "body does not have the expected shape: " +
      this.issues.map((issue) => `${issue.path || "(root)"}: ${issue.message}`).join("; ")
    )
  }
}

export type SignatureError =
  | UnsupportedVersion
  | InvalidTimestamp
  | StaleTimestamp
  | FutureTimestamp
  | InvalidNonce
  | ReplayedNonce
  | InvalidSignature

export type VerificationError = SignatureError | MalformedBody | InvalidShape

/**
 * Where header values come from: a Fetch `Headers`, or a record with lowercase names (Node's
 * `IncomingHttpHeaders`, `@effect/platform` `Headers`).
 */
export type HeaderSource =
  | { readonly get: (name: string) => string | null | undefined }
  | { readonly [name: string]: string | ReadonlyArray<string> | undefined }

export const readHeader = (source: HeaderSource, name: string): string | undefined => {
  const value =
    typeof source.get === "function"
      ? (source as { readonly get: (name: string) => string | null | undefined }).get(name)
      : (source as { readonly [name: string]: string | ReadonlyArray<string> | undefined })[name]
  return typeof value === "string" ? value : undefined
}

/**
 * What a verified message proved about itself.
 */
export interface VerifiedHeaders {
  readonly timestamp: string
  readonly timestampMillis: number
  readonly nonce: string
}

export interface VerifyInput {
  readonly purpose: Purpose
  readonly keys: SigningKeys
  readonly headers: HeaderSource
  /** The raw body bytes as received: the signature covers exactly these. */
  readonly body: Uint8Array
  /** The nonce space, e.g. one per connection and direction. */
  readonly nonceScope: string
}

/**
 * A message that may be signed with any of several key pairs (e.g. one per connection revision).
 */
export interface VerifyAnyInput extends Omit<VerifyInput, "keys"> {
  /** Candidate pairs, tried in order; the first whose secret for the purpose matches is used. */
  readonly keys: ReadonlyArray<SigningKeys>
}

/** 16 to 160 visible ASCII characters; a loop, not a regular expression: it runs per message. */
const isNonce = (nonce: string): boolean => {
  if (nonce.length < 16 || nonce.length > 160) return false
  for (let i = 0; i < nonce.length; i++) {
    const c = nonce.charCodeAt(i)
    if (c < 0x21 || c > 0x7e) return false
  }
  return true
}
const signaturePattern = /^v1=[0-9a-f]{64}$/

/**
 * A verifier bound to its `Crypto` and `NonceStore`. Build it once (`makeVerifier`) and call it per
 * message: the hot path then does no service lookups, and with a synchronous HMAC (`node:crypto`)
 * runs as one synchronous step plus the nonce claim.
 */
export interface Verifier {
  /**
   * Verifies version, freshness, nonce and signature, and records the nonce. Reads nothing of the
   * body but its bytes.
   */
  readonly verify: (input: VerifyInput) => Effect.Effect<VerifiedHeaders, SignatureError | StorageError>
  /**
   * Like `verify`, with each candidate pair in turn: the headers are checked once, the HMAC per
   * candidate, and the nonce is recorded once, for the first match; `keyIndex` names it. No match
   * is `InvalidSignature`.
   */
  readonly verifyAny: (
    input: VerifyAnyInput
  ) => Effect.Effect<{ readonly headers: VerifiedHeaders; readonly keyIndex: number }, SignatureError | StorageError>
  /**
   * `verify` as one synchronous call, for a verifier whose `Crypto` and `NonceStore` are both
   * synchronous (`node:crypto` and the memory store); `undefined` otherwise. The same checks in the
   * same order, and the nonce is recorded the same way: the failure is returned, not thrown.
   */
  readonly verifySync: ((input: VerifyInput) => VerifiedHeaders | SignatureError) | undefined
  /**
   * Like `verifyAny` without recording the nonce: the claim to record is returned instead. The
   * caller records it in the one statement that acts on the message (`ActionLedger.create`'s
   * `nonce`), which writes nothing when the nonce was already used; until then the message may be
   * a replay, so nothing of its payload may be used but to refuse it.
   */
  readonly verifyAnyUnclaimed: (
    input: VerifyAnyInput
  ) => Effect.Effect<
    { readonly headers: VerifiedHeaders; readonly keyIndex: number; readonly nonce: NonceClaim },
    SignatureError
  >
  /** Verifies, then decodes the body with `schema` (unknown fields are errors). */
  readonly verifyAndDecode: <A, I>(
    schema: Schema.Schema<A, I, never>,
    input: VerifyInput
  ) => Effect.Effect<{ readonly headers: VerifiedHeaders; readonly body: A }, VerificationError | StorageError>
}

const mismatch = (mac: string): InvalidSignature =>
  new InvalidSignature({ reason: signaturePattern.test("v1=" + mac) ? "mismatch" : "malformed" })

interface Checked {
  readonly timestamp: string
  readonly timestampMillis: number
  readonly nonce: string
  readonly mac: string
}

/** Header checks up to the HMAC; returns the failure, or what the HMAC step needs. */
export const checkHeaders = (headers: HeaderSource, now: number): SignatureError | Checked => {
  if (readHeader(headers, headerNames.version) !== "1") return new UnsupportedVersion()
  const timestamp = readHeader(headers, headerNames.timestamp)
  const timestampMillis = timestamp === undefined ? undefined : parseTimestamp(timestamp)
  if (timestamp === undefined || timestampMillis === undefined) return new InvalidTimestamp()
  if (now - timestampMillis > maxSkewMillis) return new StaleTimestamp({ skewMillis: now - timestampMillis })
  if (timestampMillis - now > maxSkewMillis) return new FutureTimestamp({ skewMillis: timestampMillis - now })
  const nonce = readHeader(headers, headerNames.nonce)
  if (nonce === undefined || !isNonce(nonce)) return new InvalidNonce()
  const signature = readHeader(headers, headerNames.signature)
  if (signature === undefined) return new InvalidSignature({ reason: "missing" })
  // The full `v1=` + lowercase hex pattern is checked only when the MAC does not match (see
  // `mismatch`): a match with our own lowercase hex already proves the form.
  if (signature.length !== 67 || !signature.startsWith("v1=")) return new InvalidSignature({ reason: "malformed" })
  return { timestamp, timestampMillis, nonce, mac: signature.slice(3) }
}

/** `mac` (64 characters) against the header's `v1=` + MAC, in place, in time that depends only on lengths. */
const macMatches = (mac: string, signature: string): boolean => {
  if (mac.length !== 64) return false
  let diff = 0
  for (let i = 0; i < 64; i++) diff |= mac.charCodeAt(i) ^ signature.charCodeAt(i + 3)
  return diff === 0
}

/**
 * The whole of `verify` as one synchronous function, for a synchronous HMAC and nonce store: the
 * checks of `checkHeaders` (the same order, the same errors), the HMAC and the nonce claim, reading
 * each header once and allocating nothing but the signing prefix, the MAC and the result.
 */
const makeVerifySync =
  (
    hmacSync: (key: HmacKey, parts: ReadonlyArray<Part>) => string,
    claimSync: (claim: NonceClaim) => boolean,
    currentTimeMillis: () => number
  ) =>
  (input: VerifyInput): VerifiedHeaders | SignatureError => {
    const now = currentTimeMillis()
    const headers = input.headers
    let version: unknown
    let timestamp: unknown
    let nonce: unknown
    let signature: unknown
    if (typeof headers.get === "function") {
      const source = headers as { readonly get: (name: string) => string | null | undefined }
      version = source.get(headerNames.version)
      timestamp = source.get(headerNames.timestamp)
      nonce = source.get(headerNames.nonce)
      signature = source.get(headerNames.signature)
    } else {
      const source = headers as { readonly [name: string]: string | ReadonlyArray<string> | undefined }
      version = source[headerNames.version]
      timestamp = source[headerNames.timestamp]
      nonce = source[headerNames.nonce]
      signature = source[headerNames.signature]
    }
    if (version !== "1") return new UnsupportedVersion()
    if (typeof timestamp !== "string") return new InvalidTimestamp()
    const timestampMillis = parseTimestamp(timestamp)
    if (timestampMillis === undefined) return new InvalidTimestamp()
    if (now - timestampMillis > maxSkewMillis) return new StaleTimestamp({ skewMillis: now - timestampMillis })
    if (timestampMillis - now > maxSkewMillis) return new FutureTimestamp({ skewMillis: timestampMillis - now })
    if (typeof nonce !== "string" || !isNonce(nonce)) return new InvalidNonce()
    if (typeof signature !== "string") return new InvalidSignature({ reason: "missing" })
    if (signature.length !== 67 || !signature.startsWith("v1=")) return new InvalidSignature({ reason: "malformed" })
    const key = input.keys[secretFor(input.purpose)]
    if (!macMatches(hmacSync(key, [signingPrefix(input.purpose, timestamp, nonce), input.body]), signature)) {
      return mismatch(signature.slice(3))
    }
    if (!claimSync({ scope: input.nonceScope, nonce, now, expiresAt: now + nonceRetentionMillis }))
      return new ReplayedNonce()
    return { timestamp, timestampMillis, nonce }
  }

export const makeVerifier: Effect.Effect<Verifier, never, Crypto | NonceStore> = Effect.map(
  Effect.all([Crypto, NonceStore, Effect.clock]),
  ([crypto, store, clock]) => {
    const hmacSync = crypto.unsafeHmacSha256HexSync
    const claimSync = store.unsafeClaimSync
    const verified = (checked: Checked): VerifiedHeaders => ({
      timestamp: checked.timestamp,
      timestampMillis: checked.timestampMillis,
      nonce: checked.nonce
    })
    const nonceClaim = (input: Pick<VerifyInput, "nonceScope">, checked: Checked, now: number): NonceClaim => ({
      scope: input.nonceScope,
      nonce: checked.nonce,
      now,
      expiresAt: now + nonceRetentionMillis
    })
    const claim = (
      input: Pick<VerifyInput, "nonceScope">,
      checked: Checked,
      now: number
    ): Effect.Effect<VerifiedHeaders, ReplayedNonce | StorageError> =>
      claimSync !== undefined
        ? claimSync(nonceClaim(input, checked, now))
          ? Effect.succeed(verified(checked))
          : Effect.fail(new ReplayedNonce())
        : Effect.flatMap(store.claim(nonceClaim(input, checked, now)), (fresh) =>
            fresh ? Effect.succeed(verified(checked)) : Effect.fail(new ReplayedNonce())
          )
    /** The asynchronous HMAC check: the layer's own verify when it has one, else compute and compare. */
    const verifyMac = crypto.verifyHmacSha256Hex
    const matches = (key: HmacKey, parts: ReadonlyArray<Part>, mac: string): Effect.Effect<boolean> =>
      verifyMac !== undefined
        ? verifyMac(key, parts, mac)
        : Effect.map(crypto.hmacSha256Hex(key, parts), (expected) => constantTimeEqual(expected, mac))
    /** The header checks, then the HMAC with each candidate in turn; `found` takes the match (and claims the nonce, or not). */
    const verifyWith = <A, E>(
      input: VerifyInput | VerifyAnyInput,
      candidates: ReadonlyArray<SigningKeys>,
      found: (checked: Checked, now: number, keyIndex: number) => Effect.Effect<A, E>
    ): Effect.Effect<A, SignatureError | E> =>
      Effect.suspend(() => {
        const now = clock.unsafeCurrentTimeMillis()
        const checked = checkHeaders(input.headers, now)
        if ("_tag" in checked) return Effect.fail(checked)
        const secret = secretFor(input.purpose)
        const parts = [signingPrefix(input.purpose, checked.timestamp, checked.nonce), input.body]
        const attempt = (keyIndex: number): Effect.Effect<A, SignatureError | E> => {
          const keys = candidates[keyIndex]
          if (keys === undefined) return Effect.fail(mismatch(checked.mac))
          if (hmacSync !== undefined) {
            return constantTimeEqual(hmacSync(keys[secret], parts), checked.mac)
              ? found(checked, now, keyIndex)
              : attempt(keyIndex + 1)
          }
          return Effect.flatMap(matches(keys[secret], parts, checked.mac), (match) =>
            match ? found(checked, now, keyIndex) : attempt(keyIndex + 1)
          )
        }
        return attempt(0)
      })
    // One pair, the common case on every hot path: the same steps as `verifyWith` without its
    // candidate list and callbacks, which cost a measurable share of a verification.
    const verifyAsync = (input: VerifyInput): Effect.Effect<VerifiedHeaders, SignatureError | StorageError> =>
      Effect.suspend(() => {
        const now = clock.unsafeCurrentTimeMillis()
        const checked = checkHeaders(input.headers, now)
        if ("_tag" in checked) return Effect.fail(checked)
        const key = input.keys[secretFor(input.purpose)]
        const parts = [signingPrefix(input.purpose, checked.timestamp, checked.nonce), input.body]
        if (hmacSync !== undefined) {
          return constantTimeEqual(hmacSync(key, parts), checked.mac)
            ? claim(input, checked, now)
            : Effect.fail(mismatch(checked.mac))
        }
        return Effect.flatMap(
          matches(key, parts, checked.mac),
          (match): Effect.Effect<VerifiedHeaders, SignatureError | StorageError> =>
            match ? claim(input, checked, now) : Effect.fail(mismatch(checked.mac))
        )
      })
    const verifySync =
      hmacSync !== undefined && claimSync !== undefined
        ? makeVerifySync(hmacSync, claimSync, () => clock.unsafeCurrentTimeMillis())
        : undefined
    // With both synchronous, a verification is one synchronous call inside one effect.
    const verify =
      verifySync !== undefined
        ? (input: VerifyInput): Effect.Effect<VerifiedHeaders, SignatureError | StorageError> =>
            Effect.suspend(() => {
              const result = verifySync(input)
              return "_tag" in result ? Effect.fail(result) : Effect.succeed(result)
            })
        : verifyAsync
    return {
      verify,
      verifySync,
      verifyAny: (input) =>
        verifyWith(input, input.keys, (checked, now, keyIndex) =>
          Effect.map(claim(input, checked, now), (headers) => ({ headers, keyIndex }))
        ),
      verifyAnyUnclaimed: (input) =>
        verifyWith(input, input.keys, (checked, now, keyIndex) =>
          Effect.succeed({ headers: verified(checked), keyIndex, nonce: nonceClaim(input, checked, now) })
        ),
      verifyAndDecode:
        verifySync !== undefined
          ? // One effect step when the checks and the decode answer at once (the common case).
            <A, I>(
              schema: Schema.Schema<A, I, never>,
              input: VerifyInput
            ): Effect.Effect<
              { readonly headers: VerifiedHeaders; readonly body: A },
              VerificationError | StorageError
            > =>
              Effect.suspend(
                (): Effect.Effect<
                  { readonly headers: VerifiedHeaders; readonly body: A },
                  VerificationError | StorageError
                > => {
                  const headers = verifySync(input)
                  if ("_tag" in headers) return Effect.fail(headers)
                  return decodeBodyThen(schema, input.body, undefined, (body) => ({ headers, body }))
                }
              )
          : <A, I>(schema: Schema.Schema<A, I, never>, input: VerifyInput) =>
              Effect.flatMap(verify(input), (headers) =>
                Effect.map(decodeBodyNow(schema, input.body), (body) => ({ headers, body }))
              )
    }
  }
)

/**
 * Verifies one message with the context's `Crypto` and `NonceStore` (see `Verifier.verify`).
 */
export const verify = (
  input: VerifyInput
): Effect.Effect<VerifiedHeaders, SignatureError | StorageError, Crypto | NonceStore> =>
  Effect.flatMap(makeVerifier, (verifier) => verifier.verify(input))

/**
 * Decodes an (already authentic) body with a message schema: unknown fields are errors.
 */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I, never>,
  body: Uint8Array,
  /** `parseJsonBytes(body)` of these same bytes, when the caller already took it (not parsed again). */
  parsed?: Either.Either<unknown, MalformedBody>
): Effect.Effect<A, MalformedBody | InvalidShape> => Effect.suspend(() => decodeBodyNow(schema, body, parsed))

/**
 * {@link decodeBody}, parsing and decoding when called rather than when run: for a caller already
 * past verification. On success (the compiled decoder's answer) the result is an `Exit`, which
 * costs the caller no effect step.
 */
export const decodeBodyNow = <A, I>(
  schema: Schema.Schema<A, I, never>,
  body: Uint8Array,
  parsed?: Either.Either<unknown, MalformedBody>
): Effect.Effect<A, MalformedBody | InvalidShape> => decodeBodyThen(schema, body, parsed, identity)

/**
 * {@link decodeBodyNow}, then `f` of the decoded body: applied at once (no effect step) when the
 * compiled decoder answered.
 */
export const decodeBodyThen = <A, I, B>(
  schema: Schema.Schema<A, I, never>,
  body: Uint8Array,
  parsed: Either.Either<unknown, MalformedBody> | undefined,
  f: (decoded: A) => B
): Effect.Effect<B, MalformedBody | InvalidShape> => {
  const json = parsed ?? parseJsonBytes(body)
  if (Either.isLeft(json)) return Effect.fail(json.left)
  const decoded = FastDecode.decodeUnknown(schema, exactParseOptions)(json.right)
  // Decoded by the compiled checks: already the answer (an `Exit`), with no step to add.
  return Exit.isExit(decoded) && Exit.isSuccess(decoded)
    ? Exit.succeed(f((decoded as Exit.Success<A, never>).value))
    : Effect.mapBoth(decoded, {
        onFailure: (error) => new InvalidShape({ issues: toFieldIssues(error) }),
        onSuccess: f
      })
}

/**
 * Verifies a signed message, then decodes its body with `schema` (see `Verifier.verifyAndDecode`).
 */
export const verifyAndDecode = <A, I>(
  schema: Schema.Schema<A, I, never>,
  input: VerifyInput
): Effect.Effect<
  { readonly headers: VerifiedHeaders; readonly body: A },
  VerificationError | StorageError,
  Crypto | NonceStore
> => Effect.flatMap(makeVerifier, (verifier) => verifier.verifyAndDecode(schema, input))

/**
 * A verification error's tag as a stable snake_case code (`ReplayedNonce` → `replayed_nonce`).
 */
export const snakeCaseTag = (tag: string): string => tag.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase()
