/**
 * `POST /api/events/ingest` (spec `direct-api-ingestion.md` "Endpoints"): one event per request,
 * a bearer key of scope `ingest`, JSON only.
 *
 * Answers (snake_case, the Direct API's style): 202 `{ status: "accepted", id, event_id, account_id }`
 * once the event is committed; 200 `{ status: "duplicate", duplicate: true, … }` for a retry of an
 * event already stored (same `event_id`, same payload), nothing stored twice; 409 for the same
 * `event_id` with a different payload; 202 `{ status: "suppressed", suppressed: true, … }` for an
 * event of an erased account or user, nothing stored; 400 for a body that breaks the event contract (every failing
 * field listed), 422 for an event refused by a rule (unsafe data, not revenue-relevant, a usage
 * meter changing its unit); 401/403 for the key; 413 over 32 KiB; 415 for a non-JSON body; 429 with
 * `Retry-After` over the key's rate. Never a silent 200. Core (`Accept`) decides what became of the
 * event; the statuses are chosen here (docs/decisions.md, "Problem details").
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { identity } from "effect/Function"
import * as Runtime from "effect/Runtime"
import type { ApiKeyRecord, ApiKeyScope, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { timeOrderedUuidSync, timeOrderedUuidWith } from "../../../core/protocol/Uuid.ts"
import { Crypto, CryptoSync } from "../../../core/ports/Crypto.ts"
import * as Accept from "../../../core/ingest/Accept.ts"
import type { Committer } from "../../../core/ingest/Committer.ts"
import type { Suppressions } from "../../../core/ingest/Suppression.ts"
import { IngestRate, type IngestRateService } from "../../../core/ingest/IngestRate.ts"
import * as Instrumented from "../../telemetry/Instrumented.ts"
import * as Answer from "../Answer.ts"
import { bearerAuthenticator, scopeProblem, settledAuthenticator } from "../Auth.ts"
import { isJsonContentType, parseJsonBytes } from "../../../core/protocol/Json.ts"
import { notJson, readBytes } from "../Body.ts"
import * as ErrorMap from "../ErrorMap.ts"
import * as StorageFaultLog from "../../telemetry/StorageFaultLog.ts"
import { StorageError } from "../../../core/ports/StorageError.ts"
import * as Problem from "../Problem.ts"
import * as Api from "../api/Api.ts"
import * as IngestApi from "../api/IngestApi.ts"

/** The Direct API's ingest path, `/api/events/ingest`, from its declaration. */
export const ingestPath: `/${string}` = IngestApi.ingestEvent.path

/**
 * "Each request carries one small JSON event": 32 KiB at most.
 */
export const maxEventBytes = 32 * 1024

/** The scopes the route takes. */
const ingestScopes: ReadonlyArray<ApiKeyScope> = ["ingest"]

/** The ingest route's settings: the per-key rate and the body limit. */
export interface IngestOptions {
  /** Requests per second per key (token bucket of that size refilled over one second). */
  readonly rateLimitPerSecond: number
}

/**
 * What the ingest route needs: key authentication, the group commit and the per-key rate limiter.
 */
export type IngestServices = ApiKeyStore | Crypto | Committer | IngestRate | Suppressions

const answer = (accepted: Accept.Accepted): Answer.Answer => {
  if (accepted._tag === "UnitChanged" || accepted._tag === "Conflict") {
    return Problem.toAnswer(ErrorMap.ingestRefusal(accepted))
  }
  if (accepted._tag === "Suppressed") {
    return Answer.json(
      {
        status: "suppressed",
        suppressed: true,
        duplicate: false,
        event_id: accepted.eventId,
        account_id: accepted.accountId
      },
      202
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
 */
export interface IngestRequest {
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  readonly body: Effect.Effect<Uint8Array, Problem.Problem>
}

/**
 * The same request for {@link IngestPipeline.run}: `readBody` reads the body (as `body` does) and
 * calls back once.
 */
export interface IngestCall {
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  /**
   * Reads the request body, bounded by the route's limit, and calls `done` once with it or its
   * problem.
   */
  readonly readBody: (done: (body: Exit.Exit<Uint8Array, Problem.Problem>) => void) => void
}

/**
 * The ingest pipeline in two forms: as an effect (the platform route), and `run`, which answers
 * through a callback (the `node:http` route). `run` calls `done` once: with the answer, or with
 * `undefined` when the work was interrupted (the server is closing) and nothing should be sent.
 */
export interface IngestPipeline {
  (request: IngestRequest): Effect.Effect<Answer.Answer>
  /**
   * Runs one ingest request and calls `done` with its answer (`undefined` when the connection is
   * gone).
   */
  readonly run: (call: IngestCall, done: (answer: Answer.Answer | undefined) => void) => void
}

/** What every request's run shares (resolved once by `makeIngest`). */
interface Steps {
  readonly runCallback: <A, E>(
    effect: Effect.Effect<A, E>,
    options: { readonly onExit: (exit: Exit.Exit<A, E>) => void }
  ) => unknown
  readonly authenticate: (header: string | undefined) => Effect.Effect<ApiKeyRecord, Problem.Problem>
  readonly settledKey: (
    header: string | undefined,
    now: number
  ) => Either.Either<ApiKeyRecord, Problem.Problem> | undefined
  readonly rate: IngestRateService
  readonly limit: number
  readonly clock: Clock.Clock
  readonly accept: Accept.Accept
  readonly acceptNow: Accept.AcceptNow | undefined
  readonly uuidSync: (() => string) | undefined
  readonly uuid: Effect.Effect<string>
  readonly rateLimited: (waitMillis: number) => Problem.Problem
}

/**
 * One request through the pipeline's callback form. A class, so that a request costs one object
 * and its steps are shared methods rather than a dozen closures made per request. Each entry point
 * (the start and every callback) catches what its step throws: a throw is a defect of this
 * request, answered 500, never of the caller's context (a socket event, the committer's worker).
 */
class IngestRun {
  private key: ApiKeyRecord | undefined
  private body: unknown
  private answered = false
  constructor(
    private readonly steps: Steps,
    private readonly call: IngestCall,
    private readonly done: (answer: Answer.Answer | undefined) => void
  ) {}

  start(): void {
    try {
      const settled = this.steps.settledKey(this.call.authorization, this.steps.clock.unsafeCurrentTimeMillis())
      if (settled === undefined) {
        this.steps.runCallback(this.steps.authenticate(this.call.authorization), { onExit: (exit) => this.onKey(exit) })
      } else if (Either.isLeft(settled)) {
        this.refuse(settled.left)
      } else {
        this.afterKey(settled.right)
      }
    } catch (defect) {
      this.onDefect(defect)
    }
  }

  private onKey(exit: Exit.Exit<ApiKeyRecord, Problem.Problem>): void {
    try {
      if (Exit.isSuccess(exit)) this.afterKey(exit.value)
      else this.onCause(exit.cause, identity)
    } catch (defect) {
      this.onDefect(defect)
    }
  }

  // The steps in order: scope, rate, content type, body, then rules and commit.
  private afterKey(key: ApiKeyRecord): void {
    const refused = scopeProblem(key, ingestScopes)
    if (refused !== undefined) return this.refuse(refused)
    const wait = this.steps.rate.consume(key.id, this.steps.limit, this.steps.clock.unsafeCurrentTimeMillis())
    if (wait > 0) return this.refuse(this.steps.rateLimited(wait))
    if (!isJsonContentType(this.call.contentType)) return this.refuse(notJson)
    this.key = key
    this.call.readBody((bytes) => this.onBody(bytes))
  }

  private onBody(bytes: Exit.Exit<Uint8Array, Problem.Problem>): void {
    try {
      if (Exit.isFailure(bytes)) return this.onCause(bytes.cause, identity)
      const raw = parseJsonBytes(bytes.value)
      if (Either.isLeft(raw)) return this.refuse(ErrorMap.malformedBody(raw.left))
      this.body = raw.right
      if (this.steps.uuidSync !== undefined) return this.commit(this.steps.uuidSync())
      this.steps.runCallback(this.steps.uuid, { onExit: (id) => this.onId(id) })
    } catch (defect) {
      this.onDefect(defect)
    }
  }

  private onId(id: Exit.Exit<string>): void {
    try {
      if (Exit.isSuccess(id)) this.commit(id.value)
      else this.onCause(id.cause, identity)
    } catch (defect) {
      this.onDefect(defect)
    }
  }

  private commit(id: string): void {
    const now = this.steps.clock.unsafeCurrentTimeMillis()
    const acceptNow = this.steps.acceptNow
    const body = this.body
    // The parsed body is not needed past here: not held while the event waits for its commit.
    this.body = undefined
    if (acceptNow !== undefined) acceptNow(this.key!, body, id, now, (exit) => this.settle(exit))
    else this.steps.runCallback(this.steps.accept(this.key!, body, id, now), { onExit: (exit) => this.settle(exit) })
  }

  private settle(exit: Exit.Exit<Accept.Accepted, Accept.AcceptError>): void {
    try {
      if (Exit.isSuccess(exit)) this.finish(answer(exit.value))
      else this.onCause(exit.cause, ErrorMap.toProblem)
    } catch (defect) {
      this.onDefect(defect)
    }
  }

  /** Answers once (a defect thrown by `done` itself must not answer again). */
  private reply(answer: Answer.Answer | undefined): void {
    if (this.answered) return
    this.answered = true
    if (answer !== undefined) Instrumented.unsafeIngestAnswered(answer)
    this.done(answer)
  }

  private finish(answer: Answer.Answer): void {
    this.reply(answer)
  }

  private refuse(problem: Problem.Problem): void {
    this.finish(Problem.toAnswer(problem))
  }

  private onCause<E>(cause: Cause.Cause<E>, toProblem: (error: E) => Problem.Problem): void {
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some") {
      const error: unknown = failure.value
      if (error instanceof StorageError) this.steps.runCallback(StorageFaultLog.warn(error), { onExit: () => {} })
      return this.refuse(toProblem(failure.value))
    }
    if (Cause.isInterruptedOnly(cause)) return this.reply(undefined)
    this.steps.runCallback(Effect.logError("unexpected error while handling a request", cause), { onExit: () => {} })
    this.finish(Problem.toAnswer(Problem.internal))
  }

  private onDefect(defect: unknown): void {
    this.onCause(Cause.die(defect), identity)
  }
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
 */
export const makeIngest = (options: IngestOptions): Effect.Effect<IngestPipeline, never, IngestServices> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const runCallback = Runtime.runCallback(runtime)
    const authenticate = yield* bearerAuthenticator
    const settledKey = yield* settledAuthenticator
    const crypto = yield* Crypto
    const rate = yield* IngestRate
    const { accept, acceptNow } = yield* Accept.makeAcceptors
    const clock = yield* Effect.clock
    const limit = options.rateLimitPerSecond
    // An event's row id is a version 7 UUID: time-ordered, so the events table's primary key takes
    // each new row at its right edge (docs/decisions.md, "Row ids are time-ordered").
    const cryptoSync = yield* Effect.serviceOption(CryptoSync)
    const uuidAt = cryptoSync._tag === "Some" ? timeOrderedUuidSync(cryptoSync.value) : undefined
    const uuidSync = uuidAt === undefined ? undefined : () => uuidAt(clock.unsafeCurrentTimeMillis())
    const uuid = Effect.suspend(() => timeOrderedUuidWith(crypto, clock.unsafeCurrentTimeMillis()))
    const rateLimited = (waitMillis: number) => ErrorMap.rateLimited(limit, waitMillis)

    const steps: Steps = {
      runCallback,
      authenticate,
      settledKey,
      rate,
      limit,
      clock,
      accept,
      acceptNow,
      uuidSync,
      uuid,
      rateLimited
    }
    const run = (call: IngestCall, done: (answer: Answer.Answer | undefined) => void): void =>
      new IngestRun(steps, call, done).start()

    const pipeline = (request: IngestRequest): Effect.Effect<Answer.Answer> =>
      Effect.async<Answer.Answer>((resume) =>
        run(
          {
            authorization: request.authorization,
            contentType: request.contentType,
            readBody: (done) => runCallback(request.body, { onExit: done })
          },
          (answer) => resume(answer === undefined ? Effect.interrupt : Effect.succeed(answer))
        )
      )
    return Object.assign(pipeline, { run })
  })

/**
 * The ingest route of the platform app.
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
    )
  )

/**
 * The route's handler, bound to the declaration (`api/IngestApi.ts`). Raw: the pipeline reads the
 * body itself (its own size limit and strict parser), and the key is checked by the pipeline's
 * authenticator, the one the `node:http` direct route runs too.
 */
export const group = (options: IngestOptions) =>
  HttpApiBuilder.group(Api.api, "ingest", (handlers) => handlers.handleRaw("ingestEvent", () => handler(options)))
