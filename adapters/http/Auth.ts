/**
 * Bearer-key authentication for the admin and ingest routes: `Authorization: Bearer <secret>`,
 * looked up by the SHA-256 of the secret (keys are stored only as hashes), never by the secret
 * itself.
 *
 * 401 (with `WWW-Authenticate: Bearer`) when the key is missing, malformed, unknown or revoked;
 * 403 when the key is valid but has another scope or belongs to another workspace. The secret is
 * never logged, echoed or put in an error.
 *
 * The admin routes have one guard, `guarded(scopes)`: every route under
 * `/api/admin/v1/workspaces/{workspaceId}` states which scopes it accepts, and its handler runs with
 * the path's workspace only once the key is authorized there.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type ApiKeyRecord, type ApiKeyScope, ApiKeyStore } from "../../core/ports/ApiKeyStore.ts"
import { Crypto, CryptoSync } from "../../core/ports/Crypto.ts"
import { sha256HexWith } from "../../core/protocol/Digest.ts"
import { canonicalUuid } from "../../core/protocol/Uuid.ts"
import * as ErrorMap from "./ErrorMap.ts"
import * as StorageFaultLog from "../telemetry/StorageFaultLog.ts"
import * as Problem from "./Problem.ts"

/** A bearer token worth hashing: visible ASCII, bounded, so garbage costs no digest or lookup. */
const tokenPattern = /^[\x21-\x7e]{16,512}$/

/**
 * The secret from an `Authorization` header value, if it is a well-formed Bearer credential.
 */
export const parseBearer = (header: string | undefined): Option.Option<Redacted.Redacted<string>> => {
  const token = bearerToken(header)
  return token !== undefined ? Option.some(Redacted.make(token)) : Option.none()
}

const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const token = /^Bearer +(\S+) *$/i.exec(header)?.[1]
  return token !== undefined && tokenPattern.test(token) ? token : undefined
}

/**
 * Resolves an `Authorization` header value to the live key it presents, with the key store and
 * crypto already in hand (a route that authenticates every request resolves them once).
 */
export const bearerAuthenticator: Effect.Effect<
  (header: string | undefined) => Effect.Effect<ApiKeyRecord, Problem.Problem>,
  never,
  ApiKeyStore | Crypto
> = Effect.gen(function* () {
  const store = yield* ApiKeyStore
  const crypto = yield* Crypto
  const liveKey = (key: Option.Option<ApiKeyRecord>) =>
    Option.isSome(key) && key.value.revokedAt === null
      ? Effect.succeed(key.value)
      : Effect.fail(Problem.unauthorized("the API key is unknown or revoked"))
  return (header) => {
    const secret = parseBearer(header)
    if (Option.isNone(secret)) return Effect.fail(noBearerKey())
    return sha256HexWith(crypto, Redacted.value(secret.value)).pipe(
      Effect.flatMap(store.findByHash),
      Effect.tapError(StorageFaultLog.warn),
      Effect.mapError(ErrorMap.storageUnavailable),
      Effect.flatMap(liveKey)
    )
  }
})

const noBearerKey = () => Problem.unauthorized("a valid API key is required (Authorization: Bearer)")

/**
 * What `bearerAuthenticator` would answer, when that needs no waiting: a header without a
 * well-formed Bearer credential (401), or a live key in the store's lookup cache (with a
 * synchronous digest). `undefined` otherwise: then run `bearerAuthenticator`.
 */
export const settledAuthenticator: Effect.Effect<
  (header: string | undefined, now: number) => Either.Either<ApiKeyRecord, Problem.Problem> | undefined,
  never,
  ApiKeyStore | Crypto
> = Effect.gen(function* () {
  const store = yield* ApiKeyStore
  const hashSync = Option.getOrUndefined(yield* Effect.serviceOption(CryptoSync))?.sha256Hex
  return (header, now) => {
    const token = bearerToken(header)
    if (token === undefined) return Either.left(noBearerKey())
    if (hashSync === undefined) return undefined
    const key = store.findCached(hashSync(token), now)
    return key === undefined || key.revokedAt !== null ? undefined : Either.right(key)
  }
})

/**
 * The live key presented by the request.
 */
export const authenticate: Effect.Effect<
  ApiKeyRecord,
  Problem.Problem,
  HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto
> = Effect.flatMap(Effect.zip(bearerAuthenticator, HttpServerRequest.HttpServerRequest), ([authenticate, request]) =>
  authenticate(request.headers["authorization"])
)

/**
 * Which keys may use an admin route: `admin` keys only, or also `developer:read` keys (the reads
 * of the Events view, account profiles, feature gates and the connector).
 */
export type AdminScopes = ReadonlyArray<ApiKeyScope>

export const adminOnly: AdminScopes = ["admin"]

/**
 * 403 for a live key of the right workspace whose scope is not among the route's `scopes`.
 */
export const scopeRefused = (scopes: ReadonlyArray<ApiKeyScope>): Problem.Problem =>
  Problem.forbidden(`this route needs a key with scope ${scopes.join(" or ")}`)

export const adminOrDeveloper: AdminScopes = ["admin", "developer:read"]

/**
 * The one scope rule of every keyed route (the admin guard and the ingest route): 403 for a live
 * key whose scope is not among `scopes`, else `undefined`.
 */
export const scopeProblem = (key: ApiKeyRecord, scopes: ReadonlyArray<ApiKeyScope>): Problem.Problem | undefined =>
  scopes.includes(key.scope) ? undefined : scopeRefused(scopes)

/**
 * The one admin guard. For a route under `/workspaces/:workspaceId`: the path's workspace, once
 * the request's key is live (401), belongs to that workspace (403) and has one of `scopes` (403).
 */
export const authorizeWorkspaceKey = (
  scopes: AdminScopes
): Effect.Effect<
  { readonly workspaceId: string; readonly key: ApiKeyRecord },
  Problem.Problem,
  HttpRouter.RouteContext | HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto
> =>
  Effect.flatMap(HttpRouter.params, (params) => {
    // A workspace id in any case names the workspace (`Uuid`); anything else names none.
    const given = params["workspaceId"] ?? ""
    const workspaceId = Option.getOrElse(canonicalUuid(given), () => given)
    return Effect.flatMap(authenticate, (key) => {
      if (key.workspaceId !== workspaceId) {
        return Effect.fail(Problem.forbidden("the API key does not belong to this workspace"))
      }
      const refused = scopeProblem(key, scopes)
      return refused === undefined ? Effect.succeed({ workspaceId, key }) : Effect.fail(refused)
    })
  })

/**
 * `authorizeWorkspaceKey`, answering the workspace only.
 */
export const authorizeWorkspace = (scopes: AdminScopes) =>
  Effect.map(authorizeWorkspaceKey(scopes), ({ workspaceId }) => workspaceId)

/**
 * An admin route's handler behind the guard: it runs, with the authorized workspace, only once
 * `authorizeWorkspace(scopes)` has passed.
 */
export const guarded =
  (scopes: AdminScopes) =>
  <A, E, R>(
    handler: (workspaceId: string) => Effect.Effect<A, E, R>
  ): Effect.Effect<
    A,
    E | Problem.Problem,
    R | HttpRouter.RouteContext | HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto
  > =>
    Effect.flatMap(authorizeWorkspace(scopes), handler)

/**
 * `guarded`, with the key that passed the guard (for routes that record who acted).
 */
export const guardedAs =
  (scopes: AdminScopes) =>
  <A, E, R>(
    handler: (workspaceId: string, key: ApiKeyRecord) => Effect.Effect<A, E, R>
  ): Effect.Effect<
    A,
    E | Problem.Problem,
    R | HttpRouter.RouteContext | HttpServerRequest.HttpServerRequest | ApiKeyStore | Crypto
  > =>
    Effect.flatMap(authorizeWorkspaceKey(scopes), ({ key, workspaceId }) => handler(workspaceId, key))
