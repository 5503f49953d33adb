/**
 * The approval review (spec "Approval review projection"): what the billing owner sees when
 * preparing an approval. "It never contains the approval token or a mutation payload": every
 * struct here is exact, so neither can appear.
 */
import * as Schema from "effect/Schema"
import { parseTimestamp } from "../Timestamp.ts"
import {
  ActionKey,
  BoundedString,
  DisplayConfirmation,
  DisplayLabel,
  ExactStruct,
  NonNegativeInt,
  Sha256Hex,
  Timestamp
} from "./Common.ts"
import { Uuid } from "../Uuid.ts"

/**
 * "The display-safe action": its key and safe terms (the catalog's), never its operation.
 */
export const ReviewAction = ExactStruct({
  key: ActionKey,
  label: DisplayLabel,
  confirmation: DisplayConfirmation
}).annotations({ identifier: "ReviewAction" })

/** {@inheritDoc ReviewAction:var} */
export interface ReviewAction extends Schema.Schema.Type<typeof ReviewAction> {}

/**
 * What will run, in display form: the operation's key fields. An extend-trial action shows its
 * `extensionDays` and its target (`target`: the trial entity's kind and key); a Payment action its
 * charge (`amountMinor`, `currency`, as snapshotted from the catalog offer), billing `interval` and
 * `proration` when the catalog action fixes them. Never the raw operation (the mutation payload).
 */
export const ReviewOperation = ExactStruct({
  family: BoundedString(1, 64),
  extensionDays: Schema.optionalWith(Schema.Int, { exact: true }),
  target: Schema.optionalWith(BoundedString(1, 200), { exact: true }),
  amountMinor: Schema.optionalWith(Schema.Int, { exact: true }),
  currency: Schema.optionalWith(BoundedString(1, 8), { exact: true }),
  interval: Schema.optionalWith(BoundedString(1, 16), { exact: true }),
  proration: Schema.optionalWith(BoundedString(1, 32), { exact: true })
}).annotations({ identifier: "ReviewOperation" })

/** {@inheritDoc ReviewOperation:var} */
export interface ReviewOperation extends Schema.Schema.Type<typeof ReviewOperation> {}

/**
 * "Optional offer terms", as display strings.
 */
export const ReviewOffer = ExactStruct({
  offerId: Uuid,
  label: DisplayLabel,
  priceDisplay: Schema.optionalWith(BoundedString(1, 100), { exact: true }),
  termsDisplay: Schema.optionalWith(BoundedString(1, 500), { exact: true })
}).annotations({ identifier: "ReviewOffer" })

/** {@inheritDoc ReviewOffer:var} */
export interface ReviewOffer extends Schema.Schema.Type<typeof ReviewOffer> {}

/**
 * "Timing and proration". `prorationAmountMinor` is signed: a downgrade may credit.
 */
export const ReviewTiming = ExactStruct({
  effectiveAt: Timestamp,
  prorationDisplay: Schema.optionalWith(BoundedString(1, 200), { exact: true }),
  prorationAmountMinor: Schema.optionalWith(Schema.Int, { exact: true })
}).annotations({ identifier: "ReviewTiming" })

/** {@inheritDoc ReviewTiming:var} */
export interface ReviewTiming extends Schema.Schema.Type<typeof ReviewTiming> {}

/**
 * "The requester role" (the requester's session is "immutable provenance only").
 */
export const ReviewRequester = ExactStruct({
  roleKey: BoundedString(1, 128)
}).annotations({ identifier: "ReviewRequester" })

/** {@inheritDoc ReviewRequester:var} */
export interface ReviewRequester extends Schema.Schema.Type<typeof ReviewRequester> {}

/**
 * The bounded `reviewProjection`: "the display-safe action and optional offer terms; timing and
 * proration; the requester role and the approval expiry; an opaque commercial dependency hash".
 */
export const ReviewProjection = ExactStruct({
  action: ReviewAction,
  operation: ReviewOperation,
  offer: Schema.optionalWith(ReviewOffer, { exact: true }),
  timing: ReviewTiming,
  requester: ReviewRequester,
  approvalExpiresAt: Timestamp,
  dependencyHash: Sha256Hex
}).annotations({ identifier: "ReviewProjection" })

/** {@inheritDoc ReviewProjection:var} */
export interface ReviewProjection extends Schema.Schema.Type<typeof ReviewProjection> {}

/**
 * The prepare response: "`reviewProjection`, `revision`, `reviewValidUntil` and `projectionHash`".
 * "Approval review: bounded by `reviewValidUntil` and the approval expiry", so a review never
 * outlives the approval it reviews.
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

/** {@inheritDoc ApprovalPrepareResponse:var} */
export interface ApprovalPrepareResponse extends Schema.Schema.Type<typeof ApprovalPrepareResponse> {}
