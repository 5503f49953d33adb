/**
 * The action model of the service side of the connector (spec "Execution request body", "Payment
 * continuation rules" 2): what a caller submits for dispatch (`ActionIntake`), the price and version
 * snapshot a Payment action carries (`PaymentSnapshot`), which actions are Payment actions and with
 * which capability mode (read from the operation family table, `protocol/OperationFamily.ts`), and
 * the request as the `ActionLedger` stores it (`StoredRequest`, decoded once by
 * `decodeStoredRequest` wherever a stored action is used).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { ActionRecord } from "../ports/ActionLedger.ts"
import * as FastDecode from "../protocol/FastDecode.ts"
import { AccountId, PaymentMode as PaymentModeSchema, Sha256Hex } from "../protocol/messages/Common.ts"
import { Action, Actor, Binding } from "../protocol/messages/Execution.ts"
import { Currency } from "../protocol/messages/Reconciliation.ts"
import { familyRule, type PaymentRule } from "../protocol/OperationFamily.ts"
import { Uuid } from "../protocol/Uuid.ts"

/**
 * The outbox kind of a delivery of an action to the customer endpoint.
 */
export const dispatchOutboxKind = "service.dispatch"

/**
 * The outbox kind of a payment reconciliation read.
 */
export const reconcileOutboxKind = "service.reconcile"

/**
 * The price and version snapshot taken at authorization, for Payment actions.
 */
export const PaymentSnapshot = Schema.Struct({
  mode: PaymentModeSchema,
  actionVersionId: Uuid,
  offerVersionId: Schema.NullOr(Uuid),
  expected: Schema.NullOr(
    Schema.Struct({
      amountMinor: Schema.Int.pipe(Schema.nonNegative()),
      currency: Currency,
      priceReferenceHash: Sha256Hex
    })
  )
}).annotations({ identifier: "PaymentSnapshot", parseOptions: { onExcessProperty: "error" } })

/** {@inheritDoc PaymentSnapshot:var} */
export interface PaymentSnapshot extends Schema.Schema.Type<typeof PaymentSnapshot> {}

/**
 * The caller-owned parts of an execution request (`POST /action-requests`).
 */
export const ActionIntake = Schema.Struct({
  // The one identifier rule (the execution message's own `AccountId`): an account taken here is
  // never refused later by the customer's endpoint or by ingest.
  accountId: AccountId,
  action: Action,
  actor: Actor,
  binding: Binding,
  payment: Schema.optionalWith(PaymentSnapshot, { exact: true })
}).annotations({ identifier: "ActionIntake", parseOptions: { onExcessProperty: "error" } })

/** {@inheritDoc ActionIntake:var} */
export interface ActionIntake extends Schema.Schema.Type<typeof ActionIntake> {}

/**
 * Who authorized an action: the admin API key that submitted it, or (approvals) a runtime session.
 * Revalidation checks it is still live before every delivery.
 */
export const Authority = Schema.Struct({
  kind: Schema.Literal("api_key", "runtime_session"),
  id: Schema.String
})

/** {@inheritDoc Authority:var} */
export interface Authority extends Schema.Schema.Type<typeof Authority> {}

/**
 * What the ledger stores as the action's `request`: the intake as accepted, and who authorized it.
 */
export const StoredRequest = Schema.Struct({
  ...ActionIntake.fields,
  authorizedBy: Schema.optionalWith(Authority, { exact: true })
}).annotations({ identifier: "StoredRequest", parseOptions: { onExcessProperty: "error" } })

/** {@inheritDoc StoredRequest:var} */
export interface StoredRequest extends Schema.Schema.Type<typeof StoredRequest> {}

/**
 * A stored action whose `request` is not a `StoredRequest` (a corrupted or foreign row).
 */
export class StoredRequestInvalid extends Schema.TaggedError<StoredRequestInvalid>()("StoredRequestInvalid", {
  actionRequestId: Schema.String
}) {}

const decodeRequest = FastDecode.decodeUnknown(StoredRequest)

/**
 * Decodes the request of a stored action.
 */
export const decodeStoredRequest = (
  record: Pick<ActionRecord, "actionRequestId" | "request">
): Effect.Effect<StoredRequest, StoredRequestInvalid> =>
  Effect.mapError(
    decodeRequest(record.request),
    () => new StoredRequestInvalid({ actionRequestId: record.actionRequestId })
  )

const decodeRequestEither = FastDecode.decodeUnknownEither(StoredRequest)

/**
 * {@link decodeStoredRequest} as a plain function (the stored request's schema is synchronous), for
 * a caller that handles the invalid case itself: the dispatcher, before every delivery.
 */
export const decodeStoredRequestEither = (
  record: Pick<ActionRecord, "actionRequestId" | "request">
): Either.Either<StoredRequest, StoredRequestInvalid> =>
  Either.mapLeft(
    decodeRequestEither(record.request),
    () => new StoredRequestInvalid({ actionRequestId: record.actionRequestId })
  )

/**
 * The Payment rule of an action's operation family (`OperationFamily.ts`): `undefined` for a family
 * that is not a Payment action. A family absent from the table has no rule either: intake refuses
 * such an action (revalidation: `operation_family_mismatch`, the catalog's families being the
 * table's), so no stored action has one.
 */
export const paymentRuleOf = (request: {
  readonly action: { readonly operation: { readonly family: string } }
}): PaymentRule | undefined => {
  const rule = familyRule(request.action.operation.family)
  return Either.isRight(rule) ? rule.right.payment : undefined
}

/**
 * Whether the action is a Payment action: its operation family is one of the payment operation keys.
 */
export const isPaymentAction = (request: Pick<StoredRequest, "action">): boolean => paymentRuleOf(request) !== undefined

/**
 * Why an intake's payment snapshot does not fit its action.
 */
export const PaymentSnapshotProblem = Schema.Literal(
  "snapshot_required",
  "snapshot_not_allowed",
  "mode_mismatch",
  "terms_required"
)

export type PaymentSnapshotProblem = typeof PaymentSnapshotProblem.Type

/**
 * The snapshot check: a Payment action carries a snapshot of its family's mode, with the exact
 * price unless its family is unpriced ("a non-purchase setup has no priced offer"); an action of
 * another family of the table carries none. `undefined` when the snapshot fits, and for a family
 * absent from the table, which is not judged here but refused (revalidation:
 * `operation_family_mismatch`).
 */
export const checkPaymentSnapshot = (input: ActionIntake): PaymentSnapshotProblem | undefined => {
  const family = familyRule(input.action.operation.family)
  if (Either.isLeft(family)) return undefined
  const rule = family.right.payment
  if (rule === undefined) return input.payment === undefined ? undefined : "snapshot_not_allowed"
  if (input.payment === undefined) return "snapshot_required"
  if (input.payment.mode !== rule.mode) return "mode_mismatch"
  if ((input.payment.expected === null) === rule.priced) return "terms_required"
  return undefined
}
