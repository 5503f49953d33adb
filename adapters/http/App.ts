/**
 * The Accord HTTP app, platform-agnostic: the same `HttpApp` is served by Node, Bun and Deno.
 *
 * One file per resource under `routes/`. Every route is served from the `HttpApi` declaration
 * (`Declared.ts`): one router, built from the one declaration that also yields `/openapi.json`. Every admin handler runs behind the one admin guard (`Auth.guarded`). Every error is a
 * problem document (docs/decisions.md, "Problem details"): core's domain errors through the one `ErrorMap`, an unknown route a 404, and an unexpected failure a
 * 500 whose cause goes to the log, never to the client. Each request is logged with its method,
 * path, status and duration only: no headers, query strings or bodies, which is where secrets
 * travel.
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { CompletionServices } from "../../core/connector/CompletionIntake.ts"
import * as Declared from "./Declared.ts"
import { Drain } from "./Drain.ts"
import * as ErrorMap from "./ErrorMap.ts"
import * as StorageFaultLog from "../telemetry/StorageFaultLog.ts"
import { targetProblem } from "./Paths.ts"
import * as Problem from "./Problem.ts"
import * as RuntimeGuard from "./RuntimeGuard.ts"
import * as Unrouted from "./Unrouted.ts"
import { MatchedRoute, recordRoute, unmatchedRoute, withRequestLog } from "./RequestLog.ts"
import type * as Accounts from "./routes/Accounts.ts"
import * as ActionRequests from "./routes/ActionRequests.ts"
import * as ApiKeys from "./routes/ApiKeys.ts"
import * as Catalog from "./routes/Catalog.ts"
import * as Completion from "./routes/Completion.ts"
import * as Connector from "./routes/Connector.ts"
import * as Events from "./routes/Events.ts"
import * as FeatureGates from "./routes/FeatureGates.ts"
import type * as Health from "./routes/Health.ts"
import * as Imports from "./routes/Imports.ts"
import * as Ingest from "./routes/Ingest.ts"
import * as Privacy from "./routes/Privacy.ts"
import * as Retention from "./routes/Retention.ts"
import type * as Metrics from "./routes/Metrics.ts"
import * as Runtime from "./routes/Runtime.ts"
import * as RuntimeSessions from "./routes/RuntimeSessions.ts"
import * as Service from "./routes/Service.ts"

/**
 * The HTTP app's settings: body limits, ingest rate, connector policy and the metrics token
 * (`AccordConfig` supplies them).
 */
export interface AppOptions
  extends Ingest.IngestOptions,
    Imports.ImportRouteOptions,
    Connector.ConnectorRouteOptions,
    Retention.RetentionRouteOptions,
    Metrics.MetricsOptions {
  /** Largest accepted request body (`ACCORD_MAX_BODY_BYTES`). */
  readonly maxBodyBytes: number
  /** The runtime routes' rates (`RuntimeGuard.defaultRuntimeLimits` when absent). */
  readonly runtimeLimits?: RuntimeGuard.RuntimeLimits
}

/**
 * The services the app runs on; storage provides the stores and `Readiness`.
 */
export type AppServices =
  | Health.HealthServices
  | Ingest.IngestServices
  | Imports.ImportsServices
  | CompletionServices
  | ApiKeys.ApiKeysServices
  | Events.EventsServices
  | Accounts.AccountsServices
  | FeatureGates.FeatureGatesServices
  | Privacy.PrivacyServices
  | Retention.RetentionServices
  | ActionRequests.ActionsServices
  | Catalog.CatalogServices
  | Connector.ConnectorServices
  | RuntimeSessions.RuntimeSessionsServices
  | Runtime.RuntimeServices

/**
 * What the routes fail with: edge problems and core's domain errors (answered by `ErrorMap`).
 */
export type AppError = Problem.Problem | ErrorMap.DomainError

/**
 * Every route, served from the declaration (`Declared.ts`) with its full path; `guard` guards the
 * runtime routes. Fails with `AppError` (the runtime guard's refusals pass through the declared
 * security) and `RouteNotFound`; `make` turns those into responses.
 */
export const router = (
  options: AppOptions,
  guard: RuntimeGuard.RuntimeGuard = RuntimeGuard.make(options.runtimeLimits)
): HttpRouter.HttpRouter<AppError, AppServices> =>
  Declared.router(
    Layer.mergeAll(
      ApiKeys.group(options.maxBodyBytes),
      Catalog.group,
      Connector.group(options),
      RuntimeSessions.group(options.maxBodyBytes),
      Runtime.group(guard),
      Completion.group,
      Events.group,
      FeatureGates.group(options.maxBodyBytes),
      Privacy.group,
      Retention.group(options),
      ActionRequests.group(options.maxBodyBytes),
      Ingest.group(options),
      Imports.group(options),
      Service.group(options)
    ),
    guard
  )

const targetDetail = {
  invalid_path: "a path segment is not UTF-8 or holds a control, bidi, zero-width or unpaired surrogate character",
  invalid_query: "a query parameter is not UTF-8 or holds a NUL character"
} as const

/**
 * The whole app: routes, problem responses for every failure, request logging, and in-flight
 * tracking for graceful shutdown. Never fails: only a client abort interrupts it.
 */
export const make = (options: AppOptions): HttpApp.Default<never, AppServices> => {
  const guard = RuntimeGuard.make(options.runtimeLimits)
  const routes = router(options, guard)
  // Built once: a router is matched by a table built on its first run, so a router made per
  // request (as `recordRoute` makes one) would build that table for every request.
  const recorded = recordRoute(routes)
  // Every runtime route, known or not, first takes its client address's token.
  const guardedRoutes = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    request.url.startsWith(RuntimeGuard.runtimeRoutesPrefix) ? Effect.zipRight(guard.admitAddress, recorded) : recorded
  )
  const routed = guardedRoutes.pipe(
    Effect.catchAll((error) =>
      error._tag === "RouteNotFound"
        ? // the request as received: a mount's `RouteNotFound` carries its prefix-stripped copy
          Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
            Problem.toResponse(Unrouted.problem(routes, request.method, request.url))
          )
        : error._tag === "StorageError"
          ? Effect.as(StorageFaultLog.warn(error), Problem.toResponse(ErrorMap.toProblem(error)))
          : Effect.succeed(Problem.toResponse(ErrorMap.toProblem(error)))
    ),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(
            Effect.logError("unexpected error while handling a request", cause),
            Problem.toResponse(Problem.internal)
          )
    )
  )
  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const drain = yield* Drain
    const matched = { route: unmatchedRoute }
    const refused = targetProblem(request.url)
    const answered =
      refused === undefined
        ? Effect.provideService(routed, MatchedRoute, matched)
        : Effect.succeed(Problem.toResponse(Problem.badRequest(refused, targetDetail[refused])))
    return yield* drain.track(withRequestLog(request.method, () => matched.route)(answered))
  })
}
