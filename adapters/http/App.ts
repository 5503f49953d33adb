/**
 * The Accord HTTP app, platform-agnostic: the same `HttpApp` is served by Node, Bun and Deno.
 *
 * Routes: `GET /healthz` (the process is up), `GET /readyz` (storage reachable and migrated), and
 * the workspace administrator's API-key routes under `/api/admin/v1/workspaces/{workspaceId}`
 * (DESIGN "HTTP surface"). Every error is a problem document (D8); an unexpected one is a 500 whose
 * cause goes to the log, never to the client. Each request is logged with its method, path, status
 * and duration only: no headers, query strings or bodies, which is where secrets travel.
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { type ApiKeyRecord, ApiKeyScope, ApiKeyStore } from "../../core/ports/ApiKeyStore.ts"
import { issue } from "../../core/access/ApiKeys.ts"
import type { CompletionServices } from "../../core/connector/CompletionIntake.ts"
import type { Crypto } from "../../core/ports/Crypto.ts"
import { formatTimestamp } from "../../core/protocol/Timestamp.ts"
import * as Actions from "./routes/ActionRequests.ts"
import { authorize, storageUnavailable } from "./Auth.ts"
import { readJson } from "./Body.ts"
import * as Completion from "./routes/Completion.ts"
import * as Connector from "./routes/Connector.ts"
import { Drain } from "./Drain.ts"
import * as Ingest from "./routes/Ingest.ts"
import * as Insights from "./routes/Insights.ts"
import * as Paths from "./Paths.ts"
import * as Problem from "./Problem.ts"
import { Readiness } from "./Readiness.ts"
import { withRequestLog } from "./RequestLog.ts"
import { jsonResponse as json } from "./Answer.ts"

/**
 * @since 0.1.0
 */
export interface AppOptions extends Ingest.IngestOptions, Connector.ConnectorRouteOptions {
  /** Largest accepted request body (`ACCORD_MAX_BODY_BYTES`). */
  readonly maxBodyBytes: number
}

/**
 * The services the app runs on; storage provides `ApiKeyStore` and `Readiness`.
 *
 * @since 0.1.0
 */
export type AppServices =
  | ApiKeyStore
  | Readiness
  | Crypto
  | Drain
  | Ingest.IngestServices
  | Insights.InsightsServices
  | Actions.ActionsServices
  | CompletionServices
  | Connector.ConnectorServices

/**
 * Prefix of the workspace administrator routes.
 *
 * @since 0.1.0
 */
export const adminPrefix: typeof Paths.adminPrefix = Paths.adminPrefix

/** `POST /api-keys` body. */
const CreateApiKeyBody = Schema.Struct({
  scope: ApiKeyScope,
  name: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)), { exact: true })
})

/** Fixed wording for its field errors, so that none can echo a received value. */
const createApiKeyMessages = {
  "": "must be a JSON object",
  scope: "must be one of ingest, developer:read, admin",
  name: "must be a string of 1 to 200 characters"
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i


const keyView = (key: ApiKeyRecord) => ({
  id: key.id,
  scope: key.scope,
  name: key.name,
  createdAt: formatTimestamp(key.createdAt),
  revokedAt: key.revokedAt === null ? null : formatTimestamp(key.revokedAt)
})

const workspaceParam = Effect.map(HttpRouter.params, (params) => params["workspaceId"] ?? "")

const asAdmin = Effect.flatMap(workspaceParam, (workspaceId) =>
  Effect.as(authorize({ workspaceId, scope: "admin" }), workspaceId))

const healthz = Effect.succeed(json({ status: "ok" }))

const readyz = Effect.gen(function*() {
  if (yield* (yield* Drain).draining) {
    return Problem.toResponse(Problem.unavailable("shutting_down", "the server is shutting down"))
  }
  return yield* (yield* Readiness).check.pipe(
    Effect.as(json({ status: "ready" })),
    Effect.catchAll(() =>
      Effect.succeed(
        Problem.toResponse(Problem.unavailable("not_ready", "storage is not reachable or not migrated"))
      )
    )
  )
})

const createApiKey = (options: AppOptions) =>
  Effect.gen(function*() {
    const workspaceId = yield* asAdmin
    const body = yield* readJson(CreateApiKeyBody, options.maxBodyBytes, createApiKeyMessages)
    const { record, secret } = yield* issue({ workspaceId, scope: body.scope, name: body.name ?? null }).pipe(
      Effect.mapError(storageUnavailable)
    )
    const { createdAt, id, name, scope } = keyView(record)
    return json({ id, scope, name, secret: Redacted.value(secret), createdAt }, 201)
  })

const listApiKeys = Effect.gen(function*() {
  const workspaceId = yield* asAdmin
  const keys = yield* (yield* ApiKeyStore).list(workspaceId).pipe(Effect.mapError(storageUnavailable))
  return json({ data: keys.map(keyView), nextCursor: null })
})

const revokeApiKey = Effect.gen(function*() {
  const workspaceId = yield* asAdmin
  const id = (yield* HttpRouter.params)["id"] ?? ""
  const store = yield* ApiKeyStore
  const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
  const revoked = uuidPattern.test(id) &&
    (yield* store.revoke(workspaceId, id.toLowerCase(), now).pipe(Effect.mapError(storageUnavailable)))
  if (!revoked) return yield* Problem.notFound("no such live API key in this workspace")
  return HttpServerResponse.empty({ status: 204 })
})

/**
 * The routes. Fails with `Problem` (and `RouteNotFound`); `make` turns those into responses.
 *
 * @since 0.1.0
 */
export const router = (
  options: AppOptions
): HttpRouter.HttpRouter<Problem.Problem, AppServices> =>
  HttpRouter.empty.pipe(
    HttpRouter.get("/healthz", healthz),
    HttpRouter.get("/readyz", readyz),
    HttpRouter.post(`${adminPrefix}/:workspaceId/api-keys`, createApiKey(options)),
    HttpRouter.get(`${adminPrefix}/:workspaceId/api-keys`, listApiKeys),
    HttpRouter.del(`${adminPrefix}/:workspaceId/api-keys/:id`, revokeApiKey),
    HttpRouter.post(Ingest.ingestPath, Ingest.handler(options)),
    Insights.routes(options.maxBodyBytes),
    Actions.routes(options.maxBodyBytes),
    HttpRouter.post(Completion.completionPath, Effect.flatten(Completion.handler)),
    Connector.routes(options)
  )

/**
 * The whole app: routes, problem responses for every failure, request logging, and in-flight
 * tracking for graceful shutdown. Never fails: only a client abort interrupts it.
 *
 * @since 0.1.0
 */
export const make = (options: AppOptions): HttpApp.Default<never, AppServices> => {
  const routed = router(options).pipe(
    Effect.catchTags({
      RouteNotFound: () => Effect.succeed(Problem.toResponse(Problem.notFound("no such route"))),
      Problem: (problem) => Effect.succeed(Problem.toResponse(problem))
    }),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(Effect.logError("unexpected error while handling a request", cause), Problem.toResponse(Problem.internal))
    )
  )
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const drain = yield* Drain
    return yield* drain.track(withRequestLog(request.method, request.url)(routed))
  })
}
