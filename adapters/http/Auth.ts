/**
 * Bearer-key authentication for the admin and ingest routes: `Authorization: Bearer <secret>`,
 * looked up by the SHA-256 of the secret (D9), never by the secret itself.
 *
 * 401 (with `WWW-Authenticate: Bearer`) when the key is missing, malformed, unknown or revoked;
 * 403 when the key is valid but has another scope or belongs to another workspace. The secret is
 * never logged, echoed or put in an error.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type ApiKeyRecord, type ApiKeyScope, ApiKeyStore } from "../../core/ports/ApiKeyStore.ts"
import { Crypto } from "../../core/ports/Crypto.ts"
import { sha256HexWith } from "../../core/protocol/Digest.ts"
import type { StorageError } from "../../core/ports/StorageError.ts"
import * as Problem from "./Problem.ts"

/** A bearer token worth hashing: visible ASCII, bounded, so garbage costs no digest or lookup. */
const tokenPattern = /^[\x21-\x7e]{16,512}$/

/**
 * The secret from an `Authorization` header value, if it is a well-formed Bearer credential.
 *
 * @since 0.1.0
 */
export const parseBearer = (header: string | undefined): Option.Option<Redacted.Redacted<string>> => {
  if (header === undefined) return Option.none()
  const match = /^Bearer +(\S+) *$/i.exec(header)
  const token = match?.[1]
  return token !== undefined && tokenPattern.test(token) ? Option.some(Redacted.make(token)) : Option.none()
}

/**
 * A storage failure during authentication is the server's problem, not the caller's: 503.
 *
 * @since 0.1.0
 */
export const storageUnavailable = (_: StorageError): Problem.Problem =>
  Problem.unavailable("storage_unavailable", "storage is temporarily unavailable")

/**
 * Resolves an `Authorization` header value to the live key it presents, with the key store and
 * crypto already in hand (a route that authenticates every request resolves them once).
 *
 * @since 0.1.0
 */
export const bearerAuthenticator: Effect.Effect<
  (header: string | undefined) => Effect.Effect<ApiKeyRecord, Problem.Problem>,
  never,
  ApiKeyStore | Crypto
> = Effect.gen(function*() {
  const store = yield* ApiKeyStore
  const crypto = yield* Crypto
  const liveKey = (key: Option.Option<ApiKeyRecord>) =>
    Option.isSome(key) && key.value.revokedAt === null
      ? Effect.succeed(key.value)
      : Effect.fail(Problem.unauthorized("the API key is unknown or revoked"))
  return (header) => {
    const secret = parseBearer(header)
    if (Option.isNone(secret)) return Effect.fail(Problem.unauthorized("a valid API key is required (Authorization: Bearer)"))
    return sha256HexWith(crypto, Redacted.value(secret.value)).pipe(
      Effect.flatMap(store.findByHash),
      Effect.mapError(storageUnavailable),
      Effect.flatMap(liveKey)
    )
  }
})

/**
 * The live key presented by the request.
 *
 * @since 0.1.0
 */
export const authenticate: Effect.Effect<
  ApiKeyRecord,
  Problem.Problem,
  HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto
> = Effect.flatMap(
  Effect.zip(bearerAuthenticator, HttpServerRequest.HttpServerRequest),
  ([authenticate, request]) => authenticate(request.headers["authorization"])
)

/**
 * The live key presented by the request, which must have one of `scopes` in `workspaceId`.
 *
 * @since 0.1.0
 */
export const authorizeAny = (options: {
  readonly workspaceId: string
  readonly scopes: ReadonlyArray<ApiKeyScope>
}): Effect.Effect<ApiKeyRecord, Problem.Problem, HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto> =>
  Effect.flatMap(authenticate, (key) => {
    if (key.workspaceId !== options.workspaceId) {
      return Effect.fail(Problem.forbidden("the API key does not belong to this workspace"))
    }
    if (!options.scopes.includes(key.scope)) {
      return Effect.fail(Problem.forbidden(`this route needs a key with scope ${options.scopes.join(" or ")}`))
    }
    return Effect.succeed(key)
  })

/**
 * The live key presented by the request, which must have `scope` in `workspaceId`.
 *
 * @since 0.1.0
 */
export const authorize = (options: {
  readonly workspaceId: string
  readonly scope: ApiKeyScope
}): Effect.Effect<ApiKeyRecord, Problem.Problem, HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto> =>
  authorizeAny({ workspaceId: options.workspaceId, scopes: [options.scope] })

/**
 * For a route under `/workspaces/:workspaceId`: the path's workspace, once the request's key is
 * authorized there with one of `scopes`.
 *
 * @since 0.1.0
 */
export const authorizeWorkspace = (
  scopes: ReadonlyArray<ApiKeyScope>
): Effect.Effect<
  string,
  Problem.Problem,
  HttpRouter.RouteContext | HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto
> =>
  Effect.flatMap(HttpRouter.params, (params) => {
    const workspaceId = params["workspaceId"] ?? ""
    return Effect.as(authorizeAny({ workspaceId, scopes }), workspaceId)
  })
