/**
 * The execution request (spec "Execution request body"): the service asks the customer backend to
 * perform exactly one already-authorized action. "The customer backend executes only the exact
 * `action.operation` it receives."
 */
import * as Schema from "effect/Schema"
import {
  AccountId,
  ActionKey,
  BoundedString,
  DisplayConfirmation,
  DisplayLabel,
  ExactStruct,
  ExtensibleStruct,
  maxKeys,
  Nonce,
  NonNegativeInt,
  ProtocolVersion,
  ProviderIdempotencyKey,
  Timestamp
} from "./Common.ts"
import { Uuid } from "../Uuid.ts"

/**
 * `trialRef`: "object with `entityKey` string, `entityKind` string, `version` integer".
 */
export const TrialRef = ExactStruct({
  entityKey: BoundedString(1, 128),
  entityKind: BoundedString(1, 64),
  version: NonNegativeInt
}).annotations({ identifier: "TrialRef" })

/** {@inheritDoc TrialRef:var} */
export interface TrialRef extends Schema.Schema.Type<typeof TrialRef> {}

/**
 * The extend-trial family: "carries `extensionDays` (integer) and `trialRef`". At most a year per
 * extension.
 */
export const ExtendTrialOperation = ExactStruct({
  family: Schema.Literal("extend_trial"),
  extensionDays: Schema.Int.pipe(Schema.between(1, 365)),
  trialRef: TrialRef
}).annotations({ identifier: "ExtendTrialOperation" })

/** {@inheritDoc ExtendTrialOperation:var} */
export interface ExtendTrialOperation extends Schema.Schema.Type<typeof ExtendTrialOperation> {}

/**
 * A family name other than `extend_trial`: lower-case, digits, `_` and `.`, 1 to 64 characters.
 * Refusing `extend_trial` here means a malformed extend-trial operation fails instead of being
 * accepted as an unknown family.
 */
export const OtherFamily: Schema.filter<Schema.filter<typeof Schema.String>> = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_.]{0,63}$/),
  Schema.filter((family) => family !== "extend_trial" || "a family other than extend_trial", {
    identifier: "OtherFamily"
  })
)

/**
 * The name of a family-specific operation field: an identifier of 1 to 64 characters.
 */
export const OperationFieldName: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, { identifier: "OperationFieldName" })
)

/**
 * Any other family: "object with a `family` string plus family-specific fields"; "Operation fields
 * of families other than extend-trial: not shown". Kept open (the customer backend, not the
 * transport, owns their meaning) but bounded to 32 keys.
 */
export const OtherOperation = ExtensibleStruct(
  { family: OtherFamily },
  Schema.Record({ key: OperationFieldName, value: Schema.Unknown })
).pipe(Schema.filter(maxKeys(32), { identifier: "OtherOperation" }))

/** {@inheritDoc OtherOperation:var} */
export interface OtherOperation extends Schema.Schema.Type<typeof OtherOperation> {}

/**
 * `action.operation`.
 */
export const Operation: Schema.Union<[typeof ExtendTrialOperation, typeof OtherOperation]> = Schema.Union(
  ExtendTrialOperation,
  OtherOperation
)

export type Operation = ExtendTrialOperation | OtherOperation

/**
 * Narrows an operation to the extend-trial family (`OtherOperation.family` is a plain string, so a
 * comparison alone does not narrow).
 */
export const isExtendTrialOperation = (operation: Operation): operation is ExtendTrialOperation =>
  operation.family === "extend_trial"

/**
 * `action.safeTerms`: "object with display strings `confirmation` and `label`".
 */
export const SafeTerms = ExactStruct({
  confirmation: DisplayConfirmation,
  label: DisplayLabel
}).annotations({ identifier: "SafeTerms" })

/** {@inheritDoc SafeTerms:var} */
export interface SafeTerms extends Schema.Schema.Type<typeof SafeTerms> {}

/**
 * `action`: the one authorized action.
 */
export const Action = ExactStruct({
  id: Uuid,
  key: ActionKey,
  operation: Operation,
  safeTerms: SafeTerms
}).annotations({ identifier: "Action" })

/** {@inheritDoc Action:var} */
export interface Action extends Schema.Schema.Type<typeof Action> {}

/**
 * `actor`: who authorized the action ("for example a billing-owner authority").
 */
export const Actor = ExactStruct({
  authority: BoundedString(1, 256),
  roleKey: BoundedString(1, 256),
  subjectId: BoundedString(1, 256)
}).annotations({ identifier: "Actor" })

/** {@inheritDoc Actor:var} */
export interface Actor extends Schema.Schema.Type<typeof Actor> {}

/**
 * `binding`: the decision, journey, offer and published version the action is bound to. "Browser
 * input must never replace the bound account, offer, version, action or safe terms."
 */
export const Binding = ExactStruct({
  decisionId: Uuid,
  journeyId: Uuid,
  offerId: Uuid,
  publishedVersionId: Uuid
}).annotations({ identifier: "Binding" })

/** {@inheritDoc Binding:var} */
export interface Binding extends Schema.Schema.Type<typeof Binding> {}

/**
 * The execution request body. `requestNonce` equals the delivery's nonce header (docs/decisions.md,
 * "Execution nonce and retries"), and `providerIdempotencyKey` equals the idempotency header and the
 * locally derived key; both equalities are checked by the handler, not the schema.
 */
export const ExecutionRequest = ExactStruct({
  type: Schema.Literal("service.customer_action.execute"),
  protocolVersion: ProtocolVersion,
  workspaceId: Uuid,
  accountId: AccountId,
  actionRequestId: Uuid,
  action: Action,
  actor: Actor,
  binding: Binding,
  providerIdempotencyKey: ProviderIdempotencyKey,
  requestedAt: Timestamp,
  requestNonce: Nonce
}).annotations({ identifier: "ExecutionRequest" })

/** {@inheritDoc ExecutionRequest:var} */
export interface ExecutionRequest extends Schema.Schema.Type<typeof ExecutionRequest> {}
