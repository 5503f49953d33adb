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
import type { CatalogEvidenceType } from "../protocol/messages/Completion.ts"
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

/** Events looked at per lookup (newest first): enough for any account's events since one intake. */
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
 * Whether a stored Direct API event is evidence for the action: its account, the action's journey
 * and published version as `funnel_journey_id` / `funnel_version_id`, occurring at or after the
 * action's intake, and for `entitlement_state` the `entitlement_active` event.
 */
export const isEventEvidence = (
  event: Pick<StoredEvent, "accountId" | "eventName" | "occurredAt" | "body">,
  type: CatalogEvidenceType,
  record: Pick<ActionRecord, "accountId" | "createdAt">,
  request: Pick<StoredRequest, "binding">
): boolean => {
  if (event.accountId !== record.accountId || event.occurredAt < record.createdAt) return false
  if (type === "entitlement_state" && event.eventName !== entitlementEventName) return false
  const properties = (event.body as { readonly properties?: Record<string, unknown> } | null)?.properties ?? {}
  return (
    sameId(properties["funnel_journey_id"], request.binding.journeyId) &&
    sameId(properties["funnel_version_id"], request.binding.publishedVersionId)
  )
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
          from: record.createdAt,
          limit: lookupLimit
        }),
        (events) => events.some((event) => isEventEvidence(event, type, record, request))
      )
  }
}
