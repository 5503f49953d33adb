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
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Crypto, CryptoSync, type HmacKey, type Part } from "../ports/Crypto.ts"
import { constantTimeEqual } from "./Hex.ts"
import * as FastDecode from "./FastDecode.ts"
import { exactParseOptions } from "./messages/Common.ts"
import { type NonceClaim, NonceStore, NonceStoreSync, nonceRetentionMillis } from "../ports/NonceStore.ts"
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

/** Every reason the signed headers are refused, in the order they are checked. */
export type SignatureError =
  | UnsupportedVersion
  | InvalidTimestamp
  | StaleTimestamp
  | FutureTimestamp
  | InvalidNonce
  | ReplayedNonce
  | InvalidSignature

/** Every reason a signed message is refused: its signature, then its body's JSON or shape. */
export type VerificationError = SignatureError | MalformedBody | InvalidShape

/**
 * Where header values come from: a Fetch `Headers`, or a record with lowercase names (Node's
 * `IncomingHttpHeaders`, `@effect/platform` `Headers`).
 */
export type HeaderSource =
  | {
      /** A Fetch `Headers`' lookup by lowercase name. */
      readonly get: (name: string) => string | null | undefined
    }
  | { readonly [name: string]: string | ReadonlyArray<string> | undefined }

/**
 * A header's value from a Fetch `Headers` or a `node:http` header object; `undefined` when absent
 * or repeated.
 */
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

/** One message to verify: its purpose, the keys, the headers and the raw body bytes as received. */
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
   * synchronous (`node:crypto` and the memory store); `undefined` otherwise. It runs the one list
   * of checks `verify` runs, without a fiber: the failure is returned, not thrown.
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

/** A signature that did not match: `mismatch` when it has the right form, else `malformed`. */
const mismatch = (signature: string): InvalidSignature =>
  new InvalidSignature({ reason: signaturePattern.test(signature) ? "mismatch" : "malformed" })

/** What the header checks proved, and the signature header the MAC step compares against. */
export interface Checked {
  readonly timestamp: string
  readonly timestampMillis: number
  readonly nonce: string
  /** `v1=` and 64 characters; the full pattern is checked only when the MAC does not match. */
  readonly signature: string
}

/**
 * The header checks, in the spec's order (version, timestamp, freshness, nonce, signature form):
 * the failure, or what the MAC step needs. Reads each header once.
 */
export const checkHeaders = (headers: HeaderSource, now: number): SignatureError | Checked => {
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
  // The full `v1=` + lowercase hex pattern is checked only when the MAC does not match (see
  // `mismatch`): a match with our own lowercase hex already proves the form.
  if (signature.length !== 67 || !signature.startsWith("v1=")) return new InvalidSignature({ reason: "malformed" })
  return { timestamp, timestampMillis, nonce, signature }
}

/**
 * The two steps of a verification that need a service, and what a match answers. Each step answers
 * at once (a synchronous HMAC, a memory store) or with an effect: `runChecks` goes on in the same
 * call after an answer and suspends only on an effect, so one list of checks serves the
 * synchronous and the effectful verifier alike.
 */
interface Steps<A> {
  /** Whether `signature` (`v1=` and 64 characters) carries the HMAC of `parts` under `key`. */
  readonly macMatches: (key: HmacKey, parts: ReadonlyArray<Part>, signature: string) => boolean | Effect.Effect<boolean>
  /** Records the nonce, `true` when it was fresh; `undefined` leaves the claim to the caller. */
  readonly claim: ((claim: NonceClaim) => boolean | Effect.Effect<boolean, StorageError>) | undefined
  readonly found: (headers: VerifiedHeaders, keyIndex: number, claim: NonceClaim) => A
}

/** The rest of a verification after a step answered with an effect. */
class Suspended<A> {
  constructor(readonly effect: Effect.Effect<A, SignatureError | StorageError>) {}
}

type Outcome<A> = A | SignatureError | Suspended<A>

const isFailure = (outcome: unknown): outcome is SignatureError =>
  typeof outcome === "object" && outcome !== null && "_tag" in outcome

const toEffect = <A>(outcome: Outcome<A>): Effect.Effect<A, SignatureError | StorageError> =>
  outcome instanceof Suspended ? outcome.effect : isFailure(outcome) ? Effect.fail(outcome) : Effect.succeed(outcome)

/**
 * The one ordered list of checks of a verification: the headers (`checkHeaders`), then the HMAC of
 * each candidate pair in turn, then the nonce claim for the first match. Nothing of the body but
 * its bytes is read.
 */
const runChecks = <A>(input: VerifyInput | VerifyAnyInput, now: number, steps: Steps<A>): Outcome<A> => {
  const checked = checkHeaders(input.headers, now)
  if ("_tag" in checked) return checked
  const parts = [signingPrefix(input.purpose, checked.timestamp, checked.nonce), input.body]
  return macFrom(input, now, steps, checked, parts, 0)
}

/** The HMAC check of the candidates from `keyIndex` on; the first match goes on to the claim. */
const macFrom = <A>(
  input: VerifyInput | VerifyAnyInput,
  now: number,
  steps: Steps<A>,
  checked: Checked,
  parts: ReadonlyArray<Part>,
  keyIndex: number
): Outcome<A> => {
  const candidates = input.keys
  const secret = secretFor(input.purpose)
  for (let i = keyIndex; ; i++) {
    const keys: SigningKeys | undefined = Array.isArray(candidates)
      ? (candidates as ReadonlyArray<SigningKeys>)[i]
      : i === 0
        ? (candidates as SigningKeys)
        : undefined
    if (keys === undefined) return mismatch(checked.signature)
    const match = steps.macMatches(keys[secret], parts, checked.signature)
    if (match === true) return claimFor(input, now, steps, checked, i)
    if (match !== false) {
      return new Suspended(
        Effect.flatMap(match, (matched) =>
          toEffect(
            matched ? claimFor(input, now, steps, checked, i) : macFrom(input, now, steps, checked, parts, i + 1)
          )
        )
      )
    }
  }
}

/** The nonce claim of a matched message (the last check), then what a match answers. */
const claimFor = <A>(
  input: VerifyInput | VerifyAnyInput,
  now: number,
  steps: Steps<A>,
  checked: Checked,
  keyIndex: number
): Outcome<A> => {
  const claim: NonceClaim = {
    scope: input.nonceScope,
    nonce: checked.nonce,
    now,
    expiresAt: now + nonceRetentionMillis
  }
  const headers: VerifiedHeaders = {
    timestamp: checked.timestamp,
    timestampMillis: checked.timestampMillis,
    nonce: checked.nonce
  }
  if (steps.claim === undefined) return steps.found(headers, keyIndex, claim)
  const fresh = steps.claim(claim)
  if (fresh === true) return steps.found(headers, keyIndex, claim)
  if (fresh === false) return new ReplayedNonce()
  return new Suspended(
    Effect.flatMap(fresh, (isFresh) =>
      isFresh ? Effect.succeed(steps.found(headers, keyIndex, claim)) : Effect.fail(new ReplayedNonce())
    )
  )
}

/** A verifier that checks version, timestamp, nonce and HMAC in that order, before any decoding. */
export const makeVerifier: Effect.Effect<Verifier, never, Crypto | NonceStore> = Effect.map(
  Effect.all([
    Crypto,
    NonceStore,
    Effect.clock,
    Effect.serviceOption(CryptoSync),
    Effect.serviceOption(NonceStoreSync)
  ]),
  ([crypto, store, clock, cryptoSync, storeSync]) => {
    const hmacSync = Option.isSome(cryptoSync) ? cryptoSync.value.hmacSha256Hex : undefined
    const claimSync = Option.isSome(storeSync) ? storeSync.value.claim : undefined
    const macMatches: Steps<unknown>["macMatches"] =
      hmacSync !== undefined
        ? (key, parts, signature) => constantTimeEqual(hmacSync(key, parts), signature, 3)
        : (key, parts, signature) => crypto.verifyHmacSha256Hex(key, parts, signature.slice(3))
    const claim: Steps<unknown>["claim"] = claimSync ?? ((nonce) => store.claim(nonce))
    const one: Steps<VerifiedHeaders> = { macMatches, claim, found: (headers) => headers }
    const any: Steps<{ readonly headers: VerifiedHeaders; readonly keyIndex: number }> = {
      macMatches,
      claim,
      found: (headers, keyIndex) => ({ headers, keyIndex })
    }
    const unclaimed: Steps<{
      readonly headers: VerifiedHeaders
      readonly keyIndex: number
      readonly nonce: NonceClaim
    }> = { macMatches, claim: undefined, found: (headers, keyIndex, nonce) => ({ headers, keyIndex, nonce }) }
    const run = <A>(
      input: VerifyInput | VerifyAnyInput,
      steps: Steps<A>
    ): Effect.Effect<A, SignatureError | StorageError> =>
      Effect.suspend(() => toEffect(runChecks(input, clock.unsafeCurrentTimeMillis(), steps)))
    return {
      verify: (input) => run(input, one),
      // With both steps synchronous no check suspends, so the list runs to its answer in this call.
      verifySync:
        hmacSync !== undefined && claimSync !== undefined
          ? (input) => runChecks(input, clock.unsafeCurrentTimeMillis(), one) as VerifiedHeaders | SignatureError
          : undefined,
      verifyAny: (input) => run(input, any),
      verifyAnyUnclaimed: (input) =>
        run(input, unclaimed) as Effect.Effect<
          { readonly headers: VerifiedHeaders; readonly keyIndex: number; readonly nonce: NonceClaim },
          SignatureError
        >,
      // One effect step when the checks and the decode answer at once (the common case).
      verifyAndDecode: <A, I>(schema: Schema.Schema<A, I, never>, input: VerifyInput) =>
        Effect.suspend(
          (): Effect.Effect<
            { readonly headers: VerifiedHeaders; readonly body: A },
            VerificationError | StorageError
          > => {
            const outcome = runChecks(input, clock.unsafeCurrentTimeMillis(), one)
            if (outcome instanceof Suspended) {
              return Effect.flatMap(outcome.effect, (headers) =>
                decodeBodyThen(schema, input.body, undefined, (body) => ({ headers, body }))
              )
            }
            if (isFailure(outcome)) return Effect.fail(outcome)
            return decodeBodyThen(schema, input.body, undefined, (body) => ({ headers: outcome, body }))
          }
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
