/**
 * The abuse limits of approvals (the specs leave them open; docs/decisions.md "Runtime abuse
 * limits"): a cap on the open approvals of an account, of one of its actions and of one requester
 * subject, so one session cannot fill the store and the billing owner's queue; and a lockout of an
 * approval after `maxWrongTokens` wrong approval tokens, after which it answers exactly as an
 * unknown approval for every token, the right one included, so guessing ends and the lockout
 * itself tells nothing.
 *
 * The values are the server's configuration (`adapters/config`); the defaults hold where none is
 * given.
 */
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import type { PendingCaps } from "../ports/ApprovalStore.ts"

/**
 * The abuse limits of approvals: open approvals per account, action and subject, and wrong tokens
 * before lockout.
 */
export interface ApprovalLimitsService {
  /** The most open (`pending` or `approving`, unexpired) approvals per account, action and subject. */
  readonly pendingCaps: PendingCaps
  /** Wrong approval tokens after which an approval is locked (then it is "not found" for good). */
  readonly maxWrongTokens: number
}

/**
 * The limits used unless a host provides its own: 50 open per account, 10 per action, 20 per
 * subject, 5 wrong tokens.
 */
export const defaultApprovalLimits: ApprovalLimitsService = {
  pendingCaps: { account: 50, action: 10, subject: 20 },
  maxWrongTokens: 5
}

/**
 * The approval limits in effect; a `Context.Reference`, so the defaults apply unless a host
 * provides others.
 */
export class ApprovalLimits extends Context.Reference<ApprovalLimits>()("@accord/core/approval/ApprovalLimits", {
  defaultValue: () => defaultApprovalLimits
}) {}

/**
 * A request refused because one of its scopes holds its cap of open approvals; a place frees up
 * when one of them is resolved, or at the latest after `retryAfterMillis` (the earliest expiry).
 */
export class ApprovalLimitReached extends Schema.TaggedError<ApprovalLimitReached>()("ApprovalLimitReached", {
  scope: Schema.Literal("account", "action", "subject"),
  cap: Schema.Int,
  retryAfterMillis: Schema.Int
}) {}
