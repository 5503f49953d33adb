/**
 * The runtime routes of approvals and action status, under `/api/funnels/v1/runtime/actions/`,
 * for the embedded runtime. They take runtime session tokens only: an admin or ingest
 * key is not a runtime token (401), and a runtime token opens no admin route.
 *
 * - `POST /api/funnels/v1/runtime/actions/approvals` (`Authorization: Bearer <runtime token>` with
 *   `funnels.actions.request`): `{ action: { id, key? }, binding, expiresInSeconds? }` → 201
 *   `{ approvalId, state, expiresAt }`. The operation and safe terms are the catalog's (any other
 *   field is 400). The approval token goes to the billing owner through the `ApprovalNotifier`.
 * - `POST …/approvals/prepare`: `{ approvalId, approvalToken, runtimeToken }` → 200
 *   `{ reviewProjection, revision, reviewValidUntil, projectionHash }`.
 * - `POST …/approvals/resolve`: `{ approvalId, approvalToken, runtimeToken, decision: "approve",
 *   revision, reviewedProjectionHash }` → 200 `{ approvalId, state: "approved", actionRequestId }`,
 *   or `{ …, decision: "deny", revision? }` → 200 `{ approvalId, state: "denied" }`.
 * - `GET /api/funnels/v1/runtime/actions/status/{actionRequestId}` (`Authorization: Bearer
 *   <runtime token>` of the action's account and actor) → 200 `{ actionRequestId, state,
 *   mayAdvance, continuation? }`; 404 for anyone else, as for an unknown ID. Every answer carries
 *   a strong `ETag`, `Cache-Control: no-store` and, until the action is final, `Retry-After`
 *   (when to poll next). `If-None-Match` naming the current `ETag` is answered 304 without a body;
 *   with `Prefer: wait=N` too, the request is held until the action changes (in this process) or
 *   N seconds pass (at most `maxStatusWaitSeconds`), then read again and answered 200 or 304.
 *
 * Bodies are bounded at 16 KiB. Prepare and resolve carry the runtime token in the body, as the
 * spec's endpoint table lists it among the request's contents. Every route is guarded by
 * `RuntimeGuard.ts` (rates, and the session authenticated before the body is decoded).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { actionStatus, type ActionStatusRead } from "../../../core/approval/ActionStatus.ts"
import { ActionChanges } from "../../../core/ports/ActionChanges.ts"
import {
  ApprovalRequestBody,
  type ApprovalRefused,
  prepare,
  PrepareBody,
  request,
  resolve,
  ResolveBody
} from "../../../core/approval/Approvals.ts"
import {
  executeAuthority,
  type RuntimeSessionRefused,
  requestAuthority,
  requireAuthority
} from "../../../core/approval/RuntimeSession.ts"
import type { ApprovalLimitReached } from "../../../core/approval/Limits.ts"
import type { ActionsError, ActionsServices } from "./ActionRequests.ts"
import type { ApprovalNotifier } from "../../../core/ports/ApprovalNotifier.ts"
import type { ApprovalStore } from "../../../core/ports/ApprovalStore.ts"
import type { CatalogStore } from "../../../core/ports/CatalogStore.ts"
import type { RuntimeSessionStore } from "../../../core/ports/RuntimeSessionStore.ts"
import type { Cipher } from "../../../core/protocol/Cipher.ts"
import * as Api from "../api/Api.ts"
import { json as jsonAnswer, jsonResponse as json, toResponse } from "../Answer.ts"
import { Drain } from "../Drain.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { maxStatusWaitSeconds, RuntimeCaller } from "../api/ApprovalsApi.ts"
import { readJson } from "../Body.ts"
import type { RuntimeGuard } from "../RuntimeGuard.ts"

/** The largest body a runtime route accepts (16 KiB): its bodies are small and browser-sent. */
export const maxRuntimeBodyBytes = 16 * 1024

/**
 * What the runtime routes need: the action routes' services, sessions, approvals, the notifier and
 * limits.
 */
export type RuntimeServices =
  | ActionsServices
  | RuntimeSessionStore
  | ApprovalStore
  | ApprovalNotifier
  | CatalogStore
  | Cipher
  | ActionChanges
  | Drain

/** Every refusal a runtime route can answer, each mapped to its problem by `ErrorMap`. */
export type RuntimeError = ActionsError | RuntimeSessionRefused | ApprovalRefused | ApprovalLimitReached

const tokenMessages = {
  "": "must be a JSON object",
  approvalToken: "must be a string of 1 to 512 characters",
  runtimeToken: "must be a string of 1 to 512 characters",
  reviewedProjectionHash: "must be 64 lowercase hex characters"
}

// The session is authenticated before the handler runs (the declared `RuntimeToken`, or
// `RuntimeGuard.bodyCaller` where the token is in the body), so before the body is decoded.
const requestApproval = Effect.gen(function* () {
  const session = yield* Effect.flatMap(RuntimeCaller, (caller) => requireAuthority(caller, requestAuthority))
  const body = yield* readJson(ApprovalRequestBody, maxRuntimeBodyBytes, {
    "": "must be a JSON object with action and binding"
  })
  return json(yield* request(session, body), 201)
})

const prepareApproval = (guard: RuntimeGuard) =>
  Effect.gen(function* () {
    const { body, session } = yield* guard.bodyCaller(PrepareBody, executeAuthority, maxRuntimeBodyBytes, tokenMessages)
    return json(yield* prepare(session, body))
  })

const resolveApproval = (guard: RuntimeGuard) =>
  Effect.gen(function* () {
    const { body, session } = yield* guard.bodyCaller(ResolveBody, executeAuthority, maxRuntimeBodyBytes, tokenMessages)
    return json(yield* resolve(session, body))
  })

/**
 * The strong entity tag of a status: the action's version names its state and stored
 * continuation, and whether the continuation is shown (it stops being shown when it expires,
 * without a new version).
 */
const entityTag = (read: ActionStatusRead): string =>
  `"${read.version}${read.status.continuation === undefined ? "" : "c"}"`

/**
 * Whether `If-None-Match` names `tag` (RFC 9110 13.1.2: `*`, or a list compared weakly, so a
 * `W/` prefix added on the way is ignored).
 */
const namesTag = (ifNoneMatch: string | undefined, tag: string): boolean =>
  (ifNoneMatch?.split(",") ?? []).some((candidate) => {
    const trimmed = candidate.trim()
    return trimmed === "*" || trimmed === tag || trimmed === `W/${tag}`
  })

/** The seconds `Prefer: wait=N` asks for (RFC 7240 4.3), bounded by `maxStatusWaitSeconds`; 0 when absent. */
const preferredWait = (prefer: string | undefined): number => {
  const match = prefer === undefined ? null : /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?/i.exec(prefer)
  return match === null ? 0 : Math.min(maxStatusWaitSeconds, Number(match[1]))
}

const statusAnswer = (read: ActionStatusRead, notModified: boolean): HttpServerResponse.HttpServerResponse => {
  const headers: Record<string, string> = { etag: entityTag(read), "cache-control": "no-store" }
  if (read.pollAfterSeconds !== undefined) headers["retry-after"] = String(read.pollAfterSeconds)
  // Answers are `no-store`: the continuation's client secret is for this caller only.
  if (notModified) return HttpServerResponse.empty({ status: 304, headers })
  const answer = jsonAnswer(read.status)
  return toResponse({ ...answer, headers: { ...answer.headers, ...headers } })
}

const showStatus = (
  actionRequestId: string,
  headers: { readonly "if-none-match"?: string | undefined; readonly prefer?: string | undefined }
) =>
  Effect.gen(function* () {
    const session = yield* RuntimeCaller
    const read = Effect.flatMap(actionStatus(session, actionRequestId), (found) =>
      Option.isNone(found) ? new NotFound({ resource: "session_action_request" }) : Effect.succeed(found.value)
    )
    const waitSeconds = headers["if-none-match"] === undefined ? 0 : preferredWait(headers.prefer)
    if (waitSeconds === 0) {
      const current = yield* read
      return statusAnswer(current, namesTag(headers["if-none-match"], entityTag(current)))
    }
    // Subscribed before the read: a change committed between the read and the wait still wakes it.
    return yield* Effect.scoped(
      Effect.gen(function* () {
        const changed = yield* (yield* ActionChanges).subscribe(actionRequestId.toLowerCase())
        const current = yield* read
        if (!namesTag(headers["if-none-match"], entityTag(current)) || current.pollAfterSeconds === undefined)
          return statusAnswer(current, namesTag(headers["if-none-match"], entityTag(current)))
        // A change here wakes it; one made by another process is seen by the read at the end.
        yield* Effect.raceAll([changed, Effect.sleep(`${waitSeconds} seconds`), (yield* Drain).awaitDraining])
        const latest = yield* read
        return statusAnswer(latest, namesTag(headers["if-none-match"], entityTag(latest)))
      })
    )
  })

/**
 * The group's handlers, bound to the declaration (`api/ApprovalsApi.ts`, its runtime group);
 * `guard` authenticates the routes whose runtime token is in the body.
 */
export const group = (guard: RuntimeGuard) =>
  HttpApiBuilder.group(Api.api, "approvals", (handlers) =>
    handlers
      .handleRaw("requestApproval", () => requestApproval)
      .handleRaw("prepareApproval", () => prepareApproval(guard))
      .handleRaw("resolveApproval", () => resolveApproval(guard))
      .handleRaw("runtimeActionStatus", ({ headers, path }) => showStatus(path.actionRequestId, headers))
  )
