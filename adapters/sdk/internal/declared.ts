/**
 * How the SDK's clients reach the service: `HttpApiClient` over the endpoints the server serves
 * (`adapters/http/api/`), so a call's method, path, path parameters and headers, and the decoding of
 * its success, come from the same declaration as the routes and `/openapi.json`.
 *
 * One call is one attempt, and it ends as one `Attempt`: done (the declared success and the
 * response; a 304 too, which only a conditional read gets), refused (any other 4xx than 408 and 429, read as a problem document, never retried), or
 * retryable (network failure, time-out, 408, 429 with its `Retry-After`, 5xx).
 *
 * A request body is sent as the caller gave it, serialized once by `JSON.stringify`: the service is
 * its one validator, so a malformed body earns the service's own 400 with its field errors, and an
 * SDK older than the service never refuses what the service takes.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { retryAfterMillis } from "../../../core/protocol/Backoff.ts"
import { parseJson, problemFields, retryableStatus } from "./retrying.ts"

/**
 * The endpoint as the SDK calls it: the declared method, path, headers and successes, with the
 * body passed through unchecked (see the module comment).
 */
export const sentAsGiven = <
  Name extends string,
  Method extends "POST",
  Path,
  UrlParams,
  Headers,
  Success,
  Error,
  R,
  RE
>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, any, Headers, Success, Error, R, RE>
): HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, unknown, Headers, Success, Error, R, RE> =>
  (endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps).setPayload(Schema.Unknown) as never

/**
 * A retryable outcome: `http_<status>`, `timeout`, `network_error` or `unexpected_answer` (a 2xx
 * whose body or status the declaration does not name), with the server's `Retry-After` in
 * milliseconds when it sent one.
 */
export interface Retry {
  readonly _tag: "Retry"
  readonly reason: string
  readonly afterMillis?: number
}

export type Refusal = ReturnType<typeof problemFields>

export type Attempt<A> =
  | { readonly _tag: "Done"; readonly value: A; readonly response: HttpClientResponse.HttpClientResponse }
  | { readonly _tag: "Refused"; readonly problem: Refusal }
  | Retry

/** A non-2xx answer, read before the declaration's decoder sees it. */
class Answered extends Data.TaggedError("Answered")<{
  readonly status: number
  readonly retryAfter: string | undefined
  readonly json: unknown
}> {}

class TimedOut extends Data.TaggedError("TimedOut") {}

/**
 * The transport of one client: fetch (the caller's or the global one, redirects not followed), the
 * bearer credential and, with `acceptJson`, `Accept: application/json`; no trace headers.
 */
export const transport = (options: {
  readonly credential: Redacted.Redacted<string>
  readonly acceptJson: boolean
  readonly timeoutMillis: number
  readonly fetch?: typeof fetch | undefined
  /** The detail of a refusal whose body is no problem document. */
  readonly fallbackDetail: (status: number) => string
}) => {
  const base = Effect.runSync(Effect.provide(HttpClient.HttpClient, FetchHttpClient.layer))
  const httpClient = base.pipe(
    HttpClient.mapRequest((request) => {
      const withKey = HttpClientRequest.bearerToken(request, options.credential)
      return options.acceptJson ? HttpClientRequest.acceptJson(withKey) : withKey
    }),
    HttpClient.transformResponse((effect) =>
      Effect.flatMap(effect, (response) =>
        // A 304 answers a conditional read the endpoint declares (the runtime status): a success.
        (response.status >= 200 && response.status < 300) || response.status === 304
          ? Effect.succeed(response)
          : Effect.flatMap(response.text, (text) =>
              Effect.fail(
                new Answered({
                  status: response.status,
                  retryAfter: response.headers["retry-after"],
                  json: parseJson(text)
                })
              )
            )
      )
    ),
    HttpClient.withTracerPropagation(false)
  )
  const timeout = Duration.millis(options.timeoutMillis)
  const doFetch = options.fetch ?? globalThis.fetch

  /** One call of a declared endpoint (`withResponse: true`) as its `Attempt`. */
  const attempt = <A>(
    call: Effect.Effect<readonly [A, HttpClientResponse.HttpClientResponse], unknown>
  ): Effect.Effect<Attempt<A>> =>
    call.pipe(
      Effect.timeoutFail({ duration: timeout, onTimeout: () => new TimedOut() }),
      Effect.provideService(FetchHttpClient.Fetch, doFetch),
      Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }),
      Effect.map(([value, response]): Attempt<A> => ({ _tag: "Done", value, response })),
      Effect.catchAll((error) => Effect.succeed(outcome(error)))
    )

  const outcome = (error: unknown): Attempt<never> => {
    if (error instanceof Answered) {
      if (!retryableStatus(error.status))
        return {
          _tag: "Refused",
          problem: problemFields(error.json, error.status, options.fallbackDetail(error.status))
        }
      const after = retryAfterMillis(error.retryAfter, Date.now())
      return { _tag: "Retry", reason: `http_${error.status}`, ...(after !== undefined ? { afterMillis: after } : {}) }
    }
    if (error instanceof TimedOut) return { _tag: "Retry", reason: "timeout" }
    // A 2xx the declaration does not describe: the request may have been taken, and a retry of
    // the same request is safe (same key, same event id), so it is retryable like a lost answer.
    if (ParseResult.isParseError(error) || (error as { reason?: unknown })?.reason === "Decode")
      return { _tag: "Retry", reason: "unexpected_answer" }
    return { _tag: "Retry", reason: "network_error" }
  }

  return { httpClient, attempt }
}

/**
 * Runs a client's effect for the Promise form of the SDK: resolves with its value, or rejects with
 * the typed error itself (never a wrapped `FiberFailure`), so `catch` sees the error's `_tag`.
 */
export const runTyped = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(Effect.either(effect)).then((result) =>
    result._tag === "Right" ? result.right : Promise.reject(result.left)
  )
