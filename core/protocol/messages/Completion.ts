/**
 * The completion callback (spec "Completion body"): the customer backend reports the business
 * outcome of an accepted action, signed with the completion secret.
 */
import * as Schema from "effect/Schema"
import {
  BoundedString,
  Code,
  ExactStruct,
  ExtensibleStruct,
  maxKeys,
  ProtocolVersion,
  ProviderIdempotencyKey,
  ProviderReference,
  Timestamp
} from "./Common.ts"
import { Uuid } from "../Uuid.ts"

/**
 * "Evidence that may move an action to `verified` must be of one of these catalog evidence types."
 */
export const CatalogEvidenceType = Schema.Literal(
  "authenticated_completion",
  "provider_event",
  "customer_server_event",
  "billing_change",
  "subscription_state",
  "entitlement_state",
  "credit_balance",
  "approval_recorded"
)

export type CatalogEvidenceType = typeof CatalogEvidenceType.Type

/**
 * A further evidence value: a scalar only (a string of at most 256 characters, a finite number, a
 * boolean or null), so evidence stays flat and bounded.
 */
export const EvidenceScalar = Schema.Union(
  BoundedString(0, 256),
  Schema.Finite,
  Schema.Boolean,
  Schema.Null
).annotations({ identifier: "EvidenceScalar" })

export type EvidenceScalar = typeof EvidenceScalar.Type

/**
 * The name of a further evidence field: an identifier of 1 to 64 characters.
 */
export const EvidenceFieldName: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, { identifier: "EvidenceFieldName" })
)

/** "The shape includes string fields `entitlement`, `reasonCode`, `source`" plus 16 further keys. */
const maxEvidenceKeys = 3 + 16

/**
 * `evidence`: "the shape includes string fields `entitlement`, `reasonCode`, `source`"; "Further
 * evidence fields and their bounds: not shown". Accord allows up to 16 further scalar fields.
 * `entitlement` may be empty (an action that grants nothing).
 */
export const Evidence = ExtensibleStruct(
  {
    entitlement: BoundedString(0, 128),
    reasonCode: Code,
    source: Code
  },
  Schema.Record({ key: EvidenceFieldName, value: EvidenceScalar })
).pipe(Schema.filter(maxKeys(maxEvidenceKeys), { identifier: "Evidence" }))

/** {@inheritDoc Evidence:var} */
export interface Evidence extends Schema.Schema.Type<typeof Evidence> {}

/**
 * `outcome`: "`succeeded`, `failed`, `unknown` or `reversed`". "Completion of `accepted` or
 * `verified` is never sent."
 */
export const CompletionOutcome: Schema.Literal<["succeeded", "failed", "unknown", "reversed"]> = Schema.Literal(
  "succeeded",
  "failed",
  "unknown",
  "reversed"
)

export type CompletionOutcome = typeof CompletionOutcome.Type

/**
 * `completionId`: "unique per completion, reused on redelivery"; 1 to 128 visible ASCII characters.
 */
export const CompletionId: Schema.filter<typeof Schema.String> = Schema.String.pipe(
  Schema.pattern(/^[\x21-\x7e]{1,128}$/),
  Schema.annotations({ identifier: "CompletionId" })
)

/**
 * The completion body.
 */
export const Completion = ExactStruct({
  type: Schema.Literal("service.customer_action.completion"),
  protocolVersion: ProtocolVersion,
  workspaceId: Uuid,
  actionRequestId: Uuid,
  providerIdempotencyKey: ProviderIdempotencyKey,
  providerReference: ProviderReference,
  completionId: CompletionId,
  completedAt: Timestamp,
  outcome: CompletionOutcome,
  evidence: Evidence
}).annotations({ identifier: "Completion" })

/** {@inheritDoc Completion:var} */
export interface Completion extends Schema.Schema.Type<typeof Completion> {}
