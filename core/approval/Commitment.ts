/**
 * The approval commitment (spec "Approval flow rules" 3): the one canonical encoding the service
 * hashes when it prepares a review (`projectionHash`) and again, from a fresh preflight, when the
 * billing owner resolves it. Defined once, here.
 *
 * Encoding: SHA-256, as lowercase hex, of the UTF-8 bytes of a domain line and the canonical JSON
 * (RFC 8785 key order, no whitespace; `Json.canonicalJson`) of the value, joined by a newline:
 *
 * - commitment: `accord-approval-commitment-v2` and a `CommitmentInput` (v2 added the reviewer and
 *   the projection's operation);
 * - dependency hash: `accord-approval-dependency-v1` and a `Dependencies`;
 * - fingerprint (of an operation, safe terms or price): `accord-fingerprint-v1` and the value.
 *
 * Timestamps inside are ISO 8601 strings with milliseconds (`formatTimestamp`), so the encoding
 * never depends on a runtime's number formatting beyond integers. The known-answer vectors in
 * `test/core/approval/Commitment.test.ts` pin it.
 */
import type * as Effect from "effect/Effect"
import type { Crypto } from "../ports/Crypto.ts"
import { sha256Hex } from "../protocol/Digest.ts"
import { canonicalJson } from "../protocol/Json.ts"
import type { ReviewProjection } from "../protocol/messages/Approval.ts"

/**
 * Domain-separation label of the review commitment hash; a new version of the commitment changes
 * it.
 */
export const commitmentDomain = "accord-approval-commitment-v2"

/**
 * Domain-separation label of the hash over the facts a review depends on (catalog, capability,
 * frequency).
 */
export const dependencyDomain = "accord-approval-dependency-v1"

/** Domain-separation label of the fingerprints a review shows in place of raw values. */
export const fingerprintDomain = "accord-fingerprint-v1"

const domainHash = (domain: string, value: unknown): Effect.Effect<string, never, Crypto> =>
  sha256Hex(`${domain}\n${canonicalJson(value)}`)

/**
 * A fingerprint of a JSON value: an operation, safe terms, a price.
 */
export const fingerprint = (value: unknown): Effect.Effect<string, never, Crypto> =>
  domainHash(fingerprintDomain, value)

/**
 * What a commercial review depends on, read from the current state: the current published catalog,
 * the action's and offer's current versions and price, the decision's expiry and account rule, and
 * for a Payment action the connector revision and the payment mode. Any change makes the review
 * stale.
 */
export interface Dependencies {
  readonly publishedVersionId: string | null
  readonly actionVersionId: string | null
  readonly offerVersionId: string | null
  readonly price: { readonly amountMinor: number; readonly currency: string } | null
  readonly decisionValidUntil: string | null
  readonly accountStatuses: ReadonlyArray<string> | null
  readonly connector: { readonly connectionId: string; readonly revision: number; readonly paymentMode: string } | null
}

/**
 * The opaque commercial dependency hash shown in the review.
 */
export const dependencyHash = (dependencies: Dependencies): Effect.Effect<string, never, Crypto> =>
  domainHash(dependencyDomain, dependencies)

/**
 * Everything the commitment binds: the safe projection plus the workspace, account, requester
 * provenance, action and offer binding versions and fingerprints, the approval revision and
 * expiry, and the current dependency hash (rule 3); and the reviewer, the billing-owner session
 * that prepared the review, whose subject and role are the executed action's actor (only that
 * session may approve it).
 */
export interface CommitmentInput {
  readonly workspaceId: string
  readonly accountId: string
  readonly approvalId: string
  readonly requester: { readonly sessionId: string; readonly subject: string; readonly role: string }
  readonly reviewer: { readonly sessionId: string; readonly subject: string; readonly role: string }
  readonly projection: ReviewProjection
  readonly binding: { readonly decisionId: string; readonly journeyId: string; readonly publishedVersionId: string }
  readonly action: {
    readonly actionId: string
    readonly actionVersionId: string | null
    readonly key: string
    readonly family: string
    readonly operationFingerprint: string
    readonly safeTermsFingerprint: string
  }
  readonly offer: {
    readonly offerId: string
    readonly offerVersionId: string | null
    readonly priceFingerprint: string | null
  }
  readonly revision: number
  readonly approvalExpiresAt: string
  readonly reviewValidUntil: string
  readonly dependencyHash: string
}

/**
 * The commitment hash: the prepare response's `projectionHash`, and what an approve must present
 * as `reviewedProjectionHash`.
 */
export const commitmentHash = (input: CommitmentInput): Effect.Effect<string, never, Crypto> =>
  domainHash(commitmentDomain, input)

const minorDigits: Readonly<Record<string, number>> = {
  bif: 0,
  clp: 0,
  djf: 0,
  gnf: 0,
  isk: 0,
  jpy: 0,
  kmf: 0,
  krw: 0,
  pyg: 0,
  rwf: 0,
  ugx: 0,
  uyi: 0,
  vnd: 0,
  vuv: 0,
  xaf: 0,
  xof: 0,
  xpf: 0,
  bhd: 3,
  iqd: 3,
  jod: 3,
  kwd: 3,
  lyd: 3,
  omr: 3,
  tnd: 3
}

/**
 * A price for display, the same on every runtime (no locale data): major units with the
 * currency's ISO 4217 minor digits, then the upper-case code. `4900, "usd"` → `49.00 USD`.
 */
export const formatPrice = (amountMinor: number, currency: string): string => {
  const digits = minorDigits[currency] ?? 2
  const text = String(amountMinor).padStart(digits + 1, "0")
  const major = digits === 0 ? text : `${text.slice(0, -digits)}.${text.slice(-digits)}`
  return `${major} ${currency.toUpperCase()}`
}
