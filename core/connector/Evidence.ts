/**
 * Whether a completion's evidence may move an action to `verified` (spec "What the service does"
 * 5, 7 and 8): the completion's `evidence.source` says which evidence the customer points to, and the
 * action is verified only when the service holds evidence of that type itself, bound to the same
 * workspace, account and action. `evidenceObservers` is the one table of what the service observes
 * for each type:
 *
 * | type | what the service itself holds |
 * |---|---|
 * | `authenticated_completion` | the signed completion itself |
 * | `customer_server_event`, `entitlement_state` | a Direct API event it received with a server ingest key for the same workspace and account, carrying the action's `funnel_journey_id` (`binding.journeyId`) and `funnel_version_id` (`binding.publishedVersionId`), bound to this action: naming it (`core/protocol/ActionEvent.ts`), or naming no action and received after the intake; stamped no more than the protocol's skew before the intake (`ObservedEvidence.isEventEvidence`; `entitlement_state`: an `entitlement_active` event; `customer_server_event`: any event) |
 * | `provider_event`, `billing_change`, `subscription_state`, `credit_balance` | a matched signed reconciliation observation (Payment actions only; `Reconciler.ts`) |
 * | `approval_recorded` | a resolved approval recorded in the action's history |
 *
 * Which types may verify an action is its catalog action's `evidence` list (`core/catalog`). A
 * Payment action is never verified by a completion alone: it always waits for a reconciliation
 * read. Evidence that arrives before the completion is kept (it is stored anyway) and found when
 * the completion comes; evidence that arrives after is found by the evidence watcher
 * (`EvidenceWatcher.ts`).
 *
 * The spec's evidence is exactly `entitlement`, `reasonCode` and `source`, so a completion with only
 * those verifies. `evidence.accountId` is optional: present (any value, `null` included) and not
 * the action's account, the evidence does not match (`account_mismatch`).
 */
import * as Schema from "effect/Schema"
import {
  type CatalogEvidenceType,
  CatalogEvidenceType as CatalogEvidenceTypeSchema,
  type Completion
} from "../protocol/messages/Completion.ts"
import type { Trigger } from "./ActionState.ts"

/**
 * How the service observes each evidence type itself.
 */
export type EvidenceObserver = "completion" | "direct_api_event" | "reconciliation" | "approval"

/**
 * Which observation settles each catalog evidence type: the completion, a Direct API event, a
 * reconciliation read or the approval.
 */
export const evidenceObservers: Readonly<Record<CatalogEvidenceType, EvidenceObserver>> = {
  authenticated_completion: "completion",
  customer_server_event: "direct_api_event",
  entitlement_state: "direct_api_event",
  provider_event: "reconciliation",
  billing_change: "reconciliation",
  subscription_state: "reconciliation",
  credit_balance: "reconciliation",
  approval_recorded: "approval"
}

/**
 * The bound facts of the action the evidence must match.
 */
export interface EvidenceBinding {
  readonly workspaceId: string
  readonly accountId: string
  readonly actionRequestId: string
  readonly providerIdempotencyKey: string
}

/** Which bound fact of the action an evidence item did not match. */
export type EvidenceMismatch =
  | "workspace_mismatch"
  | "action_mismatch"
  | "idempotency_key_mismatch"
  | "account_mismatch"
  | "source_not_catalog"
  | "source_not_accepted"
  | "outcome_not_succeeded"

/**
 * Whether evidence matched the action, and the evidence type it satisfied or the fact it missed.
 */
export type EvidenceMatch =
  | { readonly _tag: "Matched"; readonly type: CatalogEvidenceType }
  | { readonly _tag: "Unmatched"; readonly reason: EvidenceMismatch }

const isCatalogType = Schema.is(CatalogEvidenceTypeSchema)

/**
 * Checks in a fixed order, so one completion always yields the same reason.
 */
export const matchEvidence = (
  binding: EvidenceBinding,
  completion: Pick<Completion, "workspaceId" | "actionRequestId" | "providerIdempotencyKey" | "outcome" | "evidence">,
  /** The types the action's catalog entry accepts (its `evidence` list). */
  accepted: ReadonlyArray<CatalogEvidenceType>
): EvidenceMatch => {
  const unmatched = (reason: EvidenceMismatch): EvidenceMatch => ({ _tag: "Unmatched", reason })
  if (completion.workspaceId !== binding.workspaceId) return unmatched("workspace_mismatch")
  if (completion.actionRequestId !== binding.actionRequestId) return unmatched("action_mismatch")
  if (completion.providerIdempotencyKey !== binding.providerIdempotencyKey) return unmatched("idempotency_key_mismatch")
  const accountId = completion.evidence["accountId"]
  if (accountId !== undefined && accountId !== binding.accountId) return unmatched("account_mismatch")
  if (!isCatalogType(completion.evidence.source)) return unmatched("source_not_catalog")
  if (!accepted.includes(completion.evidence.source)) return unmatched("source_not_accepted")
  if (completion.outcome !== "succeeded" && completion.outcome !== "reversed") return unmatched("outcome_not_succeeded")
  return { _tag: "Matched", type: completion.evidence.source }
}

/**
 * Where a matched completion's evidence stands: `observed` (the service holds it now), `awaiting`
 * (a Direct API event or approval not seen yet: kept pending, looked for again), `via_reconciliation`
 * (a Payment action: a reconciliation read decides) or `not_observable` (a type the service can
 * never observe for this action, such as a provider type for an action that is not a payment).
 */
export type EvidenceStanding = "observed" | "awaiting" | "via_reconciliation" | "not_observable"

/**
 * The standing of a matched type, given whether the service already holds the evidence.
 */
export const evidenceStanding = (type: CatalogEvidenceType, isPayment: boolean, held: boolean): EvidenceStanding => {
  const observer = evidenceObservers[type]
  if (isPayment) return observer === "completion" ? "not_observable" : "via_reconciliation"
  if (observer === "reconciliation") return "not_observable"
  if (observer === "completion") return "observed"
  return held ? "observed" : "awaiting"
}

/**
 * The state machine's trigger for an authenticated completion: `evidenceMatched` is true only when
 * the service holds (or, for a Payment action, will read back) evidence of the type the completion
 * names. The one path from a completion to `transition`.
 */
export const completionTrigger = (
  completion: Pick<Completion, "outcome">,
  match: EvidenceMatch,
  standing: EvidenceStanding | undefined,
  isPayment: boolean
): Extract<Trigger, { readonly _tag: "CompletionReceived" }> => ({
  _tag: "CompletionReceived",
  outcome: completion.outcome,
  evidenceMatched: match._tag === "Matched" && (standing === "observed" || standing === "via_reconciliation"),
  isPayment
})
