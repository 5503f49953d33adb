/**
 * Looking up the evidence the service holds itself (the table is in `Evidence.ts`): which types an
 * action's catalog entry accepts, and whether the service already holds evidence of a type for an
 * action.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { findAction, paymentEvidenceTypes } from "../catalog/Catalog.ts"
import type { ActionLedgerService, ActionRecord } from "../ports/ActionLedger.ts"
import type { CatalogStoreService } from "../ports/CatalogStore.ts"
import type { EventStoreService, StoredEvent } from "../ports/EventStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { actionsNamedBy } from "../protocol/ActionEvent.ts"
import type { CatalogEvidenceType } from "../protocol/messages/Completion.ts"
import { maxSkewMillis } from "../protocol/Verification.ts"
import { isPaymentAction, type StoredRequest } from "./Action.ts"
import { evidenceObservers } from "./Evidence.ts"

/**
 * The outbox kind of a watch for evidence a completion pointed to but the service did not hold yet.
 */
export const evidenceOutboxKind = "service.evidence"

/**
 * The payload of an evidence watch.
 */
export interface EvidenceWatch {
  readonly actionRequestId: string
  readonly completionId: string
  readonly type: CatalogEvidenceType
}

/**
 * The name of the Direct API event that is `entitlement_state` evidence.
 */
export const entitlementEventName = "entitlement_active"

/** Events looked at per lookup (newest first): enough for any account's events since one intake (less the skew). */
const lookupLimit = 500

/**
 * The types that may verify the action: its catalog entry's `evidence` list. An action whose bound
 * catalog version or entry cannot be read (stored before catalogs existed) falls back to the
 * narrowest rule: the signed completion for an action that is not a payment, reconciliation
 * types for a Payment action.
 */
export const acceptedEvidence = (
  catalogs: CatalogStoreService,
  workspaceId: string,
  request: StoredRequest
): Effect.Effect<ReadonlyArray<CatalogEvidenceType>, StorageError> =>
  Effect.map(catalogs.byPublishedVersion(workspaceId, request.binding.publishedVersionId), (bound) => {
    const entry = Option.isSome(bound) ? findAction(bound.value.document, request.action.id) : undefined
    if (entry !== undefined) return entry.evidence
    return isPaymentAction(request) ? paymentEvidenceTypes : ["authenticated_completion"]
  })

const sameId = (value: unknown, expected: string) =>
  typeof value === "string" && value.toLowerCase() === expected.toLowerCase()

/**
 * How far before the action's intake an event's own `timestamp` may lie and still be evidence for
 * it: the protocol's clock skew ("at most five minutes"). The timestamp is written by the
 * customer's clock and the intake time by the service's, so a backend whose clock runs behind
 * stamps the evidence of an action it just performed before that action's intake.
 */
export const evidenceSkewMillis = maxSkewMillis

/**
 * Whether a stored Direct API event is evidence for the action (docs/decisions.md, "Evidence bound
 * to one action"): its account, the action's journey and published version as `funnel_journey_id` /
 * `funnel_version_id`, for `entitlement_state` the `entitlement_active` event, a `timestamp` no more
 * than `evidenceSkewMillis` before the intake, and bound to this action:
 *
 * - an event naming an action (`core/protocol/ActionEvent.ts`) is evidence only for the action it
 *   names, so evidence of an earlier action of the same account and journey never verifies a later
 *   one, whatever either clock says;
 * - an event naming none is bound by the service's own clock: it must have been received at or
 *   after the intake, so nothing the service held before the action existed verifies it.
 */
export const isEventEvidence = (
  event: Pick<StoredEvent, "accountId" | "eventId" | "eventName" | "occurredAt" | "receivedAt" | "body">,
  type: CatalogEvidenceType,
  record: Pick<ActionRecord, "accountId" | "actionRequestId" | "createdAt">,
  request: Pick<StoredRequest, "binding">
): boolean => {
  if (event.accountId !== record.accountId || event.occurredAt < record.createdAt - evidenceSkewMillis) return false
  if (type === "entitlement_state" && event.eventName !== entitlementEventName) return false
  const properties = (event.body as { readonly properties?: Record<string, unknown> } | null)?.properties ?? {}
  if (
    !sameId(properties["funnel_journey_id"], request.binding.journeyId) ||
    !sameId(properties["funnel_version_id"], request.binding.publishedVersionId)
  )
    return false
  const named = actionsNamedBy({ eventId: event.eventId, eventName: event.eventName, properties })
  if (named.length === 0) return event.receivedAt >= record.createdAt
  return named.length === 1 && named[0] === record.actionRequestId.toLowerCase()
}

/**
 * Whether the service holds evidence of `type` for the action now (see `Evidence.ts`).
 */
export const holdsEvidence = (
  stores: { readonly events: EventStoreService; readonly ledger: ActionLedgerService },
  type: CatalogEvidenceType,
  record: ActionRecord,
  request: StoredRequest
): Effect.Effect<boolean, StorageError> => {
  switch (evidenceObservers[type]) {
    case "completion":
      return Effect.succeed(true)
    case "reconciliation":
      return Effect.succeed(false)
    case "approval":
      return Effect.map(stores.ledger.history(record.actionRequestId), (history) =>
        history.some((h) => h.trigger === "approval_recorded")
      )
    case "direct_api_event":
      return Effect.map(
        stores.events.list({
          workspaceId: record.workspaceId,
          accountId: record.accountId,
          ...(type === "entitlement_state" ? { eventName: entitlementEventName } : {}),
          from: record.createdAt - evidenceSkewMillis,
          limit: lookupLimit
        }),
        (events) => events.some((event) => isEventEvidence(event, type, record, request))
      )
  }
}
