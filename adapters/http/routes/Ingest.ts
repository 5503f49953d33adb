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
 * `Retry-After` over the key's rate. Never a silent 200. Core (`Accept`) decides what became of the
 * event; the statuses are chosen here (DESIGN D8).
 *
 * @since 0.1.0
 */
import * as RateLimiter from "@effect/experimental/RateLimiter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { ApiKeyRecord, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { randomUuidWith } from "../../../core/protocol/Uuid.ts"
import { Crypto } from "../../../core/ports/Crypto.ts"
import * as Accept from "../../../core/ingest/Accept.ts"
import type { Committer } from "../../../core/ingest/Committer.ts"
import * as Instrumented from "../../telemetry/Instrumented.ts"
import * as Answer from "../Answer.ts"
import { bearerAuthenticator } from "../Auth.ts"
import { isJsonContentType, parseJsonBytes } from "../../../core/protocol/Json.ts"
import { readBytes } from "../Body.ts"
import * as ErrorMap from "../ErrorMap.ts"
import * as Problem from "../Problem.ts"
import * as IngestApi from "../api/IngestApi.ts"

/**
 * @since 0.1.0
 */
export const ingestPath: `/${string}` = IngestApi.ingestEvent.path

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

const answer = (accepted: Accept.Accepted): Answer.Answer => {
  if (accepted._tag === "UnitChanged") {
    return Problem.toAnswer(Problem.make(422, "unit_changed", "a usage meter must keep a stable meaning", { errors: [accepted.issue] }))
  }
  if (accepted._tag === "Conflict") {
    return Problem.toAnswer(
      Problem.make(409, "event_id_conflict", "this event_id was already used for a different event; reuse an event_id only when retrying the same event")
    )
  }
  const { event, suggestedEventId } = accepted
  const view = {
    id: event.id,
    event_id: event.eventId,
    account_id: event.accountId,
    ...(suggestedEventId !== undefined ? { suggested_event_id: suggestedEventId } : {})
  }
  return accepted._tag === "Stored"
    ? Answer.json({ status: "accepted", duplicate: false, ...view }, 202)
    : Answer.json({ status: "duplicate", duplicate: true, ...view }, 200)
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
 * content type, the body and its JSON, then ONE call to core (`Accept`: the ingestion rules and the
 * group commit), whose result is mapped to the answer here. Every refusal is a problem answer; a
 * request never fails. The services are
 * resolved once, and the work between the asynchronous steps (key lookup, body, commit) runs
 * synchronously: this runs for every event, thousands of times a second.
 *
 * @since 0.1.0
 */
export const makeIngest = (
  options: IngestOptions
): Effect.Effect<(request: IngestRequest) => Effect.Effect<Answer.Answer>, never, IngestServices> =>
  Effect.gen(function*() {
    const authenticate = yield* bearerAuthenticator
    const crypto = yield* Crypto
    const limiter = yield* RateLimiter.RateLimiter
    const accept = yield* Accept.make
    const clock = yield* Effect.clock
    const rate = { algorithm: "token-bucket", onExceeded: "fail", limit: options.rateLimitPerSecond, window: Duration.seconds(1) } as const
    const rateLimited = (error: RateLimiter.RateLimiterError) =>
      error.reason === "Exceeded"
        ? Effect.fail(
          Problem.make(429, "rate_limited", `at most ${options.rateLimitPerSecond} requests per second per key`, {
            headers: { "retry-after": String(Math.max(1, Math.ceil(Duration.toSeconds(error.retryAfter)))) }
          })
        )
        : Effect.logWarning("ingest: the rate limiter failed; the request is let through", error.reason)

    type ConsumeOptions = Parameters<typeof limiter.consume>[0]
    const limited = new Map<string, ConsumeOptions>()
    /** The rate of one key, built once per key (it is the same object on every request). */
    const rateOf = (keyId: string): ConsumeOptions => {
      let options = limited.get(keyId)
      if (options === undefined) {
        if (limited.size >= 10_000) limited.clear()
        options = { ...rate, key: `ingest:${keyId}` }
        limited.set(keyId, options)
      }
      return options
    }
    const commit = (key: ApiKeyRecord, bytes: Uint8Array, id: string): Effect.Effect<Answer.Answer, Problem.Problem> => {
      const raw = parseJsonBytes(bytes)
      return Either.isLeft(raw)
        ? Effect.fail(ErrorMap.malformedBody(raw.left))
        : Effect.mapBoth(accept(key, raw.right, id, clock.unsafeCurrentTimeMillis()), { onFailure: ErrorMap.toProblem, onSuccess: answer })
    }
    const uuid = randomUuidWith(crypto)
    // The steps in order (key, scope, rate, content type, body, rules and commit), as few effects
    // as they need: this runs for every event.
    const afterKey = (request: IngestRequest) => (key: ApiKeyRecord): Effect.Effect<Answer.Answer, Problem.Problem> => {
      if (key.scope !== "ingest") return Effect.fail(Problem.forbidden("this route needs a key with scope ingest"))
      return Effect.flatMap(Effect.catchAll(limiter.consume(rateOf(key.id)), rateLimited), () => {
        if (!isJsonContentType(request.contentType)) return Effect.fail(Problem.unsupportedMediaType("application/json"))
        return Effect.flatMap(request.body, (bytes) => Effect.flatMap(uuid, (id) => commit(key, bytes, id)))
      })
    }
    const problemAnswer = (problem: Problem.Problem) => Effect.succeed(Problem.toAnswer(problem))
    return (request) =>
      Effect.catchAll(Effect.flatMap(authenticate(request.authorization), afterKey(request)), problemAnswer).pipe(
        Effect.tap(Instrumented.ingestAnswered)
      )
  })

/**
 * The ingest route of the platform app.
 *
 * @since 0.1.0
 */
export const handler = (
  options: IngestOptions
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, IngestServices | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(Effect.zip(makeIngest(options), HttpServerRequest.HttpServerRequest), ([pipeline, request]) =>
    Effect.map(
      pipeline({
        authorization: request.headers["authorization"],
        contentType: request.headers["content-type"],
        body: Effect.provideService(readBytes(maxEventBytes), HttpServerRequest.HttpServerRequest, request)
      }),
      Answer.toResponse
    ))
