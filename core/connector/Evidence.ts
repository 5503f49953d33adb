/**
 * Whether a completion's evidence may move an action to `verified` (spec "What the service does"
 * 5 and 7): it must be authoritative evidence of a catalog type, matched to the action's workspace,
 * account, action request and provider idempotency key.
 *
 * The completion body already carries the workspace, action request and key, and the completion is
 * authenticated with the completion secret. The spec's evidence is exactly `entitlement`,
 * `reasonCode` and `source` ("the shape includes string fields `entitlement`, `reasonCode`,
 * `source`"), so a completion with only those verifies (issue 15: "Only `entitlement`, `reasonCode`
 * and `source` are required"). `evidence.accountId` is optional: absent, matching proceeds on the
 * other bindings; present (any value, `null` included) and not the action's account, the evidence
 * does not match (`account_mismatch`), so evidence a customer names for another account never
 * verifies this action.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { type CatalogEvidenceType, CatalogEvidenceType as CatalogEvidenceTypeSchema, type Completion } from "../protocol/messages/Completion.ts"
import type { Trigger } from "./ActionState.ts"

/**
 * The bound facts of the action the evidence must match.
 *
 * @since 0.1.0
 */
export interface EvidenceBinding {
  readonly workspaceId: string
  readonly accountId: string
  readonly actionRequestId: string
  readonly providerIdempotencyKey: string
}

/**
 * @since 0.1.0
 */
export type EvidenceMismatch =
  | "workspace_mismatch"
  | "action_mismatch"
  | "idempotency_key_mismatch"
  | "account_mismatch"
  | "source_not_catalog"
  | "outcome_not_succeeded"

/**
 * @since 0.1.0
 */
export type EvidenceMatch =
  | { readonly _tag: "Matched"; readonly type: CatalogEvidenceType }
  | { readonly _tag: "Unmatched"; readonly reason: EvidenceMismatch }

const isCatalogType = Schema.is(CatalogEvidenceTypeSchema)

/**
 * Checks in a fixed order, so one completion always yields the same reason.
 *
 * @since 0.1.0
 */
export const matchEvidence = (
  binding: EvidenceBinding,
  completion: Pick<Completion, "workspaceId" | "actionRequestId" | "providerIdempotencyKey" | "outcome" | "evidence">
): EvidenceMatch => {
  const unmatched = (reason: EvidenceMismatch): EvidenceMatch => ({ _tag: "Unmatched", reason })
  if (completion.workspaceId !== binding.workspaceId) return unmatched("workspace_mismatch")
  if (completion.actionRequestId !== binding.actionRequestId) return unmatched("action_mismatch")
  if (completion.providerIdempotencyKey !== binding.providerIdempotencyKey) return unmatched("idempotency_key_mismatch")
  const accountId = completion.evidence["accountId"]
  if (accountId !== undefined && accountId !== binding.accountId) return unmatched("account_mismatch")
  if (!isCatalogType(completion.evidence.source)) return unmatched("source_not_catalog")
  if (completion.outcome !== "succeeded" && completion.outcome !== "reversed") return unmatched("outcome_not_succeeded")
  return { _tag: "Matched", type: completion.evidence.source }
}

/**
 * The state machine's trigger for an authenticated completion of the bound action, with the
 * evidence match it carries: the one path from a completion to `transition`.
 *
 * @since 0.1.0
 */
export const completionTrigger = (
  binding: EvidenceBinding,
  completion: Pick<Completion, "workspaceId" | "actionRequestId" | "providerIdempotencyKey" | "outcome" | "evidence">,
  isPayment: boolean
): { readonly match: EvidenceMatch; readonly trigger: Extract<Trigger, { readonly _tag: "CompletionReceived" }> } => {
  const match = matchEvidence(binding, completion)
  return {
    match,
    trigger: { _tag: "CompletionReceived", outcome: completion.outcome, evidenceMatched: match._tag === "Matched", isPayment }
  }
}
