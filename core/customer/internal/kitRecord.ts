/**
 * The kit's record states and completion outbox kind after the claim (spec "Rules for execution
 * handling on the customer side" 6: the completion body is persisted "before any delivery"):
 * shared by the execution step, which commits the completion, and the delivery step, which closes it.
 */

/**
 * The outbox kind of a completion delivery (dedupe key: the action request id).
 */
export const completeOutboxKind = "customer.complete"

/**
 * The kit's record states after the claim (`accepted`, `rejected` are the handler's).
 */
export const kitStates = {
  executing: "executing",
  completing: "completing",
  completed: "completed"
} as const
