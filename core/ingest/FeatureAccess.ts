/**
 * The feature-access event and the feature-gate unlock (spec "Feature access event", "States and
 * transitions", "Emission rules" 7).
 *
 * The checking state moves to the unlocked step on an "`entitlement_active` event received" when:
 * "same account as the verified runtime session; `funnel_journey_id` and `funnel_version_id` match
 * the journey; timestamp after the journey began; sent from the server after the host verified
 * access". "A billing receipt alone, a browser event, or a correct price or provider result
 * without this evidence does not unlock", and "the `feature_adopted` event measures later
 * adoption. It does not unlock the Funnel". The event must also name the gated `feature_key`
 * (exactly: keys are codes). The funnel ids match in any letter case, on both sides.
 * "Sent from the server" means ingested with a key of scope `ingest` (the Direct API's secret key,
 * never used from client code).
 */
import * as Schema from "effect/Schema"
import type { ApiKeyScope } from "../ports/ApiKeyStore.ts"
import { actionEventId } from "../protocol/ActionEvent.ts"
import type { Event } from "./Event.ts"
import { parseUtcTimestamp } from "./Event.ts"

/**
 * The Direct API event that records an account's access to a feature, which feature gates unlock
 * on.
 */
export const featureAccessEventName = "entitlement_active"

/**
 * A feature key as a feature gate names it: a lowercase code of at most 64 characters, checked by
 * the service on `POST /feature-gates` and by clients before they send one.
 */
export const FeatureKey = Schema.String.pipe(Schema.pattern(/^[a-z][a-z0-9_.:-]{0,63}$/))

/**
 * What unlocks a feature gate a Funnel runtime session is waiting on (spec "States and
 * transitions": "same account as the verified runtime session; `funnel_journey_id` and
 * `funnel_version_id` match the journey; timestamp after the journey began"): the verified
 * session's account, the journey and published version, the gated feature, and when the journey
 * began (epoch ms). A stored gate (`FeatureGateStore.FeatureGate`) is one.
 */
export interface UnlockCondition {
  readonly accountId: string
  readonly journeyId: string
  readonly versionId: string
  readonly featureKey: string
  readonly startedAt: number
}

/**
 * How the event reached the service: the scope of the API key it was ingested with.
 */
export interface EventSource {
  readonly keyScope: ApiKeyScope
}

/** Funnel journey and version ids are UUIDs, which compare without regard to case (RFC 9562). */
const sameFunnelId = (sent: unknown, expected: string): boolean =>
  typeof sent === "string" && sent.length === expected.length && sent.toLowerCase() === expected.toLowerCase()

/**
 * Whether `event` is the evidence that unlocks `gate`. Every other event, `feature_adopted` and
 * billing receipts (`payment_succeeded`, `invoice_paid`, `checkout_completed`) included, is not.
 */
export const isAccessEvidence = (
  event: Pick<Event, "event_name" | "account_id" | "timestamp" | "properties">,
  gate: UnlockCondition,
  source: EventSource
): boolean => {
  if (event.event_name !== featureAccessEventName || source.keyScope !== "ingest") return false
  if (event.account_id !== gate.accountId) return false
  const properties = event.properties ?? {}
  if (
    !sameFunnelId(properties.funnel_journey_id, gate.journeyId) ||
    !sameFunnelId(properties.funnel_version_id, gate.versionId) ||
    properties.feature_key !== gate.featureKey
  )
    return false
  const at = parseUtcTimestamp(event.timestamp)
  return at !== undefined && at > gate.startedAt
}

/**
 * What the server SDK helper needs: the account and feature the host's entitlement check
 * succeeded for, the journey and version from the verified action (for a connector execution
 * request, `binding.journeyId` and `binding.publishedVersionId`), when access became active (an
 * ISO 8601 UTC timestamp) and the verified action's request id.
 */
export interface FeatureAccessInput {
  readonly accountId: string
  readonly featureKey: string
  readonly journeyId: string
  readonly versionId: string
  readonly occurredAt: string
  readonly actionRequestId: string
}

/**
 * The retry identity of a feature-access event: `entitlement_active:<actionRequestId>:<featureKey>`.
 * The action request already binds the account, journey and version; the occurrence time is part
 * of the payload, so a retry must resend the same time (a different one is a conflict, not a
 * second unlock). The id also names the action, which binds the event to that one action as
 * `entitlement_state` evidence (`core/protocol/ActionEvent.ts`).
 */
export const featureAccessEventId = (input: Pick<FeatureAccessInput, "actionRequestId" | "featureKey">): string =>
  actionEventId(featureAccessEventName, input.actionRequestId, input.featureKey)

/**
 * The spec's feature access event: `event_id`, `event_name` `entitlement_active`, `account_id`,
 * `timestamp`, `semantic_type` `activation`, `event_kind` `product_action`, and `properties`
 * `feature_key`, `funnel_journey_id`, `funnel_version_id`. Send it only after the host's
 * entitlement check succeeded for that account.
 */
export const buildFeatureAccessEvent = (input: FeatureAccessInput): Event => ({
  event_id: featureAccessEventId(input),
  event_name: featureAccessEventName,
  account_id: input.accountId,
  timestamp: input.occurredAt,
  semantic_type: "activation",
  event_kind: "product_action",
  properties: {
    feature_key: input.featureKey,
    funnel_journey_id: input.journeyId,
    funnel_version_id: input.versionId
  }
})
