/**
 * The request log line: method, route template (`/api/admin/v1/workspaces/:workspaceId/events`),
 * status and duration. Never the raw path, query strings, headers or bodies, which is where
 * secrets and personal data travel (DAI "Data safety": received values are never echoed or
 * logged), whether or not the request was authenticated; a request no route matches is logged as
 * {@link unmatchedRoute}.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"

/**
 * What is logged for a request that no route matched (its path is never logged).
 */
export const unmatchedRoute = "<unmatched>"

/**
 * The matched route's template for the request being handled: written by {@link recordRoute}
 * when a route matches, read when the log line is written.
 */
export class MatchedRoute extends Context.Tag("@accord/adapters/http/MatchedRoute")<
  MatchedRoute,
  { route: string }
>() {}

/**
 * Makes every route of `router` record its template in {@link MatchedRoute} (when provided).
 */
export const recordRoute = <E, R>(router: HttpRouter.HttpRouter<E, R>) =>
  HttpRouter.use(router, (handler) =>
    Effect.flatMap(HttpRouter.RouteContext, (context) =>
      Effect.flatMap(Effect.serviceOption(MatchedRoute), (matched) => {
        if (matched._tag === "Some") matched.value.route = context.route.path
        return handler
      })
    )
  )

/**
 * Logs one request when it ends (status 499, "request aborted", when the client went away first),
 * by its route template: `route` is read when the request ends.
 */
export const withRequestLog =
  (method: string, route: () => string) =>
  <A extends { readonly status: number }, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(
      Effect.clockWith((clock) => clock.currentTimeNanos),
      (start) =>
        Effect.onExit(self, (exit) =>
          Effect.flatMap(
            Effect.clockWith((clock) => clock.currentTimeNanos),
            (end) =>
              Effect.annotateLogs(Effect.logInfo(Exit.isSuccess(exit) ? "request" : "request aborted"), {
                method,
                path: route(),
                status: Exit.isSuccess(exit) ? exit.value.status : 499,
                durationMs: Math.round(Duration.toMillis(Duration.nanos(end - start)) * 10) / 10
              })
          )
        )
    )

/**
 * Whether request lines are logged at the current minimum log level (`LOG_LEVEL` of `Warning` or
 * above turns them off), for a server that decides once instead of per request.
 */
export const requestLogEnabled: Effect.Effect<boolean> = Effect.map(
  FiberRef.get(FiberRef.currentMinimumLogLevel),
  (minimum) => LogLevel.greaterThanEqual(LogLevel.Info, minimum)
)
