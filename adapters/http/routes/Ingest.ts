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
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { identity } from "effect/Function"
import * as Runtime from "effect/Runtime"
import type { ApiKeyRecord, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { randomUuidWith } from "../../../core/protocol/Uuid.ts"
import { Crypto } from "../../../core/ports/Crypto.ts"
import * as Accept from "../../../core/ingest/Accept.ts"
import type { Committer } from "../../../core/ingest/Committer.ts"
import { IngestRate } from "../../../core/ingest/IngestRate.ts"
import * as Instrumented from "../../telemetry/Instrumented.ts"
import * as Answer from "../Answer.ts"
import { bearerAuthenticator, settledAuthenticator } from "../Auth.ts"
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
export type IngestServices = ApiKeyStore | Crypto | Committer | IngestRate

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
 * The same request for {@link IngestPipeline.run}: `readBody` reads the body (as `body` does) and
 * calls back once.
 *
 * @since 0.1.0
 */
export interface IngestCall {
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  readonly readBody: (done: (body: Exit.Exit<Uint8Array, Problem.Problem>) => void) => void
}

/**
 * The ingest pipeline in two forms: as an effect (the platform route), and `run`, which answers
 * through a callback (the `node:http` route). `run` calls `done` once: with the answer, or with
 * `undefined` when the work was interrupted (the server is closing) and nothing should be sent.
 *
 * @since 0.1.0
 */
export interface IngestPipeline {
  (request: IngestRequest): Effect.Effect<Answer.Answer>
  readonly run: (call: IngestCall, done: (answer: Answer.Answer | undefined) => void) => void
}

/**
 * The ingest pipeline, from a request to its answer: the key (scope `ingest`), the key's rate, the
 * content type, the body and its JSON, then ONE call to core (`Accept`: the ingestion rules and the
 * group commit), whose result is mapped to the answer here. Every refusal is a problem answer; a
 * request never fails; a defect is logged and answered 500 with a fixed problem.
 *
 * This runs for every event, thousands of times a second, so it is written as callbacks and no
 * step starts a fiber when it can finish without one: a key in the key store's lookup cache, the
 * rate, the content type, the JSON and the rules are synchronous, the body is read from the
 * socket's events, and the event waits for its group commit as a callback from the committer's
 * worker (`Committer.offer`). A step that must wait on a service (a key not cached, a digest or id
 * without a synchronous form, a committer without offers) runs as an effect and calls back.
 * Measured with a profiler under `bench:ingest`: a fiber per request and the effects it ran were
 * the largest share of the server's CPU per event (docs/performance.md).
 *
 * @since 0.1.0
 */
export const makeIngest = (options: IngestOptions): Effect.Effect<IngestPipeline, never, IngestServices> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const runCallback = Runtime.runCallback(runtime)
    const authenticate = yield* bearerAuthenticator
    const settledKey = yield* settledAuthenticator
    const crypto = yield* Crypto
    const rate = yield* IngestRate
    const { accept, acceptNow } = yield* Accept.makeAcceptors
    const clock = yield* Effect.clock
    const limit = options.rateLimitPerSecond
    const uuidSync = crypto.unsafeRandomUuidSync
    const uuid = randomUuidWith(crypto)
    const rateLimited = (waitMillis: number) =>
      Problem.make(429, "rate_limited", `at most ${limit} requests per second per key`, {
        headers: { "retry-after": String(Math.max(1, Math.ceil(waitMillis / 1000))) }
      })

    const run = (call: IngestCall, done: (answer: Answer.Answer | undefined) => void): void => {
      const finish = (answer: Answer.Answer) => {
        Instrumented.unsafeIngestAnswered(answer)
        done(answer)
      }
      const refuse = (problem: Problem.Problem) => finish(Problem.toAnswer(problem))
      const onCause = <E>(cause: Cause.Cause<E>, toProblem: (error: E) => Problem.Problem) => {
        const failure = Cause.failureOption(cause)
        if (failure._tag === "Some") return refuse(toProblem(failure.value))
        if (Cause.isInterruptedOnly(cause)) return done(undefined)
        runCallback(Effect.logError("unexpected error while handling a request", cause))
        finish(Problem.toAnswer(Problem.internal))
      }
      /** Runs a step; a throw is a defect of this request, never of the caller's context. */
      const guarded = (step: () => void) => {
        try {
          step()
        } catch (defect) {
          onCause(Cause.die(defect), identity)
        }
      }
      const settle = (exit: Exit.Exit<Accept.Accepted, Accept.AcceptError>) =>
        guarded(() => Exit.isSuccess(exit) ? finish(answer(exit.value)) : onCause(exit.cause, ErrorMap.toProblem))
      const commit = (key: ApiKeyRecord, body: unknown, id: string) => {
        const now = clock.unsafeCurrentTimeMillis()
        if (acceptNow !== undefined) acceptNow(key, body, id, now, settle)
        else runCallback(accept(key, body, id, now), { onExit: settle })
      }
      const onBody = (key: ApiKeyRecord) => (bytes: Exit.Exit<Uint8Array, Problem.Problem>) =>
        guarded(() => {
          if (Exit.isFailure(bytes)) return onCause(bytes.cause, identity)
          const raw = parseJsonBytes(bytes.value)
          if (Either.isLeft(raw)) return refuse(ErrorMap.malformedBody(raw.left))
          if (uuidSync !== undefined) return commit(key, raw.right, uuidSync())
          runCallback(uuid, { onExit: (id) => guarded(() => Exit.isSuccess(id) ? commit(key, raw.right, id.value) : onCause(id.cause, identity)) })
        })
      // The steps in order: scope, rate, content type, body, then rules and commit.
      const afterKey = (key: ApiKeyRecord) => {
        if (key.scope !== "ingest") return refuse(Problem.forbidden("this route needs a key with scope ingest"))
        const wait = rate.consume(key.id, limit, clock.unsafeCurrentTimeMillis())
        if (wait > 0) return refuse(rateLimited(wait))
        if (!isJsonContentType(call.contentType)) return refuse(Problem.unsupportedMediaType("application/json"))
        call.readBody(onBody(key))
      }
      guarded(() => {
        const settled = settledKey(call.authorization, clock.unsafeCurrentTimeMillis())
        if (settled === undefined) {
          runCallback(authenticate(call.authorization), {
            onExit: (key) => guarded(() => Exit.isSuccess(key) ? afterKey(key.value) : onCause(key.cause, identity))
          })
        } else if (Either.isLeft(settled)) {
          refuse(settled.left)
        } else {
          afterKey(settled.right)
        }
      })
    }

    const pipeline = (request: IngestRequest): Effect.Effect<Answer.Answer> =>
      Effect.async<Answer.Answer>((resume) =>
        run({
          authorization: request.authorization,
          contentType: request.contentType,
          readBody: (done) => runCallback(request.body, { onExit: done })
        }, (answer) => resume(answer === undefined ? Effect.interrupt : Effect.succeed(answer)))
      )
    return Object.assign(pipeline, { run })
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
