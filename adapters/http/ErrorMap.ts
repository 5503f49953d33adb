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
import type { OpenActions } from "../../core/privacy/Erasure.ts"
import type { CompletionRefusalKind, CompletionRefused } from "../../core/connector/CompletionIntake.ts"
import type { RegistrationRejected } from "../../core/connector/Connection.ts"
import type { ConnectorNotActive, PaymentModeNotEnabled, PaymentSnapshotMismatch } from "../../core/connector/Intake.ts"
import type { IdempotencyKeyReused, InvalidIdempotencyKey } from "../../core/connector/IntakeKey.ts"
import type { RevalidationFailed, RevalidationReason } from "../../core/connector/Revalidation.ts"
import type { IngestRejection } from "../../core/ingest/Ingest.ts"
import type { ImportOffsetConflict } from "../../core/ingest/Import.ts"
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
  | OpenActions
  | ImportOffsetConflict

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
  retryableUnavailable(declaredAnswers.StorageError[0].codes[0], declaredAnswers.StorageError[0].detail)

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
export const notFoundDetail: Readonly<Record<NotFoundResource, string>> = {
  api_key: "no such live API key in this workspace",
  runtime_session: "no such live runtime session in this workspace",
  approval_token: "no approval token to collect: unknown approval, or collected already",
  action_request: "no such action request in this workspace",
  session_action_request: "no such action request for this session",
  account: "no events have arrived for this account",
  feature_gate: "no such feature gate in this workspace",
  catalog_version: "no such catalog version in this workspace",
  import: "no such import in this workspace"
}

/**
 * The ingest outcomes that store nothing new and are answered as problems: the same `event_id`
 * with another payload (409), a usage meter changing its unit (422).
 */
export const ingestRefusal = (accepted: Extract<Accepted, { readonly _tag: "Conflict" | "UnitChanged" }>) =>
  accepted._tag === "UnitChanged"
    ? Problem.make(422, "unit_changed", "a usage meter must keep a stable meaning", { errors: [accepted.issue] })
    : eventIdConflict

/**
 * 409: the same `event_id` with another payload (nothing stored).
 */
export const eventIdConflict: Problem.Problem = Problem.make(
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
 * One answer a domain error can be given, as the API declaration documents it: the status, every
 * code it can carry there, an example detail and what it means. The declarations of the endpoints
 * are generated from this table (`api/Common.ts` `answers`), and `toProblem` answers the errors of
 * fixed wording with the same entry, so a status, code or detail is written once.
 */
export interface DeclaredAnswer {
  readonly status: number
  readonly codes: readonly [string, ...Array<string>]
  readonly detail: string
  readonly description: string
  readonly errors?: ReadonlyArray<Problem.ProblemFieldError>
}

/** The answers of one domain error, by its tag. */
export type DeclaredAnswers = {
  readonly [Tag in DomainError["_tag"]]: readonly [DeclaredAnswer, ...Array<DeclaredAnswer>]
}

const reasonsAnswered = <Reason extends string>(
  statuses: Readonly<Record<Reason, number>>,
  status: number
): readonly [string, ...Array<string>] =>
  (Object.keys(statuses) as Array<Reason>).filter((reason) => statuses[reason] === status) as unknown as readonly [
    string,
    ...Array<string>
  ]

const publishedVersionErrors = [{ path: "publishedVersionId", message: "already published in this workspace" }]

/**
 * Every answer of every domain error.
 */
export const declaredAnswers: DeclaredAnswers = {
  StorageError: [
    {
      status: 503,
      codes: ["storage_unavailable"],
      detail: "storage is temporarily unavailable",
      description: "Storage unreachable; retry after Retry-After seconds"
    }
  ],
  MalformedBody: [
    {
      status: 400,
      codes: ["malformed_json", "duplicate_key", "unstorable_text"],
      detail: "the request body is not a UTF-8 JSON document",
      description: "A body that is not UTF-8 JSON, repeats a key or holds text that cannot be stored"
    }
  ],
  CompletionRefused: [
    {
      status: refusalStatus.unauthenticated,
      codes: [
        "invalid_signature",
        "unsupported_version",
        "invalid_timestamp",
        "stale_timestamp",
        "future_timestamp",
        "invalid_nonce",
        "replayed_nonce"
      ],
      detail: "the completion is not signed by a known completion secret",
      description:
        "Not signed by a known completion secret, or its signed headers are invalid (an unknown workspace answers the same)"
    },
    {
      status: refusalStatus.invalid,
      codes: ["invalid_body"],
      detail: "the completion does not match the completion body",
      description: "An authentic body that is not a completion"
    },
    {
      status: refusalStatus.unknown_action,
      codes: ["unknown_action"],
      detail: "no such action request in this workspace",
      description: "No such action request"
    },
    {
      status: refusalStatus.conflict,
      codes: ["completion_id_conflict", "completion_not_applicable", "concurrent_change"],
      detail: "this completionId was already received with another body",
      description: "The completion conflicts with what was received or with the action's state"
    },
    {
      status: refusalStatus.binding_mismatch,
      codes: ["idempotency_key_mismatch"],
      detail: "the providerIdempotencyKey is not the action's key",
      description: "The completion names another action's key"
    }
  ],
  OpenActions: [
    {
      status: 409,
      codes: ["actions_in_flight"],
      detail: "the subject has actions still in flight; erase it once they have settled",
      description: "Actions of the subject still in flight (nothing was removed)"
    }
  ],
  ConnectorNotActive: [
    {
      status: 409,
      codes: ["connector_not_active"],
      detail: "the workspace has no active connector revision; register and check the connection first",
      description: "No active connector revision"
    }
  ],
  PaymentSnapshotMismatch: [
    {
      status: 422,
      codes: ["payment_snapshot_mismatch"],
      detail: "the payment snapshot does not fit the action",
      description: "A payment snapshot that does not fit the action"
    }
  ],
  PaymentModeNotEnabled: [
    {
      status: 409,
      codes: ["payment_mode_not_enabled"],
      detail: "payment mode is not enabled for the active connector revision",
      description: "The payment mode lacks a fresh signed capability proof of the active revision"
    }
  ],
  InvalidIdempotencyKey: [
    {
      status: 400,
      codes: ["invalid_idempotency_key"],
      detail: "the Idempotency-Key header must be 1 to 255 visible ASCII characters",
      description: "An Idempotency-Key header that is not 1 to 255 visible ASCII characters"
    }
  ],
  IdempotencyKeyReused: [
    {
      status: 409,
      codes: ["idempotency_key_reused"],
      detail: "this Idempotency-Key was already used for a different action request; use a new key for a new request",
      description: "The Idempotency-Key of another action request"
    }
  ],
  RevalidationFailed: [
    {
      status: 409,
      codes: reasonsAnswered(revalidationStatus, 409),
      detail: "the decision has expired",
      description: "The catalog, account, authority or frequency no longer allows the action"
    },
    {
      status: 422,
      codes: reasonsAnswered(revalidationStatus, 422),
      detail: "names no action of the published catalog",
      description: "A reference of the request that resolves to nothing in the published catalog"
    }
  ],
  RegistrationRejected: [
    {
      status: 422,
      codes: [
        "invalid_url",
        "not_https",
        "credentials",
        "query",
        "fragment",
        "private_address",
        "unresolvable",
        "secret_too_short",
        "secret_too_long",
        "secret_whitespace",
        "secrets_not_distinct"
      ],
      detail: "the endpoint must use https",
      errors: [{ path: "endpoint", message: "must use https" }],
      description: "An endpoint or a secret refused by a rule"
    }
  ],
  ConnectorNotConfigured: [
    {
      status: 404,
      codes: ["connector_not_configured"],
      detail: "no connector endpoint is registered for this workspace",
      description: "No connector registered"
    }
  ],
  BatchNotAccepted: [
    {
      status: 400,
      codes: ["batch_not_accepted"],
      detail: "one event per request: a JSON array is not accepted",
      description: "A batch (a JSON array)"
    }
  ],
  InvalidEvent: [
    {
      status: 400,
      codes: ["invalid_event"],
      detail: "the event does not follow the event contract",
      errors: [{ path: "timestamp", message: "must be an RFC 3339 timestamp", code: "invalid_event" }],
      description: "A body that breaks the event contract (every failing field listed)"
    }
  ],
  UnsafeEvent: [
    {
      status: 422,
      codes: ["unsafe_property"],
      detail: "the event carries data that must never be sent; nothing was stored",
      description: "An event carrying data that must never be sent"
    }
  ],
  NotRevenueRelevant: [
    {
      status: 422,
      codes: ["not_revenue_relevant"],
      detail: "the event is not revenue-relevant",
      description: "An event that is not revenue-relevant"
    }
  ],
  RuntimeSessionRefused: [
    {
      status: 401,
      codes: ["runtime_session_invalid", "runtime_session_expired", "runtime_session_revoked"],
      detail: "a valid runtime session token is required",
      description: "No runtime token, or an unknown, expired or revoked one (API keys are not runtime tokens)"
    },
    {
      status: 403,
      codes: ["runtime_authority_missing"],
      detail: "the runtime session lacks the funnels.actions.execute authority",
      description: "A live session without the route's authority"
    }
  ],
  ApprovalRefused: [
    {
      status: 404,
      codes: reasonsAnswered(approvalStatus, 404),
      detail: "no such approval, or the approval token does not match",
      description: "An unknown approval ID and a wrong approval token answer alike"
    },
    {
      status: 403,
      codes: reasonsAnswered(approvalStatus, 403),
      detail: "the approval belongs to another account",
      description: "Another account's approval, or an approval of the reviewer's own request"
    },
    {
      status: 409,
      codes: reasonsAnswered(approvalStatus, 409),
      detail: "the approval was already resolved",
      description: "A state or binding that no longer fits"
    },
    {
      status: 410,
      codes: reasonsAnswered(approvalStatus, 410),
      detail: "the approval has expired",
      description: "An expired or cancelled approval, or an expired review"
    },
    {
      status: 422,
      codes: reasonsAnswered(approvalStatus, 422),
      detail: "this catalog action cannot be requested for approval",
      description: "A catalog action that cannot be requested"
    }
  ],
  ImportOffsetConflict: [
    {
      status: 409,
      codes: ["import_offset_conflict"],
      detail: "the import has 0 lines committed; send the file again from line 1 (from_line=0)",
      description:
        "The body does not continue the import where it stands (it starts past the committed lines, or another upload of it moved them): resend from `from_line` = the committed lines"
    }
  ],
  ApprovalLimitReached: [
    {
      status: 429,
      codes: ["approval_limit_reached"],
      detail: "the account already has 20 open approval requests; wait until one is resolved or expires",
      description: "Too many open approvals for the account, the action or the requester (with Retry-After)"
    }
  ],
  NotFound: [
    {
      status: 404,
      codes: ["not_found"],
      detail: "no such resource in this workspace",
      description: "Nothing by that id here"
    }
  ],
  InvalidQuery: [
    {
      status: 400,
      codes: ["invalid_query"],
      detail: "the query has invalid parameters",
      errors: [{ path: "limit", message: "must be an integer from 1 to 200" }],
      description: "Invalid query parameters (each named)"
    }
  ],
  CatalogRejected: [
    {
      status: 400,
      codes: ["invalid_catalog"],
      detail: "the catalog's references do not resolve",
      errors: [{ path: "decisions.0.actionIds.0", message: "names no action of this catalog" }],
      description: "References that do not resolve"
    }
  ],
  PublishedVersionExists: [
    {
      status: 409,
      codes: ["published_version_exists"],
      detail: "this publishedVersionId was already published; a republish needs a new one (or none)",
      errors: publishedVersionErrors,
      description: "A publishedVersionId used before"
    }
  ],
  CatalogNotPublished: [
    {
      status: 404,
      codes: ["catalog_not_published"],
      detail: `no catalog is published yet; publish one with PUT ${adminPrefix}/{workspaceId}/catalog`,
      description: "Nothing published yet"
    }
  ]
}

/** The problem of an error answered in fixed words: its one declared answer. */
const fixed = (answer: DeclaredAnswer, extra?: Parameters<typeof Problem.make>[3]): Problem.Problem =>
  Problem.make(answer.status, answer.codes[0], answer.detail, extra)

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
      return fixed(declaredAnswers.ConnectorNotActive[0])
    case "OpenActions":
      return fixed(declaredAnswers.OpenActions[0])
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
      return fixed(declaredAnswers.InvalidIdempotencyKey[0])
    case "IdempotencyKeyReused":
      // Never echoes either body: the caller knows what it sent.
      return fixed(declaredAnswers.IdempotencyKeyReused[0])
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
    case "ImportOffsetConflict":
      return Problem.make(409, error.code, error.message)
    case "ApprovalLimitReached":
      return tooManyRequests(
        "approval_limit_reached",
        `${pendingScopeDetail[error.scope]} already has ${error.cap} open approval requests; wait until one is resolved or expires`,
        error.retryAfterMillis
      )
    case "ConnectorNotConfigured":
      return fixed(declaredAnswers.ConnectorNotConfigured[0])
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
      return fixed(declaredAnswers.InvalidQuery[0], { errors: error.errors })
    case "CatalogRejected":
      return fixed(declaredAnswers.CatalogRejected[0], { errors: error.issues })
    case "PublishedVersionExists":
      return fixed(declaredAnswers.PublishedVersionExists[0], { errors: publishedVersionErrors })
    case "CatalogNotPublished":
      return Problem.make(
        404,
        declaredAnswers.CatalogNotPublished[0].codes[0],
        `no catalog is published yet; publish one with PUT ${adminPrefix}/${error.workspaceId}/catalog`
      )
  }
}
