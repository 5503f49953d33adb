/**
 * The admin side of approvals (runtime sessions and approval tokens), relative to
 * `/api/admin/v1/workspaces/{workspaceId}`, admin keys only:
 *
 * - `POST /runtime-sessions` issues a runtime session for an end user of the embedded runtime
 *   (`{ accountId, subject, role, authorities, expiresInSeconds?, trialRef? }`); 201 with the token,
 *   shown once, and the session's terms. `trialRef` is the account's trial that the session's
 *   extend-trial approval requests target: the host's server names it, never the browser.
 * - `DELETE /runtime-sessions/{sessionId}` revokes it at once and cancels the approvals it requested
 *   that are still pending (204; 404 when there is no such live session).
 * - `POST /approvals/{approvalId}/token` collects an approval's private token from the default
 *   `ApprovalNotifier` (the pickup), once: 200 `{ approvalId, approvalToken }`, then 404.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { issue, revoke, SessionRequest } from "../../../core/approval/RuntimeSession.ts"
import { ApprovalNotifier } from "../../../core/ports/ApprovalNotifier.ts"
import { ApprovalStore } from "../../../core/ports/ApprovalStore.ts"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import type { RuntimeSessionStore } from "../../../core/ports/RuntimeSessionStore.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { isUuid } from "../../../core/protocol/Uuid.ts"
import * as Api from "../api/Api.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOnly, guarded, guardedAs } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Problem from "../Problem.ts"

/**
 * What the runtime-session and token-pickup routes need: sessions, approvals, the notifier and key
 * authentication.
 */
export type RuntimeSessionsServices = RuntimeSessionStore | ApprovalStore | ApprovalNotifier | ApiKeyStore | Crypto

const sessionMessages = {
  "": "must be a JSON object with accountId, subject, role and authorities",
  subject: "must be a string of 1 to 256 characters",
  role: "must be a string of 1 to 256 characters",
  authorities: "must be a non-empty list of distinct authorities: funnels.actions.request, funnels.actions.execute"
}

const createSession = (maxBodyBytes: number) => (workspaceId: string, key: { readonly id: string }) =>
  Effect.gen(function* () {
    const body = yield* readJson(SessionRequest, maxBodyBytes, sessionMessages)
    const { record, token } = yield* issue(workspaceId, body, key.id)
    return json(
      {
        sessionId: record.sessionId,
        token: Redacted.value(token),
        accountId: record.accountId,
        subject: record.subject,
        role: record.role,
        authorities: record.authorities,
        createdAt: formatTimestamp(record.createdAt),
        expiresAt: formatTimestamp(record.expiresAt),
        ...(record.trialRef === undefined ? {} : { trialRef: record.trialRef })
      },
      201
    )
  })

const revokeSession = (sessionId: string) => (workspaceId: string) =>
  Effect.gen(function* () {
    const id = sessionId.toLowerCase()
    const revoked = isUuid(id) && (yield* revoke(workspaceId, id))
    if (!revoked) return yield* new NotFound({ resource: "runtime_session" })
    return HttpServerResponse.empty({ status: 204 })
  })

const collectToken = (approvalId: string) => (workspaceId: string) =>
  Effect.gen(function* () {
    const id = approvalId.toLowerCase()
    const approval = isUuid(id) ? yield* (yield* ApprovalStore).get(id) : Option.none()
    const gone = () => new NotFound({ resource: "approval_token" })
    if (Option.isNone(approval) || approval.value.workspaceId !== workspaceId) return yield* gone()
    const token = yield* Effect.mapError((yield* ApprovalNotifier).collect(id), (error) =>
      error._tag === "OpenFailed" ? Problem.internal : error
    )
    if (Option.isNone(token)) return yield* gone()
    return json({ approvalId: id, accountId: approval.value.accountId, approvalToken: Redacted.value(token.value) })
  })

/**
 * The group's handlers, bound to the declaration (`api/ApprovalsApi.ts`, its admin group).
 */
export const group = (maxBodyBytes: number) =>
  HttpApiBuilder.group(Api.api, "runtimeSessions", (handlers) =>
    handlers
      .handleRaw("createRuntimeSession", () => guardedAs(adminOnly)(createSession(maxBodyBytes)))
      .handleRaw("revokeRuntimeSession", ({ path }) => guarded(adminOnly)(revokeSession(path.sessionId)))
      .handleRaw("collectApprovalToken", ({ path }) => guarded(adminOnly)(collectToken(path.approvalId)))
  )
