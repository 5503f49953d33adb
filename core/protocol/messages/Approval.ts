/**
 * The approval review (spec "Approval review projection"): what the billing owner sees when
 * preparing an approval. "It never contains the approval token or a mutation payload": every
 * struct here is exact, so neither can appear.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { parseTimestamp } from "../Timestamp.ts"
import { ActionKey, BoundedString, DisplayConfirmation, DisplayLabel, ExactStruct, NonNegativeInt, Sha256Hex, Timestamp } from "./Common.ts"
import { Uuid } from "../Uuid.ts"

/**
 * "The display-safe action": its key and safe terms, never its operation.
 *
 * @since 0.1.0
 */
export const ReviewAction = ExactStruct({
  key: ActionKey,
  label: DisplayLabel,
  confirmation: DisplayConfirmation
}).annotations({ identifier: "ReviewAction" })

/**
 * @since 0.1.0
 */
export interface ReviewAction extends Schema.Schema.Type<typeof ReviewAction> {}

/**
 * "Optional offer terms", as display strings.
 *
 * @since 0.1.0
 */
export const ReviewOffer = ExactStruct({
  offerId: Uuid,
  label: DisplayLabel,
  priceDisplay: Schema.optionalWith(BoundedString(1, 100), { exact: true }),
  termsDisplay: Schema.optionalWith(BoundedString(1, 500), { exact: true })
}).annotations({ identifier: "ReviewOffer" })

/**
 * @since 0.1.0
 */
export interface ReviewOffer extends Schema.Schema.Type<typeof ReviewOffer> {}

/**
 * "Timing and proration". `prorationAmountMinor` is signed: a downgrade may credit.
 *
 * @since 0.1.0
 */
export const ReviewTiming = ExactStruct({
  effectiveAt: Timestamp,
  prorationDisplay: Schema.optionalWith(BoundedString(1, 200), { exact: true }),
  prorationAmountMinor: Schema.optionalWith(Schema.Int, { exact: true })
}).annotations({ identifier: "ReviewTiming" })

/**
 * @since 0.1.0
 */
export interface ReviewTiming extends Schema.Schema.Type<typeof ReviewTiming> {}

/**
 * "The requester role" (the requester's session is "immutable provenance only").
 *
 * @since 0.1.0
 */
export const ReviewRequester = ExactStruct({
  roleKey: BoundedString(1, 128)
}).annotations({ identifier: "ReviewRequester" })

/**
 * @since 0.1.0
 */
export interface ReviewRequester extends Schema.Schema.Type<typeof ReviewRequester> {}

/**
 * The bounded `reviewProjection`: "the display-safe action and optional offer terms; timing and
 * proration; the requester role and the approval expiry; an opaque commercial dependency hash".
 *
 * @since 0.1.0
 */
export const ReviewProjection = ExactStruct({
  action: ReviewAction,
  offer: Schema.optionalWith(ReviewOffer, { exact: true }),
  timing: ReviewTiming,
  requester: ReviewRequester,
  approvalExpiresAt: Timestamp,
  dependencyHash: Sha256Hex
}).annotations({ identifier: "ReviewProjection" })

/**
 * @since 0.1.0
 */
export interface ReviewProjection extends Schema.Schema.Type<typeof ReviewProjection> {}

/**
 * The prepare response: "`reviewProjection`, `revision`, `reviewValidUntil` and `projectionHash`".
 * "Approval review: bounded by `reviewValidUntil` and the approval expiry", so a review never
 * outlives the approval it reviews.
 *
 * @since 0.1.0
 */
export const ApprovalPrepareResponse = ExactStruct({
  reviewProjection: ReviewProjection,
  revision: NonNegativeInt,
  reviewValidUntil: Timestamp,
  projectionHash: Sha256Hex
}).pipe(
  Schema.filter(
    (response) =>
      parseTimestamp(response.reviewValidUntil)! <= parseTimestamp(response.reviewProjection.approvalExpiresAt)! ||
      "reviewValidUntil at or before reviewProjection.approvalExpiresAt",
    { identifier: "ApprovalPrepareResponse" }
  )
)

/**
 * @since 0.1.0
 */
export interface ApprovalPrepareResponse extends Schema.Schema.Type<typeof ApprovalPrepareResponse> {}
