/**
 * The server SDK's Direct API client for customer backends (spec direct-api-ingestion.md): sends
 * one event per `POST /api/events/ingest` with the secret ingest key, retries what may succeed
 * later (network failures, time-outs, 429 after its `Retry-After`, 5xx) with bounded exponential
 * backoff and jitter, always with the same `event_id`, and never retries a refusal (other 4xx),
 * which comes back as a typed error carrying the server's problem `code`, `detail` and field
 * `errors`. The key is `Redacted` and never appears in an error.
 *
 * Built on `fetch`, so it runs on Node, Bun and Deno. Not for browsers: the ingest key is secret.
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import {
  failureReason,
  parseJson,
  problemFields,
  retryableStatus,
  retryAfterMillis,
  retrySchedule
} from "./internal/retrying.ts"
import { buildFeatureAccessEvent, type FeatureAccessInput } from "../../core/ingest/FeatureAccess.ts"

export interface DirectApiClientOptions {
  /** The service's base URL, e.g. `https://accord.example.com`. */
  readonly baseUrl: string
  /** A key of scope `ingest` (`SERVICE_INGEST_API_KEY`). */
  readonly apiKey: Redacted.Redacted<string> | string
  /** Attempts in all, the first included (default 5). */
  readonly maxAttempts?: number
  /** First backoff delay (default 250 ms); doubles per attempt. */
  readonly baseDelayMillis?: number
  /** Largest backoff delay and largest honoured `Retry-After` (default 30 s). */
  readonly maxDelayMillis?: number
  /** Time-out of one attempt (default 10 s). */
  readonly timeoutMillis?: number
  /** Defaults to the global `fetch`. */
  readonly fetch?: typeof fetch
}

export interface IngestAccepted {
  /** `accepted` for a new event (202), `duplicate` for a retry of a stored one (200). */
  readonly status: "accepted" | "duplicate"
  readonly eventId: string
  readonly accountId: string
}

/**
 * The service refused the event (a 4xx other than 429); retrying the same event cannot succeed.
 */
export class IngestRejected extends Schema.TaggedError<IngestRejected>()("IngestRejected", {
  status: Schema.Number,
  code: Schema.String,
  detail: Schema.String,
  errors: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
}) {}

/**
 * Every attempt failed with something retryable; the last reason is kept.
 */
export class IngestUnavailable extends Schema.TaggedError<IngestUnavailable>()("IngestUnavailable", {
  attempts: Schema.Number,
  reason: Schema.String
}) {}

export type IngestError = IngestRejected | IngestUnavailable

/**
 * One event as the Direct API takes it (snake_case, see the spec's Event table).
 */
export type IngestEvent = Readonly<Record<string, unknown>> & {
  readonly event_name: string
  readonly account_id: string
}

export interface DirectApiClient {
  /** Sends one event; an event without `event_id` gets a random one so that retries stay idempotent. */
  readonly ingest: (event: IngestEvent) => Effect.Effect<IngestAccepted, IngestError>
  /** Builds the `entitlement_active` event (stable `event_id` from the verified action) and sends it. */
  readonly sendFeatureAccess: (input: FeatureAccessInput) => Effect.Effect<IngestAccepted, IngestError>
  /**
   * One attempt, no retry: for callers with their own pacing (`accord backfill` adapts its
   * concurrency to the answers and honours `Retry-After` itself). An event without `event_id`
   * gets a random one.
   */
  readonly attempt: (event: IngestEvent) => Effect.Effect<IngestAttempt>
}

export class DirectApi extends Context.Tag("@accord/sdk/DirectApi")<DirectApi, DirectApiClient>() {}

/**
 * A retryable outcome of one attempt: `http_429`, `http_503`, `timeout`, `network_error`, with the
 * server's `Retry-After` in milliseconds when it sent one.
 */
export interface Retry {
  readonly _tag: "Retry"
  readonly reason: string
  readonly afterMillis?: number
}

/**
 * What one attempt came to.
 */
export type IngestAttempt =
  | { readonly _tag: "Done"; readonly value: IngestAccepted }
  | { readonly _tag: "Refused"; readonly error: IngestRejected }
  | Retry

type Attempt = IngestAttempt

const problemOf = (json: unknown, status: number): IngestRejected =>
  new IngestRejected(problemFields(json, status, "the service refused the event"))

const randomEventId = Effect.map(
  Effect.sync(() => globalThis.crypto.randomUUID()),
  (id) => `evt_${id}`
)

export const make = (options: DirectApiClientOptions): DirectApiClient => {
  const apiKey = typeof options.apiKey === "string" ? Redacted.make(options.apiKey) : options.apiKey
  const url = new URL("/api/events/ingest", options.baseUrl).href
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5)
  const baseDelay = options.baseDelayMillis ?? 250
  const maxDelay = options.maxDelayMillis ?? 30_000
  const timeout = options.timeoutMillis ?? 10_000
  const doFetch = options.fetch ?? globalThis.fetch
  // The shared backoff; a 429's `Retry-After` may lengthen a wait up to `maxDelay`; `maxAttempts` in all.
  const retryPolicy = retrySchedule<Retry>({ baseDelayMillis: baseDelay, maxDelayMillis: maxDelay, maxAttempts })

  const attempt = (body: string): Effect.Effect<Attempt> =>
    Effect.tryPromise({
      try: async (signal): Promise<Attempt> => {
        const response = await doFetch(url, {
          method: "POST",
          headers: { authorization: `Bearer ${Redacted.value(apiKey)}`, "content-type": "application/json" },
          body,
          redirect: "manual",
          signal: AbortSignal.any([signal, AbortSignal.timeout(timeout)])
        })
        const json = parseJson(await response.text())
        if (response.status === 200 || response.status === 202) {
          const r = (json ?? {}) as Record<string, unknown>
          return {
            _tag: "Done",
            value: {
              status: response.status === 200 ? "duplicate" : "accepted",
              eventId: String(r["event_id"] ?? ""),
              accountId: String(r["account_id"] ?? "")
            }
          }
        }
        if (retryableStatus(response.status)) {
          const after = retryAfterMillis(response.headers.get("retry-after"), Date.now())
          return {
            _tag: "Retry",
            reason: `http_${response.status}`,
            ...(after !== undefined ? { afterMillis: after } : {})
          }
        }
        return { _tag: "Refused", error: problemOf(json, response.status) }
      },
      catch: (error) => error
    }).pipe(Effect.catchAll((error) => Effect.succeed<Attempt>({ _tag: "Retry", reason: failureReason(error) })))

  const withEventId = (event: IngestEvent): Effect.Effect<IngestEvent> =>
    typeof event["event_id"] === "string"
      ? Effect.succeed(event)
      : Effect.map(randomEventId, (event_id) => ({ ...event, event_id }))

  const ingest = (event: IngestEvent): Effect.Effect<IngestAccepted, IngestError> =>
    Effect.gen(function* () {
      const withId = yield* withEventId(event)
      // Serialized once: every retry sends the same bytes, hence the same event_id and payload.
      const body = JSON.stringify(withId)
      const once = Effect.flatMap(attempt(body), (result) =>
        result._tag === "Retry" ? Effect.fail(result) : Effect.succeed(result)
      )
      const result = yield* Effect.retry(once, retryPolicy).pipe(
        Effect.catchAll((last) => new IngestUnavailable({ attempts: maxAttempts, reason: last.reason }))
      )
      if (result._tag === "Refused") return yield* result.error
      return result.value
    })

  return {
    ingest,
    sendFeatureAccess: (input) => ingest(buildFeatureAccessEvent(input) as unknown as IngestEvent),
    attempt: (event) => Effect.flatMap(withEventId(event), (withId) => attempt(JSON.stringify(withId)))
  }
}

export const layer = (options: DirectApiClientOptions): Layer.Layer<DirectApi> =>
  Layer.succeed(DirectApi, make(options))

/**
 * From the environment: `ACCORD_SERVICE_URL` and `SERVICE_INGEST_API_KEY`.
 */
export const layerConfig: Layer.Layer<DirectApi, ConfigError.ConfigError> = Layer.effect(
  DirectApi,
  Effect.map(
    Config.all({ baseUrl: Config.string("ACCORD_SERVICE_URL"), apiKey: Config.redacted("SERVICE_INGEST_API_KEY") }),
    make
  )
)

/**
 * The same client with Promises, for hosts that do not use Effect.
 */
export const makeDirectApiClient = (
  options: DirectApiClientOptions
): {
  readonly ingest: (event: IngestEvent) => Promise<IngestAccepted>
  readonly sendFeatureAccess: (input: FeatureAccessInput) => Promise<IngestAccepted>
} => {
  const client = make(options)
  // Rejects with the typed error itself (`IngestRejected` or `IngestUnavailable`).
  const run = <A>(effect: Effect.Effect<A, IngestError>): Promise<A> =>
    Effect.runPromise(Effect.either(effect)).then((result) =>
      result._tag === "Right" ? result.right : Promise.reject(result.left)
    )
  return {
    ingest: (event) => run(client.ingest(event)),
    sendFeatureAccess: (input) => run(client.sendFeatureAccess(input))
  }
}
