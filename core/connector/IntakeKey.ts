/**
 * Intake idempotency for callers (the convention of payment APIs): a caller sends
 * an `Idempotency-Key` with `POST /action-requests` so that a retry after a lost reply answers the
 * original action instead of creating a second one ("One authorized action per request").
 *
 * - A key is 1–255 visible ASCII characters (`isIntakeKey`); anything else is `InvalidIdempotencyKey`.
 * - The same key with the same intake (SHA-256 of its canonical JSON, so member order does not
 *   matter) answers the original `actionRequestId` and state; with another intake it is
 *   `IdempotencyKeyReused`.
 * - A key is kept for `intakeKeyRetentionMillis` (24 hours) after its action was created; an older
 *   claim is ignored and replaced by the next intake under that key.
 * - Only a created action claims a key: a refused intake stores nothing under it.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Crypto } from "../ports/Crypto.ts"
import type { IntakeKeyClaim } from "../ports/ActionLedger.ts"
import { sha256Hex } from "../protocol/Digest.ts"
import { canonicalJson } from "../protocol/Json.ts"
import type { ActionIntake } from "./Action.ts"

/**
 * How long an intake key is kept: 24 hours, the least callers of payment APIs rely on.
 */
export const intakeKeyRetentionMillis = 24 * 60 * 60 * 1000

/**
 * The oldest `createdAt` of a claim still live at `now`.
 */
export const intakeKeyLiveSince = (now: number): number => now - intakeKeyRetentionMillis

const keyFormat = /^[\x21-\x7e]{1,255}$/

/**
 * A well-formed intake key: 1–255 visible ASCII characters (no space, no control characters).
 */
export const isIntakeKey = (key: string): boolean => keyFormat.test(key)

/**
 * The caller's `Idempotency-Key` is not 1–255 visible ASCII characters: nothing was stored.
 */
export class InvalidIdempotencyKey extends Schema.TaggedError<InvalidIdempotencyKey>()("InvalidIdempotencyKey", {}) {}

/**
 * The caller's `Idempotency-Key` was already used for a different intake: nothing was stored.
 */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {}) {}

/**
 * A checked key and the hash of the intake it is sent with.
 */
export interface IntakeKey {
  readonly idempotencyKey: string
  readonly bodyHash: string
}

/**
 * Checks the key's format and hashes the decoded intake (lowercase hex SHA-256 of its canonical JSON).
 */
export const prepareIntakeKey = (
  idempotencyKey: string,
  input: ActionIntake
): Effect.Effect<IntakeKey, InvalidIdempotencyKey, Crypto> =>
  isIntakeKey(idempotencyKey)
    ? Effect.map(sha256Hex(canonicalJson(input)), (bodyHash) => ({ idempotencyKey, bodyHash }))
    : Effect.fail(new InvalidIdempotencyKey())

/**
 * The answer to an intake whose key has a live claim: the original action (a replay) when the
 * intake is the same, `IdempotencyKeyReused` otherwise.
 */
export const replayClaim = (
  claim: IntakeKeyClaim,
  key: IntakeKey
): Effect.Effect<{ readonly actionRequestId: string }, IdempotencyKeyReused> =>
  claim.bodyHash === key.bodyHash
    ? Effect.succeed({ actionRequestId: claim.actionRequestId })
    : Effect.fail(new IdempotencyKeyReused())
