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
 * - `GET /runtime-sessions` lists the workspace's sessions (never a token), newest first, paged,
 *   each `live`, `expired` or `revoked`.
 * - `GET /approvals?status` lists the workspace's approvals, newest first, paged: who asked, who
 *   resolved, the action request an approval created; a `pending` one past its expiry is `expired`.
 * - `POST /approvals/{approvalId}/token` collects an approval's private token from the default
 *   `ApprovalNotifier` (the pickup), once: 200 `{ approvalId, approvalToken }`, then 404.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { issue, revoke, SessionRequest } from "../../../core/approval/RuntimeSession.ts"
import { ApprovalNotifier } from "../../../core/ports/ApprovalNotifier.ts"
import type { RequestedAction } from "../../../core/approval/Approvals.ts"
import { type ApprovalRecord, ApprovalStore } from "../../../core/ports/ApprovalStore.ts"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { type RuntimeSessionRecord, RuntimeSessionStore } from "../../../core/ports/RuntimeSessionStore.ts"
import type { StorageError } from "../../../core/ports/StorageError.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { canonicalUuid } from "../../../core/protocol/Uuid.ts"
import * as Api from "../api/Api.ts"
import { approvalStatuses } from "../api/ApprovalsApi.ts"
import { encodeTimeCursor, listQuery, oneOf, pageOf, timeCursor, validQuery } from "../Paging.ts"
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
    const id = canonicalUuid(sessionId)
    const revoked = Option.isSome(id) && (yield* revoke(workspaceId, id.value))
    if (!revoked) return yield* new NotFound({ resource: "runtime_session" })
    return HttpServerResponse.empty({ status: 204 })
  })

const sessionView = (now: number) => (session: RuntimeSessionRecord) => ({
  sessionId: session.sessionId,
  accountId: session.accountId,
  subject: session.subject,
  role: session.role,
  authorities: session.authorities,
  status: session.revokedAt !== null ? "revoked" : session.expiresAt <= now ? "expired" : "live",
  createdAt: formatTimestamp(session.createdAt),
  expiresAt: formatTimestamp(session.expiresAt),
  revokedAt: session.revokedAt === null ? null : formatTimestamp(session.revokedAt),
  issuedBy: session.issuedBy
})

const listSessions = (workspaceId: string) =>
  Effect.gen(function* () {
    const query = yield* listQuery
    const after = timeCursor(query)
    yield* validQuery(query)
    const now = yield* Clock.currentTimeMillis
    const rows = yield* (yield* RuntimeSessionStore).list({
      workspaceId,
      limit: query.limit + 1,
      ...(Option.isSome(after) ? { after: { createdAt: after.value.at, id: after.value.id } } : {})
    })
    return json(pageOf(rows, query.limit, sessionView(now), (s) => encodeTimeCursor(s.createdAt, s.sessionId)))
  })

interface SessionParty {
  readonly sessionId: string
  readonly subject: string | null
  readonly role: string | null
}

/** Who resolved an approval: the resolving session's id, with its subject and role while it is stored. */
const resolver = (
  workspaceId: string,
  sessionId: string | null
): Effect.Effect<SessionParty | null, StorageError, RuntimeSessionStore> =>
  sessionId === null
    ? Effect.succeed(null)
    : Effect.map(
        Effect.flatMap(RuntimeSessionStore, (store) => store.get(sessionId)),
        (found): SessionParty =>
          Option.match(
            Option.filter(found, (s) => s.workspaceId === workspaceId),
            {
              onNone: () => ({ sessionId, subject: null, role: null }),
              onSome: (s) => ({ sessionId, subject: s.subject, role: s.role })
            }
          )
      )

const approvalView = (now: number, approval: ApprovalRecord, resolvedBy: SessionParty | null) => {
  const requested = approval.request as RequestedAction
  return {
    approvalId: approval.approvalId,
    accountId: approval.accountId,
    status: approval.state === "pending" && approval.expiresAt <= now ? "expired" : approval.state,
    actionKey: requested.action.key,
    family: requested.action.operation.family,
    requestedBy: approval.requester,
    createdAt: formatTimestamp(approval.createdAt),
    expiresAt: formatTimestamp(approval.expiresAt),
    resolvedBy,
    resolvedAt: approval.resolvedAt === null ? null : formatTimestamp(approval.resolvedAt),
    actionRequestId: approval.actionRequestId
  }
}

const listApprovals = (workspaceId: string) =>
  Effect.gen(function* () {
    const query = yield* listQuery
    const status = oneOf(query, "status", approvalStatuses)
    const after = timeCursor(query)
    yield* validQuery(query)
    const now = yield* Clock.currentTimeMillis
    const rows = yield* (yield* ApprovalStore).list({
      workspaceId,
      limit: query.limit + 1,
      // `expired` is a pending approval past its expiry; `pending` one that can still be resolved
      ...(status === undefined ? {} : { state: status === "expired" ? "pending" : status }),
      ...(status === "pending" || status === "expired" ? { expiry: { now, passed: status === "expired" } } : {}),
      ...(Option.isSome(after) ? { after: { createdAt: after.value.at, id: after.value.id } } : {})
    })
    const listed = pageOf(
      rows,
      query.limit,
      (a) => a,
      (a) => encodeTimeCursor(a.createdAt, a.approvalId)
    )
    const data = yield* Effect.forEach(listed.data, (a) =>
      Effect.map(resolver(workspaceId, a.resolvedBy), (by) => approvalView(now, a, by))
    )
    return json({ data, nextCursor: listed.nextCursor })
  })

const collectToken = (approvalId: string) => (workspaceId: string) =>
  Effect.gen(function* () {
    const canonical = canonicalUuid(approvalId)
    const approval = Option.isSome(canonical) ? yield* (yield* ApprovalStore).get(canonical.value) : Option.none()
    const gone = () => new NotFound({ resource: "approval_token" })
    if (Option.isNone(approval) || approval.value.workspaceId !== workspaceId) return yield* gone()
    const id = approval.value.approvalId
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
      .handleRaw("listRuntimeSessions", () => guarded(adminOnly)(listSessions))
      .handleRaw("listApprovals", () => guarded(adminOnly)(listApprovals))
      .handleRaw("collectApprovalToken", ({ path }) => guarded(adminOnly)(collectToken(path.approvalId)))
  )
