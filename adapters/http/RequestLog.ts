/**
 * The request log line: method, path without query, status and duration. Never headers, query
 * strings or bodies, which is where secrets travel.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"

const pathOf = (url: string): string => {
  const end = url.search(/[?#]/)
  return end === -1 ? url : url.slice(0, end)
}

/**
 * Logs one request when it ends (status 499, "request aborted", when the client went away first).
 *
 * @since 0.1.0
 */
export const withRequestLog = (method: string, url: string) =>
<A extends { readonly status: number }, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeNanos), (start) =>
    Effect.onExit(self, (exit) =>
      Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeNanos), (end) =>
        Effect.annotateLogs(
          Effect.logInfo(Exit.isSuccess(exit) ? "request" : "request aborted"),
          {
            method,
            path: pathOf(url),
            status: Exit.isSuccess(exit) ? exit.value.status : 499,
            durationMs: Math.round(Duration.toMillis(Duration.nanos(end - start)) * 10) / 10
          }
        ))))

/**
 * Whether request lines are logged at the current minimum log level (`LOG_LEVEL` of `Warning` or
 * above turns them off), for a server that decides once instead of per request.
 *
 * @since 0.1.0
 */
export const requestLogEnabled: Effect.Effect<boolean> = Effect.map(
  FiberRef.get(FiberRef.currentMinimumLogLevel),
  (minimum) => LogLevel.greaterThanEqual(LogLevel.Info, minimum)
)
