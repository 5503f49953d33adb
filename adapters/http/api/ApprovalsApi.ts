/**
 * Runtime sessions and approvals: the admin routes that issue and revoke runtime
 * sessions and collect an approval token (`routes/RuntimeSessions.ts`), and the runtime routes of
 * the approval flow and the actor-bound action status (`routes/Runtime.ts`). Runtime routes take
 * runtime session tokens only: in `Authorization: Bearer` for the request and the status, in the
 * body for prepare and resolve (the spec's endpoint table lists the token among their contents).
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { ApprovalRequestBody, ApproveBody, DenyBody, PrepareBody } from "../../../core/approval/Approvals.ts"
import { RuntimeAuthority, SessionRequest } from "../../../core/approval/RuntimeSession.ts"
import { actionStates } from "../../../core/connector/ActionState.ts"
import type { RuntimeSessionRecord } from "../../../core/ports/RuntimeSessionStore.ts"
import { ApprovalPrepareResponse } from "../../../core/protocol/messages/Approval.ts"
import { PaymentContinuation } from "../../../core/protocol/messages/Continuation.ts"
import { TrialRef } from "../../../core/protocol/messages/Execution.ts"
import {
  adminGuarded,
  adminPath,
  bodyProblems,
  declaring,
  notFound,
  page,
  pageParams,
  problem,
  queryParam,
  responseHeaders,
  Timestamp,
  UuidText
} from "./Common.ts"
import { runtimePrefix, runtimeRateLimited } from "./RuntimeApi.ts"

/**
 * The live runtime session that authenticated the request (provided by `RuntimeToken`).
 */
export class RuntimeCaller extends Context.Tag("@accord/http/RuntimeCaller")<RuntimeCaller, RuntimeSessionRecord>() {}

/**
 * A runtime session token in `Authorization: Bearer`: checked before the route's handler runs, so
 * before its body is read (`RuntimeGuard.bearer`).
 */
export class RuntimeToken extends HttpApiMiddleware.Tag<RuntimeToken>()("@accord/http/RuntimeToken", {
  provides: RuntimeCaller,
  security: {
    /** The runtime session token, as a bearer credential. */
    runtimeToken: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "A runtime session token (`acc_rts_…`) issued by `POST /runtime-sessions` for one end user of the embedded runtime. API keys are refused here."
      )
    )
  }
}) {}

const accountId = "acct_42"
const sessionExample = {
  accountId,
  subject: "user_viewer",
  role: "viewer",
  authorities: ["funnels.actions.request"] as const,
  expiresInSeconds: 900,
  trialRef: { entityKey: "sub_1", entityKind: "subscription", version: 3 }
}

/**
 * `POST /runtime-sessions`: a trusted caller issues a runtime session; its token is answered once.
 */
export const createRuntimeSession = HttpApiEndpoint.post("createRuntimeSession", "/runtime-sessions")
  .setPath(adminPath({}))
  .setPayload(SessionRequest.annotations({ examples: [sessionExample as never] }))
  .addSuccess(
    Schema.Struct({
      sessionId: UuidText,
      token: Schema.String.annotations({ description: "the session's token: shown here once, never again" }),
      accountId: Schema.String,
      subject: Schema.String,
      role: Schema.String,
      authorities: Schema.Array(RuntimeAuthority),
      createdAt: Timestamp,
      expiresAt: Timestamp,
      trialRef: Schema.optional(Schema.typeSchema(TrialRef))
    }).annotations({
      examples: [
        {
          sessionId: "7d9f1b3c-5e7a-4c9e-8b1d-3f5a7c9e1b3d",
          token: "acc_rts_Q2hhbmdlTWVJbkFSZWFsU2Vzc2lvbk9mVGhlUnVudGltZQ",
          accountId,
          subject: "user_owner",
          role: "billing_owner",
          authorities: ["funnels.actions.execute"],
          createdAt: "2026-11-25T10:00:00.000Z",
          expiresAt: "2026-11-25T10:15:00.000Z"
        }
      ]
    }),
    { status: 201 }
  )
  .addError(bodyProblems[0])
  .addError(bodyProblems[1])
  .addError(bodyProblems[2])
  .annotate(
    OpenApi.Summary,
    "Issue a runtime session for an end user of the embedded runtime (the token is answered once)"
  )
  .annotate(
    OpenApi.Description,
    "15 minutes unless `expiresInSeconds` says otherwise (60 s to 12 h). `trialRef` names the account's trial that the session's extend-trial approval requests target (the server's, never the browser's). Admin keys only."
  )

/**
 * `DELETE /runtime-sessions/{sessionId}`: ends a session and cancels the approvals it asked for.
 */
export const revokeRuntimeSession = HttpApiEndpoint.del("revokeRuntimeSession", "/runtime-sessions/:sessionId")
  .setPath(adminPath({ sessionId: UuidText }))
  .addSuccess(HttpApiSchema.NoContent)
  .addError(notFound("runtime_session"))
  .annotate(OpenApi.Summary, "Revoke a runtime session at once (its pending approval requests are cancelled)")

/**
 * A runtime session as listed: never its token. `status` is `revoked`, else `expired` once its
 * expiry has passed, else `live`.
 */
export const RuntimeSessionView = Schema.Struct({
  sessionId: UuidText,
  accountId: Schema.String,
  subject: Schema.String,
  role: Schema.String,
  authorities: Schema.Array(RuntimeAuthority),
  status: Schema.Literal("live", "expired", "revoked"),
  createdAt: Timestamp,
  expiresAt: Timestamp,
  revokedAt: Schema.NullOr(Timestamp),
  issuedBy: UuidText.annotations({ description: "the id of the admin API key that issued it" })
})

/** `GET /runtime-sessions`: the workspace's runtime sessions, newest first, paged; never a token. */
export const listRuntimeSessions = HttpApiEndpoint.get("listRuntimeSessions", "/runtime-sessions")
  .setPath(adminPath({}))
  .setUrlParams(Schema.Struct(pageParams))
  .addSuccess(
    page(RuntimeSessionView, {
      sessionId: "7d9f1b3c-5e7a-4c9e-8b1d-3f5a7c9e1b3d",
      accountId,
      subject: "user_owner",
      role: "billing_owner",
      authorities: ["funnels.actions.execute"],
      status: "live",
      createdAt: "2026-11-25T10:00:00.000Z",
      expiresAt: "2026-11-25T10:15:00.000Z",
      revokedAt: null,
      issuedBy: "0b6f3f7e-9a51-4d1c-8e2f-5a7c0d9e1b23"
    })
  )
  .pipe(declaring("InvalidQuery"))
  .annotate(OpenApi.Summary, "The workspace's runtime sessions, live, expired and revoked, newest first, paged")

/**
 * The statuses an approval is listed and filtered by: its stored state, except that a `pending`
 * one whose expiry has passed is `expired` (it can no longer be resolved).
 */
export const approvalStatuses = ["pending", "expired", "approving", "approved", "denied", "cancelled"] as const

const SessionParty = Schema.Struct({ sessionId: UuidText, subject: Schema.String, role: Schema.String })
const Resolver = Schema.Struct({
  sessionId: UuidText,
  subject: Schema.NullOr(Schema.String),
  role: Schema.NullOr(Schema.String)
})

/** An approval as listed: who asked, who resolved it, and the action request it created. */
export const ApprovalView = Schema.Struct({
  approvalId: UuidText,
  accountId: Schema.String,
  status: Schema.Literal(...approvalStatuses),
  actionKey: Schema.String.annotations({ description: "the catalog action the approval would authorize" }),
  family: Schema.String,
  requestedBy: SessionParty.annotations({ description: "the runtime session that asked" }),
  createdAt: Timestamp,
  expiresAt: Timestamp,
  resolvedBy: Schema.NullOr(Resolver).annotations({
    description: "the billing-owner session that approved or denied it (its subject and role when it is still stored)"
  }),
  resolvedAt: Schema.NullOr(Timestamp),
  actionRequestId: Schema.NullOr(UuidText).annotations({ description: "the action request an approval created" })
})

/** `GET /approvals`: the workspace's approvals by status, newest first, paged; never a token. */
export const listApprovals = HttpApiEndpoint.get("listApprovals", "/approvals")
  .setPath(adminPath({}))
  .setUrlParams(
    Schema.Struct({
      status: queryParam(Schema.Literal(...approvalStatuses)),
      ...pageParams
    })
  )
  .addSuccess(
    page(ApprovalView, {
      approvalId: "9e1b3d5f-7a9c-4b1d-8f3a-5c7e9b1d3f5a",
      accountId,
      status: "approved",
      actionKey: "extend_trial_14",
      family: "extend_trial",
      requestedBy: { sessionId: "7d9f1b3c-5e7a-4c9e-8b1d-3f5a7c9e1b3d", subject: "user_viewer", role: "viewer" },
      createdAt: "2026-11-25T10:00:00.000Z",
      expiresAt: "2026-11-26T10:00:00.000Z",
      resolvedBy: { sessionId: "3b5d7f9a-1c3e-4a5c-9e7a-1b3d5f7a9c1e", subject: "user_owner", role: "billing_owner" },
      resolvedAt: "2026-11-25T10:05:00.000Z",
      actionRequestId: "5a7c9e1b-3d5f-4a7c-8e1b-3d5f7a9c1e3b"
    })
  )
  .pipe(declaring("InvalidQuery"))
  .annotate(
    OpenApi.Summary,
    "The workspace's approvals, newest first, by status, paged: who asked, who resolved, the action created"
  )

/**
 * `POST /approvals/{approvalId}/token`: the host picks up an approval token held for the billing
 * owner, once.
 */
export const collectApprovalToken = HttpApiEndpoint.post("collectApprovalToken", "/approvals/:approvalId/token")
  .setPath(adminPath({ approvalId: UuidText }))
  .addSuccess(
    Schema.Struct({ approvalId: UuidText, accountId: Schema.String, approvalToken: Schema.String }).annotations({
      examples: [
        {
          approvalId: "9e1b3d5f-7a9c-4b1d-8f3a-5c7e9b1d3f5a",
          accountId,
          approvalToken: "acc_apt_QXBwcm92YWxUb2tlbkZvclRoZUJpbGxpbmdPd25lcjAx"
        }
      ]
    })
  )
  .addError(notFound("approval_token"))
  .annotate(OpenApi.Summary, "Collect an approval's private token, once (the default ApprovalNotifier)")
  .annotate(
    OpenApi.Description,
    "Hand it to the account's billing owner. A second collect, or an unknown approval, is 404."
  )

/** The administrator's runtime-session and token-pickup routes, under the workspace path. */
export const adminGroup = HttpApiGroup.make("runtimeSessions")
  .add(createRuntimeSession)
  .add(revokeRuntimeSession)
  .add(listRuntimeSessions)
  .add(listApprovals)
  .add(collectApprovalToken)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Runtime sessions")
  .annotate(
    OpenApi.Description,
    "Sessions for the embedded runtime, the approvals they asked for, and the approval token pickup. Admin keys only."
  )

const { action, binding } = {
  action: { id: "1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e", key: "extend_trial_14" },
  binding: {
    decisionId: "2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f",
    journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
    offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b",
    publishedVersionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c"
  }
}

const approvalId = "9e1b3d5f-7a9c-4b1d-8f3a-5c7e9b1d3f5a"
const approvalToken = "acc_apt_QXBwcm92YWxUb2tlbkZvclRoZUJpbGxpbmdPd25lcjAx"
const runtimeToken = "acc_rts_Q2hhbmdlTWVJbkFSZWFsU2Vzc2lvbk9mVGhlUnVudGltZQ"
const projectionHash = "7dc60cce6a9ee0a05cf0c5422bcb93b393ea487a40f197fcaaed83fe512e5bda"

const runtimeBodyProblems = [
  bodyProblems[0],
  problem(413, ["content_too_large"], "the request body exceeds 16384 bytes", { description: "A body over 16 KiB" }),
  bodyProblems[2]
] as const

/**
 * `POST …/runtime/actions/approvals`: a requester's session asks the billing owner to approve a
 * catalog action.
 */
export const requestApproval = HttpApiEndpoint.post("requestApproval", `${runtimePrefix}/approvals`)
  .setPayload(ApprovalRequestBody.annotations({ examples: [{ action, binding } as never] }))
  .addSuccess(
    Schema.Struct({ approvalId: UuidText, state: Schema.Literal("pending"), expiresAt: Timestamp }).annotations({
      examples: [{ approvalId, state: "pending" as const, expiresAt: "2026-11-26T10:00:00.000Z" }]
    }),
    { status: 201 }
  )
  .addError(runtimeBodyProblems[0])
  .addError(runtimeBodyProblems[1])
  .addError(runtimeBodyProblems[2])
  .pipe(declaring("RuntimeSessionRefused", "RevalidationFailed", "ApprovalRefused", "ApprovalLimitReached"))
  .middleware(RuntimeToken)
  .annotate(OpenApi.Summary, "Ask for an approval (a session with funnels.actions.request)")
  .annotate(
    OpenApi.Description,
    "Creates only a durable approval request; its private token goes to the billing owner through the ApprovalNotifier. The body names only the catalog action, the offer and the binding: any other field (an operation, safe terms) is 400, never merged. What runs is the catalog action's safe terms and fixed operation parameters; the account, the requester and an extend-trial action's trialRef come from the session the host's server issued; a Payment action's price snapshot from the stored catalog."
  )

/**
 * What a review's prepare and resolve can be refused for: the session, the approval, and the fresh
 * preflight (the catalog, the connector, the payment mode); resolve adds the intake's own.
 */
const reviewRefusals = [
  "RuntimeSessionRefused",
  "ApprovalRefused",
  "RevalidationFailed",
  "ConnectorNotActive",
  "PaymentModeNotEnabled"
] as const

/** `POST …/approvals/prepare`: the billing owner's session gets the review and its commitment. */
export const prepareApproval = HttpApiEndpoint.post("prepareApproval", `${runtimePrefix}/approvals/prepare`)
  .setPayload(PrepareBody.annotations({ examples: [{ approvalId, approvalToken, runtimeToken }] }))
  // The document shows the structure (a refinement's examples do not reach JSON Schema); the answer
  // is the refined `ApprovalPrepareResponse` (reviewValidUntil never after the approval's expiry).
  .addSuccess(
    ApprovalPrepareResponse.from.annotations({
      examples: [
        {
          reviewProjection: {
            action: { key: "extend_trial_14", label: "Extend trial", confirmation: "Extend your trial by 14 days?" },
            operation: { family: "extend_trial", extensionDays: 14, target: "subscription sub_1 (version 3)" },
            offer: { offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b", label: "Pro plan", priceDisplay: "49.00 USD" },
            timing: { effectiveAt: "2026-11-25T10:00:00.000Z" },
            requester: { roleKey: "viewer" },
            approvalExpiresAt: "2026-11-26T10:00:00.000Z",
            dependencyHash: "f98be87046bc591a07a78bc0fbb569070fece472bf16853895432cc8020c9431"
          },
          revision: 1,
          reviewValidUntil: "2026-11-25T10:10:00.000Z",
          projectionHash
        }
      ]
    })
  )
  .addError(runtimeBodyProblems[0])
  .addError(runtimeBodyProblems[1])
  .addError(runtimeBodyProblems[2])
  .pipe(declaring(...reviewRefusals))
  .annotate(
    OpenApi.Summary,
    "Prepare the billing owner's review (a live same-account session with funnels.actions.execute)"
  )
  .annotate(
    OpenApi.Description,
    "Each prepare is a new revision; only its projectionHash can be approved, until reviewValidUntil. Never carries the approval token or a mutation payload."
  )

/**
 * `POST …/approvals/resolve`: the billing owner approves (with the prepared commitment) or denies.
 */
export const resolveApproval = HttpApiEndpoint.post("resolveApproval", `${runtimePrefix}/approvals/resolve`)
  .setPayload(
    Schema.Union(
      ApproveBody.annotations({
        examples: [
          {
            approvalId,
            approvalToken,
            runtimeToken,
            decision: "approve" as const,
            revision: 1,
            reviewedProjectionHash: projectionHash
          }
        ]
      }),
      DenyBody.annotations({ examples: [{ approvalId, approvalToken, runtimeToken, decision: "deny" as const }] })
    )
  )
  .addSuccess(
    Schema.Union(
      Schema.Struct({ approvalId: UuidText, state: Schema.Literal("approved"), actionRequestId: UuidText }).annotations(
        {
          examples: [
            { approvalId, state: "approved" as const, actionRequestId: "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8" }
          ]
        }
      ),
      Schema.Struct({ approvalId: UuidText, state: Schema.Literal("denied") }).annotations({
        examples: [{ approvalId, state: "denied" as const }]
      })
    )
  )
  .addError(runtimeBodyProblems[0])
  .addError(runtimeBodyProblems[1])
  .addError(runtimeBodyProblems[2])
  .pipe(declaring(...reviewRefusals, "PaymentSnapshotMismatch", "InvalidIdempotencyKey", "IdempotencyKeyReused"))
  .annotate(OpenApi.Summary, "Approve exactly the prepared review, or deny")
  .annotate(
    OpenApi.Description,
    "Approve rebuilds a fresh preflight and recomputes the commitment before it authorizes the action, once, through the same intake as POST /action-requests. Deny never authorizes."
  )

/** The longest long poll a status read may ask for (`Prefer: wait=N`), in seconds. */
export const maxStatusWaitSeconds = 25

const pollHeaders = {
  etag: {
    description:
      "a strong entity tag of this representation (the action's version, and whether a continuation is shown): send it back in If-None-Match",
    required: true
  },
  "cache-control": { description: "always `no-store`", required: true },
  "retry-after": {
    description:
      "seconds until the next read is worth making; it grows while the action waits and is absent once the action is final (verified, rejected, failed, reversed or blocked): stop polling then"
  }
}

/**
 * `GET …/runtime/actions/status/{actionRequestId}`: an action's state for the session's own actor
 * only. A conditional read (`If-None-Match` with the last `ETag`) answers 304 without a body while
 * nothing changed; `Prefer: wait=N` holds such a read until the action changes, at most N seconds.
 */
export const actionStatus = HttpApiEndpoint.get("runtimeActionStatus", `${runtimePrefix}/status/:actionRequestId`)
  .setPath(Schema.Struct({ actionRequestId: UuidText }))
  .setHeaders(
    Schema.Struct({
      "if-none-match": Schema.optional(
        Schema.String.annotations({
          description: "the ETag of the status last read: 304 without a body while it is still current"
        })
      ),
      prefer: Schema.optional(
        Schema.String.annotations({
          description: `\`wait=N\` (RFC 7240) with If-None-Match: while the status is still current, hold the request until the action changes, at most N seconds (up to ${maxStatusWaitSeconds}), then answer 200 or 304`
        })
      )
    })
  )
  .addSuccess(
    Schema.Struct({
      actionRequestId: UuidText,
      state: Schema.Literal(...actionStates),
      mayAdvance: Schema.Boolean.annotations({
        description: "true only once the action is verified: then follow the success destination"
      }),
      continuation: Schema.optional(
        Schema.typeSchema(PaymentContinuation).annotations({
          description: "an accepted Payment action's continuation, until it expires"
        })
      )
    }).annotations({
      examples: [
        { actionRequestId: "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8", state: "verified" as const, mayAdvance: true }
      ]
    })
  )
  .addSuccess(
    HttpApiSchema.Empty(304).annotations({
      description: "Not modified: the status named by If-None-Match is still current (no body)"
    })
  )
  .pipe(declaring("RuntimeSessionRefused"))
  .addError(notFound("session_action_request"))
  .middleware(RuntimeToken)
  .annotate(OpenApi.Summary, "The action's state for its own actor: mayAdvance and, while payable, the continuation")
  .annotate(
    OpenApi.Description,
    "Poll it until the action is final: send If-None-Match with the last ETag (304 while nothing changed) and wait Retry-After seconds between reads; Retry-After is absent once the action is final. With `Prefer: wait=N` a conditional read waits for the change instead."
  )
  .annotate(OpenApi.Transform, (operation) =>
    responseHeaders(304, pollHeaders)(responseHeaders(200, pollHeaders)(operation))
  )

/**
 * The runtime routes a browser-held session token calls: request, prepare, resolve and action
 * status.
 */
export const runtimeGroup = HttpApiGroup.make("approvals")
  .add(requestApproval)
  .add(prepareApproval)
  .add(resolveApproval)
  .add(actionStatus)
  .pipe(declaring("StorageError"))
  .addError(runtimeRateLimited)
  .annotate(OpenApi.Title, "Approvals")
  .annotate(OpenApi.Description, "The embedded runtime's approval flow and action status, on runtime session tokens.")
