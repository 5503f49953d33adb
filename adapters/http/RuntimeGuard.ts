/**
 * The guard of the runtime routes (everything under `/api/funnels/v1/runtime/`), which the embedded
 * runtime and the customer's systems call (docs/decisions.md, "Runtime abuse limits"):
 *
 * 1. every request takes a token from its client address's bucket, before anything else is read;
 * 2. a route on a runtime session authenticates it before its body is decoded: from
 *    `Authorization: Bearer` through the declared `RuntimeToken` security (`bearer`), before the
 *    body is read at all; or, where the spec puts the runtime token in the body (prepare, resolve),
 *    from the parsed body's `runtimeToken` before any other field is looked at (`bodyCaller`). No
 *    credential, whatever the fields: 401;
 * 3. the session then takes a token from its own bucket; only then does the route's authority
 *    (403) and its body (400) count.
 *
 * Both buckets are the one token bucket (`core/ingest/IngestRate.ts`), refilled over a minute, in
 * this guard's own instances (one per app). Over either: 429 `runtime_rate_limited` with
 * `Retry-After`.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Schema from "effect/Schema"
import {
  authenticate,
  type RuntimeAuthority,
  type RuntimeSessionRefused,
  requireAuthority
} from "../../core/approval/RuntimeSession.ts"
import { makeMemory } from "../../core/ingest/IngestRate.ts"
import type { Crypto } from "../../core/ports/Crypto.ts"
import type { RuntimeSessionRecord, RuntimeSessionStore } from "../../core/ports/RuntimeSessionStore.ts"
import type { StorageError } from "../../core/ports/StorageError.ts"
import { decodeJson, readJsonValue } from "./Body.ts"
import { tooManyRequests } from "./ErrorMap.ts"
import type * as Problem from "./Problem.ts"

/**
 * The path prefix of every runtime route.
 */
export const runtimeRoutesPrefix = "/api/funnels/v1/runtime/"

/**
 * The rates of the runtime routes, in requests per minute (`ACCORD_RUNTIME_SESSION_RATE_LIMIT`,
 * `ACCORD_RUNTIME_ADDRESS_RATE_LIMIT`); a bucket holds one minute's worth.
 */
export interface RuntimeLimits {
  readonly sessionPerMinute: number
  readonly addressPerMinute: number
}

/**
 * Requests per minute on the runtime routes when none are configured: 120 per session, 600 per
 * client address.
 */
export const defaultRuntimeLimits: RuntimeLimits = { sessionPerMinute: 120, addressPerMinute: 600 }

const minuteMillis = 60_000

/** A request whose session's runtime token is unusable. */
/** Why a runtime credential was refused, or the store could not say. */
export type Unauthenticated = RuntimeSessionRefused | StorageError

/**
 * The checks every runtime route runs, in order: the client address's bucket, the session
 * authenticated before the body is read, the session's bucket.
 */
export interface RuntimeGuard {
  /** Step 1: the client address's token, for a request under `runtimeRoutesPrefix`. */
  readonly admitAddress: Effect.Effect<void, Problem.Problem, HttpServerRequest.HttpServerRequest>
  /** Steps 2 and 3 for a bearer token (the `RuntimeToken` security's implementation). */
  readonly bearer: (
    token: Redacted.Redacted<string>
  ) => Effect.Effect<RuntimeSessionRecord, Unauthenticated | Problem.Problem, RuntimeSessionStore | Crypto>
  /**
   * Steps 2 and 3 for a route whose body carries the runtime token, then the route's authority
   * and the body decoded with `schema`. Bytes that are no JSON document get the edge's answers
   * (415, 413, 400 `malformed_json`, which name no field); a JSON document is authenticated by its
   * `runtimeToken` before any other field is looked at, so without a usable one it is 401 whatever
   * else it holds.
   */
  readonly bodyCaller: <A, I>(
    schema: Schema.Schema<A, I, never>,
    authority: RuntimeAuthority,
    maxBytes: number,
    messages?: Readonly<Record<string, string>>
  ) => Effect.Effect<
    { readonly session: RuntimeSessionRecord; readonly body: A },
    Unauthenticated | Problem.Problem,
    HttpServerRequest.HttpServerRequest | RuntimeSessionStore | Crypto
  >
}

const rateLimited = (what: string, limit: number, waitMillis: number) =>
  tooManyRequests("runtime_rate_limited", `at most ${limit} requests per minute per ${what}`, waitMillis)

/**
 * A guard with buckets of its own.
 */
export const make = (limits: RuntimeLimits = defaultRuntimeLimits): RuntimeGuard => {
  const addresses = makeMemory()
  const sessions = makeMemory()
  const take = (
    buckets: ReturnType<typeof makeMemory>,
    key: string,
    limit: number,
    what: string
  ): Effect.Effect<void, Problem.Problem> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const wait = buckets.consume(key, limit, now, minuteMillis)
      return wait === 0 ? Effect.void : Effect.fail(rateLimited(what, limit, wait))
    })
  const admitSession = (session: RuntimeSessionRecord) =>
    Effect.as(take(sessions, session.sessionId, limits.sessionPerMinute, "runtime session"), session)
  return {
    admitAddress: Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      take(
        addresses,
        Option.getOrElse(request.remoteAddress, () => "unknown"),
        limits.addressPerMinute,
        "client address"
      )
    ),
    bearer: (token) => Effect.flatMap(authenticate(Redacted.value(token), undefined), admitSession),
    bodyCaller: (schema, authority, maxBytes, messages) =>
      Effect.gen(function* () {
        const json = yield* readJsonValue(maxBytes)
        const token =
          typeof json === "object" && json !== null && "runtimeToken" in json ? json.runtimeToken : undefined
        const session = yield* Effect.flatMap(
          authenticate(typeof token === "string" ? token : undefined, undefined),
          admitSession
        )
        yield* requireAuthority(session, authority)
        return { session, body: yield* decodeJson(schema, json, messages) }
      })
  }
}
