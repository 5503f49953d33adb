/**
 * The kit's record states and completion outbox kind after the claim (spec "Rules for execution
 * handling on the customer side" 6: the completion body is persisted "before any delivery"):
 * shared by the execution step, which commits the completion, and the delivery step, which closes it.
 */
import type { NewOutboxItem } from "../../ports/Outbox.ts"

/**
 * The outbox kind of a completion delivery (dedupe key: the action request id).
 */
export const completeOutboxKind = "customer.complete"

/**
 * The delivery item committed with a completion (spec: persisted "before any delivery"): its body
 * serialized once, the bytes every attempt sends. `slot` is `complete` for the action's completion
 * (deduplicated by the action request id) or the slot of a later payment completion.
 */
export const completionOutboxItem = (
  record: { readonly actionRequestId: string; readonly revision: number },
  completion: { readonly completionId: string; readonly body: unknown; readonly now: number },
  slot = "complete"
): NewOutboxItem => ({
  id: `${record.actionRequestId}:${slot}`,
  kind: completeOutboxKind,
  dedupeKey: slot === "complete" ? record.actionRequestId : `${record.actionRequestId}:${slot}`,
  payload: {
    actionRequestId: record.actionRequestId,
    completionId: completion.completionId,
    body: JSON.stringify(completion.body),
    revision: record.revision
  },
  nextAttemptAt: completion.now,
  createdAt: completion.now
})

/**
 * The kit's record states after the claim (`accepted`, `rejected` are the handler's).
 */
export const kitStates = {
  executing: "executing",
  completing: "completing",
  completed: "completed"
} as const
