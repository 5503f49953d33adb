/**
 * The one retry policy of the SDK's HTTP clients (`DirectApiClient`, `ActionClient`): which answers
 * are worth another attempt (network failures, time-outs, 408, 429, 5xx), the shared backoff
 * (`core/protocol/Backoff.ts`) as a `Schedule` whose wait follows a `Retry-After` when the server
 * sent one, and how a refusal's problem details are read.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Backoff from "../../../core/protocol/Backoff.ts"

/**
 * Whether an HTTP status may succeed later: 408, 429 and every 5xx.
 */
export const retryableStatus = (status: number): boolean => status === 429 || status === 408 || status >= 500

/**
 * A response text as JSON, `undefined` when empty or not JSON.
 */
export const parseJson = (text: string): unknown => {
  try {
    return text === "" ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The fields of a problem answer (RFC 9457 plus `code` and `errors`), with fallbacks.
 */
export const problemFields = (
  json: unknown,
  status: number,
  fallbackDetail: string
): {
  readonly status: number
  readonly code: string
  readonly detail: string
  readonly errors: ReadonlyArray<{ readonly path: string; readonly message: string }>
} => {
  const p = (typeof json === "object" && json !== null ? json : {}) as Record<string, unknown>
  const errors = Array.isArray(p["errors"])
    ? (p["errors"] as Array<unknown>).flatMap((e) => {
        const item = e as { path?: unknown; message?: unknown }
        return typeof item?.path === "string" && typeof item.message === "string"
          ? [{ path: item.path, message: item.message }]
          : []
      })
    : []
  return {
    status,
    code: typeof p["code"] === "string" ? p["code"] : `http_${status}`,
    detail: typeof p["detail"] === "string" ? p["detail"] : fallbackDetail,
    errors
  }
}

/**
 * The retry schedule over retryable outcomes: the shared backoff, except that an outcome with
 * `afterMillis` (its `Retry-After`) waits what the server asked for (`Backoff.hintedDelay`: never
 * less, jittered, at most `maxDelayMillis`), `maxAttempts` in all.
 */
export const retrySchedule = <R extends { readonly afterMillis?: number }>(options: {
  readonly baseDelayMillis: number
  readonly maxDelayMillis: number
  readonly maxAttempts: number
}): Schedule.Schedule<[[number, R], number], R> =>
  Backoff.schedule({ baseMillis: options.baseDelayMillis, capMillis: options.maxDelayMillis }).pipe(
    Schedule.intersect(Schedule.identity<R>()),
    Schedule.intersect(Schedule.recurs(options.maxAttempts - 1)),
    Schedule.modifyDelayEffect(([[, retry]], delay) =>
      retry.afterMillis === undefined
        ? Effect.succeed(delay)
        : Effect.map(Random.next, (random) =>
            Duration.millis(
              Backoff.hintedDelay(
                { baseMillis: options.baseDelayMillis, capMillis: options.maxDelayMillis },
                retry.afterMillis!,
                random
              )
            )
          )
    )
  )
