/**
 * Fixtures for the approval tests: a connected workspace with the fixture catalog, runtime
 * sessions, and each approval step as its route runs it (authenticate, then the core step).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import {
  type ApprovalRequestBody,
  prepare,
  request,
  resolve,
  type ResolveBody
} from "../../../core/approval/Approvals.ts"
import {
  authenticate,
  executeAuthority,
  issue,
  requestAuthority,
  type RuntimeAuthority
} from "../../../core/approval/RuntimeSession.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { ApprovalNotifier } from "../../../core/ports/ApprovalNotifier.ts"
import type { StorageVariant } from "../../support/storage.ts"
import { fixtureTrialRef } from "../../support/deliveries.ts"
import { intakeInput, workspaceId } from "../connector/dispatch/support.ts"

export { workspaceId }

export const layerFor = (storage: StorageVariant) => Layer.merge(storage.layer(), NodeCrypto.layer)

export interface Session {
  readonly token: string
  readonly sessionId: string
}

/** Issues a runtime session (as `POST /runtime-sessions` does) and answers its token. */
export const session = (options: {
  readonly authorities: ReadonlyArray<RuntimeAuthority>
  readonly accountId?: string
  readonly subject?: string
  readonly role?: string
  readonly expiresInSeconds?: number
  readonly trialRef?: { readonly entityKey: string; readonly entityKind: string; readonly version: number }
}) =>
  Effect.map(
    issue(
      workspaceId,
      {
        accountId: options.accountId ?? "acct_42",
        subject: options.subject ?? "user_owner",
        role: options.role ?? "billing_owner",
        authorities: options.authorities as [RuntimeAuthority, ...Array<RuntimeAuthority>],
        ...(options.expiresInSeconds === undefined ? {} : { expiresInSeconds: options.expiresInSeconds }),
        ...(options.trialRef === undefined ? {} : { trialRef: options.trialRef })
      },
      "admin-key-1"
    ),
    ({ record, token }): Session => ({ token: Redacted.value(token), sessionId: record.sessionId })
  )

/** A viewer's session; the host's server names the account's trial (the fixture one) when it issues it. */
export const requester = (accountId = "acct_42") =>
  session({
    authorities: [requestAuthority],
    accountId,
    subject: "user_viewer",
    role: "viewer",
    trialRef: fixtureTrialRef
  })

export const owner = (accountId = "acct_42") => session({ authorities: [executeAuthority], accountId })

/** The fixture extend-trial catalog action and its binding, as the embedded runtime asks for it. */
export const extendTrial = (): ApprovalRequestBody => {
  const { action, binding } = intakeInput()
  return { action: { id: action.id, key: action.key }, binding }
}

/** `POST …/approvals` as `asker`, then the billing owner's token from the pickup. */
export const ask = (asker: Session, body: ApprovalRequestBody = extendTrial()) =>
  Effect.gen(function* () {
    const created = yield* request(yield* authenticate(asker.token, requestAuthority), body)
    const token = yield* (yield* ApprovalNotifier).collect(created.approvalId)
    return { ...created, approvalToken: Redacted.value(Option.getOrThrow(token)) }
  })

export const prepareAs = (by: Session, approval: { readonly approvalId: string; readonly approvalToken: string }) =>
  Effect.flatMap(authenticate(by.token, executeAuthority), (s) =>
    prepare(s, { approvalId: approval.approvalId, approvalToken: approval.approvalToken, runtimeToken: by.token })
  )

export const approveAs = (
  by: Session,
  approval: { readonly approvalId: string; readonly approvalToken: string },
  review: { readonly revision: number; readonly projectionHash: string }
) =>
  Effect.map(
    resolveAs(by, {
      approvalId: approval.approvalId,
      approvalToken: approval.approvalToken,
      runtimeToken: by.token,
      decision: "approve",
      revision: review.revision,
      reviewedProjectionHash: review.projectionHash
    }),
    (resolved) => ({ ...resolved, actionRequestId: "actionRequestId" in resolved ? resolved.actionRequestId : "" })
  )

export const denyAs = (by: Session, approval: { readonly approvalId: string; readonly approvalToken: string }) =>
  resolveAs(by, {
    approvalId: approval.approvalId,
    approvalToken: approval.approvalToken,
    runtimeToken: by.token,
    decision: "deny"
  })

export const resolveAs = (by: Session, body: ResolveBody) =>
  Effect.flatMap(authenticate(by.token, executeAuthority), (s) => resolve(s, body))

/** How many actions the account has for the fixture extend-trial action. */
export const actionsFor = (accountId = "acct_42", actionId = intakeInput().action.id) =>
  Effect.flatMap(ActionLedger, (ledger) => ledger.countForFrequency({ workspaceId, accountId, actionId, since: 0 }))
