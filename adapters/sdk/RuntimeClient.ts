/**
 * The runtime SDK's status client, for the embedded runtime of one end user: it reads an action's
 * status with the runtime session token (`GET /api/funnels/v1/runtime/actions/status/{id}`) and
 * polls it until the action is final, as the service asks.
 *
 * Every read after the first is conditional (`If-None-Match` with the last `ETag`), so while
 * nothing changed the service answers 304 without a body; the next read waits the `Retry-After`
 * the service sent (jittered, never less: `Backoff.hintedDelay`), and the service stops sending it
 * once the action is final, which is when polling stops. With `waitSeconds`, a conditional read
 * also asks the service to hold it until the action changes (`Prefer: wait=N`), so a waiting
 * runtime makes one request per change instead of one per pause. A failure that may pass
 * (network, time-out, 408, 429, 5xx) is retried with the shared backoff; a refusal (401, 404, …)
 * ends the read with `RuntimeRefused`.
 *
 * Built on `HttpApiClient` over the served declaration (`adapters/http/api/ApprovalsApi.ts`) and
 * `fetch`, so it runs in browsers, Node, Bun and Deno. The token is `Redacted` and never appears in
 * an error.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Backoff from "../../core/protocol/Backoff.ts"
import { actionStatus } from "../http/api/ApprovalsApi.ts"
import { type Attempt, type Retry, runTyped, transport } from "./internal/declared.ts"
import { retrySchedule } from "./internal/retrying.ts"

const declaration = HttpApi.make("runtimeStatus").add(HttpApiGroup.make("runtime").add(actionStatus))

/** Where and how the runtime client calls the service. */
export interface RuntimeClientOptions {
  /** The service's base URL, e.g. `https://accord.example.com`. */
  readonly serviceUrl: string
  /** The end user's runtime session token (`acc_rts_…`). */
  readonly runtimeToken: Redacted.Redacted<string> | string
  /**
   * With a conditional read, ask the service to hold it until the action changes, at most this many
   * seconds (`Prefer: wait=N`; the service caps it). Default 0: plain polling.
   */
  readonly waitSeconds?: number
  /** Attempts of one read in all, for failures that may pass (default 5). */
  readonly maxAttempts?: number
  /** First backoff delay after such a failure (default 250 ms); doubles per attempt. */
  readonly baseDelayMillis?: number
  /** Largest wait between reads, hinted or not (default 60 s). */
  readonly maxDelayMillis?: number
  /** Time-out of one attempt (default 10 s, plus `waitSeconds`). */
  readonly timeoutMillis?: number
  /** Defaults to the global `fetch`. */
  readonly fetch?: typeof fetch
}

/** What the runtime may see of its action: its state, whether the journey may advance, a continuation. */
export interface RuntimeActionStatus {
  readonly actionRequestId: string
  readonly state: string
  readonly mayAdvance: boolean
  readonly continuation?: unknown
}

/**
 * One read: the status (the last one seen when the service answered 304), its `ETag`, when to
 * read again (`undefined` once final) and whether it changed since the read it was conditional on.
 */
export interface StatusRead {
  readonly status: RuntimeActionStatus
  readonly etag: string | undefined
  readonly pollAfterMillis: number | undefined
  readonly changed: boolean
}

/** The service refused the read (401, 403, 404, …); retrying it cannot succeed. */
export class RuntimeRefused extends Schema.TaggedError<RuntimeRefused>()("RuntimeRefused", {
  status: Schema.Number,
  code: Schema.String,
  detail: Schema.String
}) {}

/** Every attempt of a read failed with something that may pass; the last reason is kept. */
export class RuntimeUnavailable extends Schema.TaggedError<RuntimeUnavailable>()("RuntimeUnavailable", {
  attempts: Schema.Number,
  reason: Schema.String
}) {}

/** Why a read failed. */
export type RuntimeClientError = RuntimeRefused | RuntimeUnavailable

/** Reads an action's status, conditionally, and polls it until final. */
export interface RuntimeClient {
  /**
   * One read of the status; conditional on `previous` (its `ETag`), whose status it answers again
   * when the service says nothing changed.
   */
  readonly read: (actionRequestId: string, previous?: StatusRead) => Effect.Effect<StatusRead, RuntimeClientError>
  /**
   * Reads until the action is final (the service sends no `Retry-After`), waiting between reads
   * what the service asks; `onChange` sees every status that differs from the one before.
   */
  readonly untilFinal: (
    actionRequestId: string,
    onChange?: (status: RuntimeActionStatus) => void
  ) => Effect.Effect<RuntimeActionStatus, RuntimeClientError>
}

/** A runtime client for `options`; the token is kept `Redacted`. */
export const make = (options: RuntimeClientOptions): RuntimeClient => {
  const token = typeof options.runtimeToken === "string" ? Redacted.make(options.runtimeToken) : options.runtimeToken
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5)
  const backoff = { baseMillis: options.baseDelayMillis ?? 250, capMillis: options.maxDelayMillis ?? 60_000 }
  const waitSeconds = Math.max(0, Math.floor(options.waitSeconds ?? 0))
  const retryPolicy = retrySchedule<Retry>({
    baseDelayMillis: backoff.baseMillis,
    maxDelayMillis: backoff.capMillis,
    maxAttempts
  })
  const { attempt, httpClient } = transport({
    credential: token,
    acceptJson: true,
    timeoutMillis: (options.timeoutMillis ?? 10_000) + waitSeconds * 1000,
    fetch: options.fetch,
    fallbackDetail: (status) => `the service answered ${status}`
  })
  const client = Effect.runSync(
    HttpApiClient.group(declaration, {
      group: "runtime",
      httpClient,
      baseUrl: options.serviceUrl.replace(/\/+$/, "")
    })
  )

  const once = (actionRequestId: string, etag: string | undefined) =>
    Effect.flatMap(
      attempt(
        client.runtimeActionStatus({
          path: { actionRequestId: encodeURIComponent(actionRequestId) },
          headers:
            etag === undefined
              ? {}
              : { "if-none-match": etag, ...(waitSeconds > 0 ? { prefer: `wait=${waitSeconds}` } : {}) },
          withResponse: true
        })
      ),
      (result): Effect.Effect<Exclude<Attempt<unknown>, Retry>, Retry> =>
        result._tag === "Retry" ? Effect.fail(result) : Effect.succeed(result)
    )

  const read = (actionRequestId: string, previous?: StatusRead): Effect.Effect<StatusRead, RuntimeClientError> =>
    Effect.retry(once(actionRequestId, previous?.etag), retryPolicy).pipe(
      Effect.catchAll((last) => Effect.fail(new RuntimeUnavailable({ attempts: maxAttempts, reason: last.reason }))),
      Effect.flatMap((result) => {
        if (result._tag === "Refused") {
          const { code, detail, status } = result.problem
          return Effect.fail(new RuntimeRefused({ status, code, detail }))
        }
        const headers = result.response.headers
        const pollAfterMillis = Backoff.retryAfterMillis(headers["retry-after"], Date.now())
        const notModified = result.response.status === 304 && previous !== undefined
        return Effect.succeed({
          status: notModified ? previous.status : (result.value as RuntimeActionStatus),
          etag: headers["etag"] ?? previous?.etag,
          pollAfterMillis,
          changed: !notModified
        })
      })
    )

  const untilFinal = (
    actionRequestId: string,
    onChange?: (status: RuntimeActionStatus) => void
  ): Effect.Effect<RuntimeActionStatus, RuntimeClientError> =>
    Effect.gen(function* () {
      let current = yield* read(actionRequestId)
      onChange?.(current.status)
      while (current.pollAfterMillis !== undefined) {
        // The service's hint, jittered so that runtimes that read together do not stay in step.
        yield* Effect.sleep(Backoff.hintedDelay(backoff, current.pollAfterMillis, yield* Random.next))
        current = yield* read(actionRequestId, current)
        if (current.changed) onChange?.(current.status)
      }
      return current.status
    })

  return { read, untilFinal }
}

/**
 * The same client with Promises, for runtimes that do not use Effect. Rejects with the typed error
 * itself (`RuntimeRefused` or `RuntimeUnavailable`).
 */
export const makeRuntimeClient = (
  options: RuntimeClientOptions
): {
  /** One read of the status, conditional on `previous`. */
  readonly read: (actionRequestId: string, previous?: StatusRead) => Promise<StatusRead>
  /** Reads until the action is final, waiting between reads what the service asks. */
  readonly untilFinal: (
    actionRequestId: string,
    onChange?: (status: RuntimeActionStatus) => void
  ) => Promise<RuntimeActionStatus>
} => {
  const client = make(options)
  return {
    read: (actionRequestId, previous) => runTyped(client.read(actionRequestId, previous)),
    untilFinal: (actionRequestId, onChange) => runTyped(client.untilFinal(actionRequestId, onChange))
  }
}
