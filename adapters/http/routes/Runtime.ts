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
 *   mayAdvance, continuation? }`; 404 for anyone else, as for an unknown ID.
 *
 * Bodies are bounded at 16 KiB. Prepare and resolve carry the runtime token in the body, as the
 * spec's endpoint table lists it among the request's contents. Every route is guarded by
 * `RuntimeGuard.ts` (rates, and the session authenticated before the body is decoded).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { actionStatus } from "../../../core/approval/ActionStatus.ts"
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
import { jsonResponse as json } from "../Answer.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { RuntimeCaller } from "../api/ApprovalsApi.ts"
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

const showStatus = (actionRequestId: string) =>
  Effect.gen(function* () {
    const session = yield* RuntimeCaller
    const status = yield* actionStatus(session, actionRequestId)
    if (Option.isNone(status)) return yield* new NotFound({ resource: "session_action_request" })
    // Answers are `no-store`: the continuation's client secret is for this caller only.
    return json(status.value)
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
      .handleRaw("runtimeActionStatus", ({ path }) => showStatus(path.actionRequestId))
  )
