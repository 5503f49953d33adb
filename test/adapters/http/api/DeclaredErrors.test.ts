/**
 * The endpoints' declared errors are generated from `ErrorMap.declaredAnswers`; these tests hold
 * that table to `ErrorMap.toProblem` (every answer the map gives is one the table declares), and
 * the generated declarations to the map and to `/openapi.json`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Api from "../../../../adapters/http/api/Api.ts"
import * as Common from "../../../../adapters/http/api/Common.ts"
import * as ErrorMap from "../../../../adapters/http/ErrorMap.ts"
import { InvalidQuery } from "../../../../adapters/http/Paging.ts"
import * as Problem from "../../../../adapters/http/Problem.ts"
import { ApprovalRefused, approvalRefusals } from "../../../../core/approval/Approvals.ts"
import { ApprovalLimitReached } from "../../../../core/approval/Limits.ts"
import { RuntimeSessionRefused, SessionRefusal } from "../../../../core/approval/RuntimeSession.ts"
import { CatalogNotPublished, CatalogRejected, PublishedVersionExists } from "../../../../core/catalog/Publish.ts"
import { CompletionRefused } from "../../../../core/connector/CompletionIntake.ts"
import { RegistrationRejected } from "../../../../core/connector/Connection.ts"
import { ConnectorNotConfigured } from "../../../../core/connector/ConnectionCheck.ts"
import {
  ConnectorNotActive,
  PaymentModeNotEnabled,
  PaymentSnapshotMismatch
} from "../../../../core/connector/Intake.ts"
import { IdempotencyKeyReused, InvalidIdempotencyKey } from "../../../../core/connector/IntakeKey.ts"
import {
  RevalidationFailed,
  type RevalidationReason,
  revalidationReasons
} from "../../../../core/connector/Revalidation.ts"
import { BatchNotAccepted, InvalidEvent, NotRevenueRelevant, UnsafeEvent } from "../../../../core/ingest/Ingest.ts"
import { ImportOffsetConflict } from "../../../../core/ingest/Import.ts"
import { StorageError } from "../../../../core/ports/StorageError.ts"
import { OpenActions } from "../../../../core/privacy/Erasure.ts"
import { MalformedBody } from "../../../../core/protocol/Json.ts"
import { NotFound, NotFoundResource } from "../../../../core/protocol/NotFound.ts"

type Samples = {
  readonly [Tag in ErrorMap.DomainError["_tag"]]: ReadonlyArray<Common.DomainErrorOf<Tag>>
}

/** Errors of every tag (the type makes a new tag fail to compile here), every reason of each. */
const samples: Samples = {
  StorageError: [new StorageError({ operation: "get", message: "connection refused" })],
  MalformedBody: [
    new MalformedBody(),
    new MalformedBody({ reason: "duplicate_key", at: ["a"] }),
    new MalformedBody({ reason: "unstorable_text", at: ["a"] })
  ],
  CompletionRefused: [
    new CompletionRefused({ kind: "unauthenticated", code: "replayed_nonce", detail: "refused" }),
    new CompletionRefused({ kind: "invalid", code: "invalid_body", detail: "refused" }),
    new CompletionRefused({ kind: "unknown_action", code: "unknown_action", detail: "refused" }),
    new CompletionRefused({ kind: "conflict", code: "completion_id_conflict", detail: "refused" }),
    new CompletionRefused({ kind: "binding_mismatch", code: "idempotency_key_mismatch", detail: "refused" })
  ],
  ConnectorNotActive: [new ConnectorNotActive()],
  OpenActions: [new OpenActions({ count: 2 })],
  PaymentSnapshotMismatch: [new PaymentSnapshotMismatch({ reason: "mode_mismatch" })],
  PaymentModeNotEnabled: [new PaymentModeNotEnabled({ mode: "setup_only", reason: "payment_capability_missing" })],
  InvalidIdempotencyKey: [new InvalidIdempotencyKey()],
  IdempotencyKeyReused: [new IdempotencyKeyReused()],
  RevalidationFailed: (Object.keys(revalidationReasons) as Array<RevalidationReason>).map(
    (reason) => new RevalidationFailed({ reason, path: revalidationReasons[reason].path, detail: "no longer allowed" })
  ),
  RegistrationRejected: ErrorMap.declaredAnswers.RegistrationRejected[0].codes.map(
    (problem) => new RegistrationRejected({ problem, detail: "refused", errors: [] })
  ),
  ConnectorNotConfigured: [new ConnectorNotConfigured()],
  BatchNotAccepted: [new BatchNotAccepted()],
  InvalidEvent: [new InvalidEvent({ issues: [{ path: "account_id", code: "invalid_event", message: "is missing" }] })],
  UnsafeEvent: [new UnsafeEvent({ issues: [{ path: "email", code: "unsafe_property", message: "is personal data" }] })],
  NotRevenueRelevant: [new NotRevenueRelevant({ reason: "a click is UI noise" })],
  RuntimeSessionRefused: SessionRefusal.literals.map((reason) => new RuntimeSessionRefused({ reason, detail: "no" })),
  ApprovalRefused: approvalRefusals.map((reason) => new ApprovalRefused({ reason, detail: "no" })),
  ApprovalLimitReached: [new ApprovalLimitReached({ scope: "account", cap: 20, retryAfterMillis: 1000 })],
  ImportOffsetConflict: [new ImportOffsetConflict({ linesCommitted: 0 })],
  NotFound: NotFoundResource.literals.map((resource) => new NotFound({ resource })),
  InvalidQuery: [new InvalidQuery({ errors: [{ path: "limit", message: "must be an integer from 1 to 200" }] })],
  CatalogRejected: [new CatalogRejected({ issues: [{ path: "decisions.0", message: "names no action" }] })],
  PublishedVersionExists: [new PublishedVersionExists()],
  CatalogNotPublished: [new CatalogNotPublished({ workspaceId: "w" })]
}

const allSamples = Object.values(samples).flat() as ReadonlyArray<ErrorMap.DomainError>

describe("declared errors", () => {
  it("every problem ErrorMap answers a domain error with is one its declared answers list", () => {
    for (const error of allSamples) {
      const problem = ErrorMap.toProblem(error)
      const declared = ErrorMap.declaredAnswers[error._tag]
      assert.isTrue(
        declared.some((answer) => answer.status === problem.status && answer.codes.includes(problem.code)),
        `${error._tag} answered ${problem.status} ${problem.code}, which its declared answers do not list`
      )
    }
  })

  it("every declared answer is given for some error (the table lists no status a map never answers)", () => {
    const answered = new Set(allSamples.map((error) => `${error._tag} ${ErrorMap.toProblem(error).status}`))
    for (const [tag, answers] of Object.entries(ErrorMap.declaredAnswers)) {
      for (const answer of answers) assert.isTrue(answered.has(`${tag} ${answer.status}`), `${tag} ${answer.status}`)
    }
  })

  it("a generated declaration encodes its error as the problem document ErrorMap answers, one status each", () => {
    const error = new RevalidationFailed({ reason: "decision_expired", path: "binding.decisionId", detail: "expired" })
    const [conflict, unprocessable] = Common.answers("RevalidationFailed")
    assert.deepStrictEqual(
      Schema.encodeSync(conflict as Schema.Schema<RevalidationFailed, unknown>)(error),
      Problem.toAnswer(ErrorMap.toProblem(error)).body
    )
    // The 422 declaration takes only the reasons answered 422.
    assert.isTrue(Either.isLeft(Schema.encodeEither(unprocessable as Schema.Schema<unknown, unknown>)(error)))
  })

  it("a declared error is never decoded back from a problem document", () => {
    const [declared] = Common.answers("ConnectorNotActive")
    const body = Problem.toAnswer(ErrorMap.toProblem(new ConnectorNotActive())).body
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(declared as Schema.Schema<unknown, unknown>)(body)))
  })

  it("/openapi.json lists a route's domain errors with their status and codes", () => {
    const schemas = (Api.document.components as { schemas: Record<string, unknown> }).schemas
    // The response with its `$ref`s replaced by the schemas they name, as text.
    const codesAt = (path: string, method: string, status: string): string =>
      JSON.stringify(
        (Api.document.paths as Record<string, any>)[path][method].responses[status] ?? null,
        (key, value) => (key === "$ref" ? schemas[String(value).split("/").at(-1)!] : value)
      )
    const catalog = "/api/admin/v1/workspaces/{workspaceId}/catalog"
    assert.include(codesAt(catalog, "put", "409"), '"published_version_exists"')
    assert.include(codesAt(catalog, "put", "503"), '"storage_unavailable"')
    assert.include(codesAt(catalog, "get", "404"), '"catalog_not_published"')
    const resolve = "/api/funnels/v1/runtime/actions/approvals/resolve"
    for (const reason of ErrorMap.declaredAnswers.RevalidationFailed.find((answer) => answer.status === 422)!.codes) {
      assert.include(codesAt(resolve, "post", "422"), `"${reason}"`)
    }
  })
})
