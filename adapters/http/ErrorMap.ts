/**
 * The one map from core's domain errors to problem details (docs/decisions.md, "Problem details":
 * the service's own errors are RFC 9457 problem details; 400 malformed, 401 authentication or
 * signature, 403 scope or authority, 404 unknown, 409 conflict, 413 too large, 415 content type, 422
 * rejected by a rule).
 *
 * Core fails with tagged domain errors and never picks a status; routes let those errors through,
 * and the app turns every one of them into a problem here, once (as Hono's single `onError`).
 * Failures only the edge knows (413, 415, malformed body, a key's scope) are raised as `Problem`s
 * by the edge itself and pass through unchanged. (`BootstrapKeyConflict` never reaches HTTP: it
 * stops the start, worded by `adapters/config/StartupLog.ts`.)
 */
import type { ConnectorNotConfigured } from "../../core/connector/ConnectionCheck.ts"
import type { ApprovalRefusal, ApprovalRefused } from "../../core/approval/Approvals.ts"
import type { RuntimeSessionRefused } from "../../core/approval/RuntimeSession.ts"
import type { ApprovalLimitReached } from "../../core/approval/Limits.ts"
import type { CompletionRefusalKind, CompletionRefused } from "../../core/connector/CompletionIntake.ts"
import type { RegistrationRejected } from "../../core/connector/Connection.ts"
import type { ConnectorNotActive, PaymentModeNotEnabled, PaymentSnapshotMismatch } from "../../core/connector/Intake.ts"
import type { IdempotencyKeyReused, InvalidIdempotencyKey } from "../../core/connector/IntakeKey.ts"
import type { RevalidationFailed, RevalidationReason } from "../../core/connector/Revalidation.ts"
import type { IngestRejection } from "../../core/ingest/Ingest.ts"
import { pathSegment } from "../../core/ingest/Safety.ts"
import type { CatalogNotPublished, CatalogRejected, PublishedVersionExists } from "../../core/catalog/Publish.ts"
import type { Accepted } from "../../core/ingest/Accept.ts"
import type { StorageError } from "../../core/ports/StorageError.ts"
import type { MalformedBody } from "../../core/protocol/Json.ts"
import type { NotFound, NotFoundResource } from "../../core/protocol/NotFound.ts"
import type { InvalidQuery } from "./Paging.ts"
import { adminPrefix } from "./Paths.ts"
import * as Problem from "./Problem.ts"

/**
 * Every core domain error that can reach an HTTP answer.
 */
export type DomainError =
  | StorageError
  | CompletionRefused
  | ConnectorNotActive
  | PaymentSnapshotMismatch
  | PaymentModeNotEnabled
  | InvalidIdempotencyKey
  | IdempotencyKeyReused
  | RevalidationFailed
  | RegistrationRejected
  | ConnectorNotConfigured
  | IngestRejection
  | MalformedBody
  | RuntimeSessionRefused
  | ApprovalRefused
  | NotFound
  | CatalogRejected
  | PublishedVersionExists
  | CatalogNotPublished
  | InvalidQuery
  | ApprovalLimitReached

/**
 * The `Retry-After` (seconds) of every 503 the service answers for a passing condition: storage
 * faults recover in seconds (a restarted database, a released lock), so clients come back after
 * the service's hint instead of their own exponential schedule.
 */
export const unavailableRetryAfterSeconds = 1

/**
 * 503 with `Retry-After`: the server cannot answer now, and the same request may be sent again.
 */
export const retryableUnavailable = (code: string, detail: string): Problem.Problem =>
  Problem.make(503, code, detail, { headers: { "retry-after": String(unavailableRetryAfterSeconds) } })

/**
 * A storage failure is the server's problem, not the caller's: 503 with `Retry-After`, and the
 * request may be retried. Whatever the fault was (its kind, the driver's reason) stays in the log.
 */
export const storageUnavailable = (_: StorageError): Problem.Problem =>
  retryableUnavailable("storage_unavailable", "storage is temporarily unavailable")

/**
 * 400 for a body the strict parser refused: `malformed_json` (not UTF-8 JSON), `duplicate_key`
 * or `unstorable_text`, the last two naming where through `Safety.pathSegment` (a received name
 * that is data itself is never echoed).
 */
export const malformedBody = (error: MalformedBody): Problem.Problem => {
  switch (error.reason) {
    case "syntax":
      return Problem.badRequest("malformed_json", "the request body is not a UTF-8 JSON document")
    case "duplicate_key":
      return Problem.badRequest("duplicate_key", "the request body has an object with the same key twice", [
        { path: bodyPath(error.at), message: "is a duplicate key" }
      ])
    case "unstorable_text":
      return Problem.badRequest("unstorable_text", "the request body holds text that cannot be stored", [
        { path: bodyPath(error.at), message: "contains a NUL character or an unpaired UTF-16 surrogate" }
      ])
  }
}

const bodyPath = (at: ReadonlyArray<string | number>): string =>
  at.map((segment) => (typeof segment === "number" ? String(segment) : pathSegment(segment))).join(".")

/** Why a completion was refused decides its status; the code and detail are core's. */
const refusalStatus: Readonly<Record<CompletionRefusalKind, number>> = {
  unauthenticated: 401,
  invalid: 400,
  unknown_action: 404,
  binding_mismatch: 422,
  conflict: 409
}

/** What an unknown id is answered with, per kind of lookup; never the id itself. */
const notFoundDetail: Readonly<Record<NotFoundResource, string>> = {
  api_key: "no such live API key in this workspace",
  runtime_session: "no such live runtime session in this workspace",
  approval_token: "no approval token to collect: unknown approval, or collected already",
  action_request: "no such action request in this workspace",
  session_action_request: "no such action request for this session",
  account: "no events have arrived for this account",
  feature_gate: "no such feature gate in this workspace",
  catalog_version: "no such catalog version in this workspace"
}

/**
 * The ingest outcomes that store nothing new and are answered as problems: the same `event_id`
 * with another payload (409), a usage meter changing its unit (422).
 */
export const ingestRefusal = (accepted: Extract<Accepted, { readonly _tag: "Conflict" | "UnitChanged" }>) =>
  accepted._tag === "UnitChanged"
    ? Problem.make(422, "unit_changed", "a usage meter must keep a stable meaning", { errors: [accepted.issue] })
    : Problem.make(
        409,
        "event_id_conflict",
        "this event_id was already used for a different event; reuse an event_id only when retrying the same event"
      )

/**
 * 429, the one form of every limit's refusal: `Retry-After` in whole seconds (at least 1), the
 * time after which the same request may succeed.
 */
export const tooManyRequests = (code: string, detail: string, waitMillis: number): Problem.Problem =>
  Problem.make(429, code, detail, {
    headers: { "retry-after": String(Math.max(1, Math.ceil(waitMillis / 1000))) }
  })

/**
 * 429 for a key over its rate.
 */
export const rateLimited = (limit: number, waitMillis: number): Problem.Problem =>
  tooManyRequests("rate_limited", `at most ${limit} requests per second per key`, waitMillis)

const pendingScopeDetail = {
  account: "the account",
  action: "this action of the account",
  subject: "this requester"
} as const

/**
 * The status of each revalidation refusal: 422 when a reference of the request resolves to nothing,
 * 409 when the catalog, account, authority or frequency no longer allows the action.
 */
export const revalidationStatus: Readonly<Record<RevalidationReason, 409 | 422>> = {
  catalog_not_published: 409,
  published_version_unknown: 422,
  published_version_not_current: 409,
  decision_unknown: 422,
  journey_mismatch: 422,
  decision_expired: 409,
  action_unknown: 422,
  action_key_mismatch: 422,
  operation_family_mismatch: 422,
  safe_terms_mismatch: 422,
  operation_parameter_mismatch: 422,
  transition_not_allowed: 422,
  offer_unknown: 422,
  offer_not_offered: 422,
  action_version_changed: 409,
  offer_version_changed: 409,
  offer_price_changed: 409,
  account_state_not_eligible: 409,
  authority_revoked: 409,
  frequency_exceeded: 409
}

/**
 * The revalidation reasons answered with `status` (the OpenAPI document lists them per response).
 */
export const revalidationReasonsWith = (status: 409 | 422): ReadonlyArray<RevalidationReason> =>
  (Object.keys(revalidationStatus) as Array<RevalidationReason>).filter(
    (reason) => revalidationStatus[reason] === status
  )

/**
 * The status of each approval refusal: 404 unknown, 403 another account's, 410 expired, 409 a
 * state or binding that no longer fits.
 */
const approvalStatus: Readonly<Record<ApprovalRefusal, number>> = {
  approval_not_found: 404,
  approval_account_mismatch: 403,
  approval_expired: 410,
  approval_review_expired: 410,
  approval_already_resolved: 409,
  approval_not_prepared: 409,
  approval_revision_drift: 409,
  approval_hash_mismatch: 409,
  approval_terms_changed: 409,
  approval_dependency_stale: 409,
  approval_capability_expired: 409,
  approval_self_approval: 403,
  approval_cancelled: 410,
  approval_action_not_requestable: 422
}

/**
 * The problem answering a domain error; a `Problem` (raised by the edge) is already one.
 */
export const toProblem = (error: DomainError | Problem.Problem): Problem.Problem => {
  switch (error._tag) {
    case "Problem":
      return error
    case "StorageError":
      return storageUnavailable(error)
    case "MalformedBody":
      return malformedBody(error)
    case "CompletionRefused":
      return Problem.make(
        refusalStatus[error.kind],
        error.code,
        error.detail,
        error.errors === undefined ? undefined : { errors: error.errors }
      )
    case "ConnectorNotActive":
      return Problem.make(
        409,
        "connector_not_active",
        "the workspace has no active connector revision; register and check the connection first"
      )
    case "PaymentSnapshotMismatch":
      return Problem.make(
        422,
        "payment_snapshot_mismatch",
        `the payment snapshot does not fit the action (${error.reason})`
      )
    case "PaymentModeNotEnabled":
      // Names the mode and the gate's reason code only: never evidence, account hashes or secrets.
      return Problem.make(
        409,
        "payment_mode_not_enabled",
        `payment mode ${error.mode} is not enabled for the active connector revision (${error.reason}); a fresh signed handshake proof including it is required`
      )
    case "InvalidIdempotencyKey":
      return Problem.badRequest(
        "invalid_idempotency_key",
        "the Idempotency-Key header must be 1 to 255 visible ASCII characters"
      )
    case "IdempotencyKeyReused":
      // Never echoes either body: the caller knows what it sent.
      return Problem.make(
        409,
        "idempotency_key_reused",
        "this Idempotency-Key was already used for a different action request; use a new key for a new request"
      )
    case "RevalidationFailed":
      // 422: a reference of the request resolves to nothing; 409: the catalog, account, authority
      // or frequency no longer allows it. The reason is the stable code; the field is named.
      return Problem.make(revalidationStatus[error.reason], error.reason, error.detail, {
        errors: [{ path: error.path, message: error.detail }]
      })
    case "RegistrationRejected":
      return Problem.make(422, error.problem, error.detail, { errors: error.errors })
    case "RuntimeSessionRefused":
      // 401 (with the Bearer challenge) for a token that does not authorize; 403 for a live
      // session without the route's authority.
      return error.reason === "runtime_authority_missing"
        ? Problem.make(403, error.reason, error.detail)
        : Problem.make(401, error.reason, error.detail, { headers: { "www-authenticate": "Bearer" } })
    case "ApprovalRefused":
      return Problem.make(approvalStatus[error.reason], error.reason, error.detail)
    case "ApprovalLimitReached":
      return tooManyRequests(
        "approval_limit_reached",
        `${pendingScopeDetail[error.scope]} already has ${error.cap} open approval requests; wait until one is resolved or expires`,
        error.retryAfterMillis
      )
    case "ConnectorNotConfigured":
      return Problem.make(404, "connector_not_configured", "no connector endpoint is registered for this workspace")
    case "BatchNotAccepted":
      return Problem.badRequest(error.code, error.message)
    case "InvalidEvent":
      return Problem.badRequest(error.code, "the event does not follow the event contract", error.issues)
    case "UnsafeEvent":
      return Problem.make(422, error.code, "the event carries data that must never be sent; nothing was stored", {
        errors: error.issues
      })
    case "NotRevenueRelevant":
      return Problem.make(422, error.code, error.reason)
    case "NotFound":
      return Problem.notFound(notFoundDetail[error.resource])
    case "InvalidQuery":
      return Problem.badRequest("invalid_query", "the query has invalid parameters", error.errors)
    case "CatalogRejected":
      return Problem.badRequest("invalid_catalog", "the catalog's references do not resolve", error.issues)
    case "PublishedVersionExists":
      return Problem.make(
        409,
        "published_version_exists",
        "this publishedVersionId was already published; a republish needs a new one (or none)",
        { errors: [{ path: "publishedVersionId", message: "already published in this workspace" }] }
      )
    case "CatalogNotPublished":
      return Problem.make(
        404,
        "catalog_not_published",
        `no catalog is published yet; publish one with PUT ${adminPrefix}/${error.workspaceId}/catalog`
      )
  }
}
