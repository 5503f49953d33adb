import { assert, describe, it } from "@effect/vitest"
import { ConnectorNotConfigured } from "../../../core/connector/ConnectionCheck.ts"
import { CompletionRefused } from "../../../core/connector/CompletionIntake.ts"
import { RegistrationRejected } from "../../../core/connector/Connection.ts"
import { ConnectorNotActive, PaymentModeNotEnabled, PaymentSnapshotMismatch } from "../../../core/connector/Intake.ts"
import { IdempotencyKeyReused, InvalidIdempotencyKey } from "../../../core/connector/IntakeKey.ts"
import { BatchNotAccepted, InvalidEvent, NotRevenueRelevant, UnsafeEvent } from "../../../core/ingest/Ingest.ts"
import { StorageError } from "../../../core/ports/StorageError.ts"
import {
  type RevalidationReason,
  RevalidationFailed,
  revalidationReasons
} from "../../../core/connector/Revalidation.ts"
import { MalformedBody } from "../../../core/protocol/Json.ts"
import * as ErrorMap from "../../../adapters/http/ErrorMap.ts"
import * as Problem from "../../../adapters/http/Problem.ts"

/** The problem as the client reads it: the rendered body and the status line. */
const rendered = (problem: Problem.Problem) => Problem.toAnswer(problem)

describe("ErrorMap.toProblem", () => {
  it("a body that is not JSON: 400 malformed_json", () => {
    const answer = rendered(ErrorMap.toProblem(new MalformedBody()))
    assert.strictEqual(answer.status, 400)
    assert.strictEqual((answer.body as { code: string }).code, "malformed_json")
  })

  it("a duplicate key: 400 duplicate_key with the path, an unsafe key redacted", () => {
    const answer = rendered(
      ErrorMap.toProblem(new MalformedBody({ reason: "duplicate_key", at: ["items", 0, "ada@example.com"] }))
    )
    assert.strictEqual(answer.status, 400)
    assert.strictEqual((answer.body as { code: string }).code, "duplicate_key")
    assert.deepStrictEqual((answer.body as { errors: unknown }).errors, [
      { path: "items.0.<redacted>", message: "is a duplicate key" }
    ])
  })

  it("text that cannot be stored: 400 unstorable_text with the path", () => {
    const answer = rendered(ErrorMap.toProblem(new MalformedBody({ reason: "unstorable_text", at: ["accountId"] })))
    assert.strictEqual(answer.status, 400)
    assert.strictEqual((answer.body as { code: string }).code, "unstorable_text")
    assert.deepStrictEqual(
      (answer.body as { errors: ReadonlyArray<{ path: string }> }).errors.map((e) => e.path),
      ["accountId"]
    )
  })

  it("a storage failure: 503 storage_unavailable, without the store's message", () => {
    const answer = rendered(
      ErrorMap.toProblem(new StorageError({ operation: "get", message: "connection refused by 10.0.0.5" }))
    )
    assert.strictEqual(answer.status, 503)
    assert.deepStrictEqual(answer.body, {
      type: "urn:accord:problem:storage_unavailable",
      title: "Service Unavailable",
      status: 503,
      detail: "storage is temporarily unavailable",
      code: "storage_unavailable"
    })
  })

  it("a refused completion: the status follows its kind, code, detail and errors are core's", () => {
    const statuses = {
      unauthenticated: 401,
      invalid: 400,
      unknown_action: 404,
      binding_mismatch: 422,
      conflict: 409
    } as const
    for (const [kind, status] of Object.entries(statuses)) {
      const problem = ErrorMap.toProblem(
        new CompletionRefused({ kind: kind as keyof typeof statuses, code: `code_${kind}`, detail: `detail ${kind}` })
      )
      assert.strictEqual(problem.status, status)
      assert.strictEqual(problem.code, `code_${kind}`)
      assert.strictEqual(problem.detail, `detail ${kind}`)
      assert.isUndefined(problem.errors)
    }
    const invalid = ErrorMap.toProblem(
      new CompletionRefused({
        kind: "invalid",
        code: "invalid_body",
        detail: "bad",
        errors: [{ path: "state", message: "must be a state" }]
      })
    )
    assert.deepStrictEqual(invalid.errors, [{ path: "state", message: "must be a state" }])
    assert.strictEqual(invalid.title, "Bad Request")
  })

  it("intake refusals: 409 connector_not_active, 422 payment_snapshot_mismatch with the reason", () => {
    const inactive = rendered(ErrorMap.toProblem(new ConnectorNotActive()))
    assert.deepStrictEqual(inactive.body, {
      type: "urn:accord:problem:connector_not_active",
      title: "Conflict",
      status: 409,
      detail: "the workspace has no active connector revision; register and check the connection first",
      code: "connector_not_active"
    })
    const mismatch = ErrorMap.toProblem(new PaymentSnapshotMismatch({ reason: "mode_mismatch" }))
    assert.strictEqual(mismatch.status, 422)
    assert.strictEqual(mismatch.code, "payment_snapshot_mismatch")
    assert.strictEqual(mismatch.detail, "the payment snapshot does not fit the action (mode_mismatch)")
  })

  it("a Payment action without a covering payment capability: 409 payment_mode_not_enabled naming the mode and reason", () => {
    const problem = ErrorMap.toProblem(
      new PaymentModeNotEnabled({ mode: "setup_only", reason: "payment_capability_missing" })
    )
    assert.strictEqual(problem.status, 409)
    assert.strictEqual(problem.code, "payment_mode_not_enabled")
    assert.include(problem.detail, "setup_only")
    assert.include(problem.detail, "payment_capability_missing")
  })

  it("intake idempotency keys: 400 invalid_idempotency_key, 409 idempotency_key_reused", () => {
    const invalid = ErrorMap.toProblem(new InvalidIdempotencyKey())
    assert.deepStrictEqual([invalid.status, invalid.code], [400, "invalid_idempotency_key"])
    const reused = rendered(ErrorMap.toProblem(new IdempotencyKeyReused()))
    assert.deepStrictEqual(reused.body, {
      type: "urn:accord:problem:idempotency_key_reused",
      title: "Conflict",
      status: 409,
      detail: "this Idempotency-Key was already used for a different action request; use a new key for a new request",
      code: "idempotency_key_reused"
    })
  })

  it("connector administration: 422 with the rule's code and fields, 404 connector_not_configured", () => {
    const rejected = ErrorMap.toProblem(
      new RegistrationRejected({
        problem: "not_https",
        detail: "the endpoint must use https",
        errors: [{ path: "endpoint", message: "must be https" }]
      })
    )
    assert.strictEqual(rejected.status, 422)
    assert.strictEqual(rejected.title, "Unprocessable Content")
    assert.strictEqual(rejected.code, "not_https")
    assert.strictEqual(rejected.detail, "the endpoint must use https")
    assert.deepStrictEqual(rejected.errors, [{ path: "endpoint", message: "must be https" }])
    const missing = ErrorMap.toProblem(new ConnectorNotConfigured())
    assert.strictEqual(missing.status, 404)
    assert.strictEqual(missing.code, "connector_not_configured")
    assert.strictEqual(missing.detail, "no connector endpoint is registered for this workspace")
  })

  it("a problem raised by the edge passes through unchanged", () => {
    const problem = Problem.unsupportedMediaType("application/json")
    assert.strictEqual(ErrorMap.toProblem(problem), problem)
  })

  it("ingest refusals: 400 for the contract and batches, 422 for unsafe data and irrelevant events", () => {
    const batch = ErrorMap.toProblem(new BatchNotAccepted())
    assert.deepStrictEqual([batch.status, batch.code], [400, "batch_not_accepted"])
    const invalid = ErrorMap.toProblem(
      new InvalidEvent({ issues: [{ path: "account_id", code: "invalid_event", message: "is missing" }] })
    )
    assert.deepStrictEqual(
      [invalid.status, invalid.code, invalid.errors],
      [400, "invalid_event", [{ path: "account_id", code: "invalid_event", message: "is missing" }]]
    )
    const unsafe = ErrorMap.toProblem(
      new UnsafeEvent({
        issues: [{ path: "properties.<redacted>", code: "unsafe_property", message: "looks like a secret" }]
      })
    )
    assert.deepStrictEqual([unsafe.status, unsafe.code], [422, "unsafe_property"])
    assert.strictEqual(unsafe.detail, "the event carries data that must never be sent; nothing was stored")
    const noise = ErrorMap.toProblem(new NotRevenueRelevant({ reason: "a click is UI noise" }))
    assert.deepStrictEqual(
      [noise.status, noise.code, noise.detail],
      [422, "not_revenue_relevant", "a click is UI noise"]
    )
  })

  it("a revalidation refusal: 422 when a reference resolves to nothing, 409 when the catalog, account, authority or frequency no longer allows the action", () => {
    const expected: Record<RevalidationReason, 409 | 422> = {
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
    for (const [reason, status] of Object.entries(expected) as Array<[RevalidationReason, 409 | 422]>) {
      const answer = rendered(
        ErrorMap.toProblem(
          new RevalidationFailed({ reason, path: revalidationReasons[reason].path, detail: "no longer allowed" })
        )
      )
      assert.deepStrictEqual([answer.status, (answer.body as { code: string }).code], [status, reason])
    }
  })
})
