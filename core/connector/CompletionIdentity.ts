/**
 * The completion identity rule (spec "Completion body": "`completionId`: unique per completion,
 * reused on redelivery"): a completion whose `completionId` was never received is new; the same
 * `completionId` for the same action with the same body bytes is a redelivery (answered again,
 * recorded once); the same `completionId` with another body or for another action is a conflict.
 *
 * The completion intake and every `ActionLedger` (memory and SQL) decide through this one function.
 */

/**
 * What identifies one received completion: its id, the action it completes and the hash of its
 * body bytes.
 */
export interface CompletionIdentityFields {
  readonly completionId: string
  readonly actionRequestId: string
  /** Lowercase hex SHA-256 of the completion body. */
  readonly bodyHash: string
}

/**
 * How a received completion relates to those recorded: a new one, a redelivery of one, or a
 * different one under the same id.
 */
export type CompletionIdentity = "new" | "duplicate" | "conflict"

/**
 * Decides how an incoming completion relates to the claim already recorded under its
 * `completionId`, if any.
 */
export const completionIdentity = (
  existing: CompletionIdentityFields | undefined,
  incoming: CompletionIdentityFields
): CompletionIdentity =>
  existing === undefined
    ? "new"
    : existing.bodyHash === incoming.bodyHash && existing.actionRequestId === incoming.actionRequestId
      ? "duplicate"
      : "conflict"
