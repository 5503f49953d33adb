/**
 * The server SDK's Direct API client for customer backends (spec direct-api-ingestion.md): sends
 * one event per `POST /api/events/ingest` with the secret ingest key, retries what may succeed
 * later (network failures, time-outs, 429 and 503 after their `Retry-After`, 5xx) with bounded exponential
 * backoff and jitter, always with the same `event_id`, and never retries a refusal (other 4xx),
 * which comes back as a typed error carrying the server's problem `code`, `detail` and field
 * `errors`. The key is `Redacted` and never appears in an error.
 *
 * Built on `HttpApiClient` over the served declaration (`adapters/http/api/IngestApi.ts`, through
 * `internal/declared.ts`) and `fetch`, so it runs on Node, Bun and Deno. Not for browsers: the ingest
 * key is secret.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { buildFeatureAccessEvent, type FeatureAccessInput } from "../../core/ingest/FeatureAccess.ts"
import { ingestEvent } from "../http/api/IngestApi.ts"
import { type Attempt, type Retry, runTyped, sentAsGiven, transport } from "./internal/declared.ts"
import { retrySchedule } from "./internal/retrying.ts"

/**
 * The served endpoint this client calls.
 */
const declaration = HttpApi.make("directApi").add(HttpApiGroup.make("ingest").add(sentAsGiven(ingestEvent)))

/**
 * Where and how the Direct API client sends events: the service URL, the ingest key and retry
 * settings.
 */
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

/**
 * The service's answer to an ingested event: new, duplicate or suppressed, with the event's
 * `event_id` and account.
 */
export interface IngestAccepted {
  /**
   * `accepted` for a new event (202), `duplicate` for a retry of a stored one (200), `suppressed`
   * for an event of an erased account or user, not stored (202; not to be retried).
   */
  readonly status: "accepted" | "duplicate" | "suppressed"
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
  reason: Schema.String,
  /** The last answer's `Retry-After` in milliseconds, when it had one: when to try again. */
  retryAfterMillis: Schema.optional(Schema.Number)
}) {}

/**
 * Why an event was not ingested: refused by the service, or the service unavailable after the
 * retries.
 */
export type IngestError = IngestRejected | IngestUnavailable

/**
 * One event as the Direct API takes it (snake_case, see the spec's Event table).
 */
export type IngestEvent = Readonly<Record<string, unknown>> & {
  readonly event_name: string
  readonly account_id: string
}

/** Sends Direct API events, one per request with the ingest key, retrying what may be retried. */
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

/** The service tag of a `DirectApiClient`, for Effect programs. */
export class DirectApi extends Context.Tag("@accord/sdk/DirectApi")<DirectApi, DirectApiClient>() {}

export type { Retry } from "./internal/declared.ts"

/**
 * What one attempt came to.
 */
export type IngestAttempt =
  | { readonly _tag: "Done"; readonly value: IngestAccepted }
  | { readonly _tag: "Refused"; readonly error: IngestRejected }
  | Retry

const problemOf = (attempt: Extract<Attempt<unknown>, { readonly _tag: "Refused" }>): IngestRejected =>
  new IngestRejected(attempt.problem)

const randomEventId = Effect.map(
  Effect.sync(() => globalThis.crypto.randomUUID()),
  (id) => `evt_${id}`
)

/** A Direct API client for `options`; the ingest key is kept `Redacted`. */
export const make = (options: DirectApiClientOptions): DirectApiClient => {
  const apiKey = typeof options.apiKey === "string" ? Redacted.make(options.apiKey) : options.apiKey
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5)
  const maxDelay = options.maxDelayMillis ?? 30_000
  // The shared backoff; a `Retry-After` (429, 503) sets the wait instead, up to `maxDelay`; `maxAttempts` in all.
  const retryPolicy = retrySchedule<Retry>({
    baseDelayMillis: options.baseDelayMillis ?? 250,
    maxDelayMillis: maxDelay,
    maxAttempts
  })
  const { httpClient, attempt: once } = transport({
    credential: apiKey,
    acceptJson: false,
    timeoutMillis: options.timeoutMillis ?? 10_000,
    fetch: options.fetch,
    fallbackDetail: () => "the service refused the event"
  })
  // The route is at the service's root, whatever path the base URL has.
  const client = Effect.runSync(
    HttpApiClient.group(declaration, { group: "ingest", httpClient, baseUrl: new URL(options.baseUrl).origin })
  )

  const attempt = (event: IngestEvent): Effect.Effect<IngestAttempt> =>
    Effect.map(
      once(client.ingestEvent({ payload: event, withResponse: true })),
      (result): IngestAttempt =>
        result._tag === "Done"
          ? {
              _tag: "Done",
              value: {
                status: result.value.status,
                eventId: result.value.event_id ?? "",
                accountId: result.value.account_id
              }
            }
          : result._tag === "Refused"
            ? { _tag: "Refused", error: problemOf(result) }
            : result
    )

  const withEventId = (event: IngestEvent): Effect.Effect<IngestEvent> =>
    typeof event["event_id"] === "string"
      ? Effect.succeed(event)
      : Effect.map(randomEventId, (event_id) => ({ ...event, event_id }))

  const ingest = (event: IngestEvent): Effect.Effect<IngestAccepted, IngestError> =>
    Effect.gen(function* () {
      const withId = yield* withEventId(event)
      // Every retry sends the same event, hence the same event_id and bytes.
      const retried: Effect.Effect<Exclude<IngestAttempt, Retry>, Retry> = Effect.flatMap(attempt(withId), (result) =>
        result._tag === "Retry" ? Effect.fail(result) : Effect.succeed(result)
      )
      const result = yield* Effect.retry(retried, retryPolicy).pipe(
        Effect.catchAll(
          (last) =>
            new IngestUnavailable({
              attempts: maxAttempts,
              reason: last.reason,
              ...(last.afterMillis !== undefined ? { retryAfterMillis: last.afterMillis } : {})
            })
        )
      )
      if (result._tag === "Refused") return yield* result.error
      return result.value
    })

  return {
    ingest,
    sendFeatureAccess: (input) => ingest(buildFeatureAccessEvent(input) as unknown as IngestEvent),
    attempt: (event) => Effect.flatMap(withEventId(event), attempt)
  }
}

/** Provides `DirectApi` with a client made from `options`. */
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
  /**
   * Sends one event; an event without `event_id` gets a random one so that retries stay idempotent.
   */
  readonly ingest: (event: IngestEvent) => Promise<IngestAccepted>
  /** Sends the `entitlement_active` event that records an account's access to a feature. */
  readonly sendFeatureAccess: (input: FeatureAccessInput) => Promise<IngestAccepted>
} => {
  const client = make(options)
  return {
    ingest: (event) => runTyped(client.ingest(event)),
    sendFeatureAccess: (input) => runTyped(client.sendFeatureAccess(input))
  }
}
