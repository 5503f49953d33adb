/**
 * `POST /api/events/ingest` (spec `direct-api-ingestion.md` "Endpoints"): one event per request,
 * a bearer key of scope `ingest`, JSON only.
 *
 * Answers (snake_case, the Direct API's style): 202 `{ status: "accepted", id, event_id, account_id }`
 * once the event is committed; 200 `{ status: "duplicate", duplicate: true, … }` for a retry of an
 * event already stored (same `event_id`, same payload), nothing stored twice; 409 for the same
 * `event_id` with a different payload; 400 for a body that breaks the event contract (every failing
 * field listed), 422 for an event refused by a rule (unsafe data, not revenue-relevant, a usage
 * meter changing its unit); 401/403 for the key; 413 over 32 KiB; 415 for a non-JSON body; 429 with
 * `Retry-After` over the key's rate. Never a silent 200.
 *
 * @since 0.1.0
 */
import * as RateLimiter from "@effect/experimental/RateLimiter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ApiKeyStore } from "../../core/ApiKeyStore.ts"
import { randomUuid } from "../../core/ApiKeys.ts"
import type { Crypto } from "../../core/Crypto.ts"
import { Committer } from "../../core/ingest/Committer.ts"
import { type IngestRejection, prepareEvent, withPayloadHash } from "../../core/ingest/Ingest.ts"
import type { WriteResult } from "../../core/ingest/IngestWriter.ts"
import { meterKey, usageRollupEventName } from "../../core/ingest/UsageRollup.ts"
import { parseJsonBody } from "../../core/Verification.ts"
import * as Answer from "./Answer.ts"
import { authenticateBearer, storageUnavailable } from "./Auth.ts"
import { isJsonContentType, readBytes } from "./Body.ts"
import * as Problem from "./Problem.ts"

/**
 * @since 0.1.0
 */
export const ingestPath = "/api/events/ingest"

/**
 * "Each request carries one small JSON event": 32 KiB at most.
 *
 * @since 0.1.0
 */
export const maxEventBytes = 32 * 1024

/**
 * @since 0.1.0
 */
export interface IngestOptions {
  /** Requests per second per key (token bucket of that size refilled over one second). */
  readonly rateLimitPerSecond: number
}

/**
 * @since 0.1.0
 */
export type IngestServices = ApiKeyStore | Crypto | Committer | RateLimiter.RateLimiter

const rejection = (error: IngestRejection): Problem.Problem => {
  switch (error._tag) {
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
  }
}

const answer = (result: WriteResult, suggestedEventId: Option.Option<string>): Answer.Answer => {
  if (result._tag === "UnitChanged") {
    return Problem.toAnswer(Problem.make(422, "unit_changed", "a usage meter must keep a stable meaning", { errors: [result.issue] }))
  }
  const { event } = result
  const view = {
    id: event.id,
    event_id: event.eventId,
    account_id: event.accountId,
    ...(Option.isSome(suggestedEventId) ? { suggested_event_id: suggestedEventId.value } : {})
  }
  switch (result._tag) {
    case "Stored":
      return Answer.json({ status: "accepted", duplicate: false, ...view }, 202)
    case "Duplicate":
      return Answer.json({ status: "duplicate", duplicate: true, ...view }, 200)
    case "Conflict":
      return Problem.toAnswer(
        Problem.make(409, "event_id_conflict", "this event_id was already used for a different event; reuse an event_id only when retrying the same event")
      )
  }
}

/**
 * One ingest request as the pipeline needs it, whichever server received it. `body` reads the
 * request body (at most `maxEventBytes`, else 413); it runs only once the key and the content type
 * have passed.
 *
 * @since 0.1.0
 */
export interface IngestRequest {
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  readonly body: Effect.Effect<Uint8Array, Problem.Problem>
}

/**
 * The ingest pipeline, from a request to its answer: the key (scope `ingest`), the key's rate, the
 * content type, the body, the ingestion rules, the usage meter's unit, then the group commit.
 * Every refusal is a problem answer; a request never fails.
 *
 * @since 0.1.0
 */
export const ingest = (options: IngestOptions) => {
  const rateLimit = (keyId: string) =>
    Effect.flatMap(RateLimiter.RateLimiter, (limiter) =>
      limiter.consume({
        key: `ingest:${keyId}`,
        algorithm: "token-bucket",
        onExceeded: "fail",
        limit: options.rateLimitPerSecond,
        window: Duration.seconds(1)
      })).pipe(
        Effect.catchAll((error) =>
          error.reason === "Exceeded"
            ? Effect.fail(
              Problem.make(429, "rate_limited", `at most ${options.rateLimitPerSecond} requests per second per key`, {
                headers: { "retry-after": String(Math.max(1, Math.ceil(Duration.toSeconds(error.retryAfter)))) }
              })
            )
            : Effect.void
        )
      )
  return (request: IngestRequest): Effect.Effect<Answer.Answer, never, IngestServices> =>
    Effect.gen(function*() {
      const key = yield* authenticateBearer(request.authorization)
      if (key.scope !== "ingest") return yield* Problem.forbidden("this route needs a key with scope ingest")
      yield* rateLimit(key.id)
      if (!isJsonContentType(request.contentType)) {
        return yield* Effect.fail(Problem.unsupportedMediaType("application/json"))
      }
      const raw = yield* Effect.mapError(
        Effect.flatMap(request.body, parseJsonBody),
        (error) => error._tag === "Problem" ? error : Problem.badRequest("malformed_json", "the request body is not a UTF-8 JSON document")
      )
      const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      const prepared = prepareEvent(raw, { id: yield* randomUuid, workspaceId: key.workspaceId, now })
      if (Either.isLeft(prepared)) return yield* Effect.fail(rejection(prepared.left))
      const event = prepared.right
      const meter = event.event.event_name === usageRollupEventName ? meterKey(event.event) : Option.none()
      const unit = event.event.properties?.["unit"]
      const stored = yield* withPayloadHash(event)
      const result = yield* (yield* Committer).submit({
        stored,
        normalized: event,
        keyScope: key.scope,
        ...(Option.isSome(meter) && typeof unit === "string" ? { meter: { meterKey: meter.value, unit } } : {})
      }).pipe(Effect.mapError(storageUnavailable))
      return answer(result, event.suggestedEventId)
    }).pipe(Effect.catchTag("Problem", (problem) => Effect.succeed(Problem.toAnswer(problem))))
}

/**
 * The ingest route of the platform app.
 *
 * @since 0.1.0
 */
export const handler = (
  options: IngestOptions
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, IngestServices | HttpServerRequest.HttpServerRequest> => {
  const pipeline = ingest(options)
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.map(
      pipeline({
        authorization: request.headers["authorization"],
        contentType: request.headers["content-type"],
        body: Effect.provideService(readBytes(maxEventBytes), HttpServerRequest.HttpServerRequest, request)
      }),
      Answer.toResponse
    ))
}
