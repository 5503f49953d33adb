/**
 * Bounded exponential backoff with jitter, the one retry policy of Accord (the spec asks for
 * "bounded exponential backoff and jitter" and leaves the numbers open): attempt `n` (0-based) has
 * the ceiling `min(cap, base * 2^n)`, and its delay is drawn uniformly from the upper half of that
 * ceiling ("equal jitter"), so retries never synchronize and never wait less than half the nominal
 * delay. An optional deadline bounds how long an operation is retried at all.
 *
 * Each user keeps its own numbers (`Backoff`). Work whose attempt count is persisted (an outbox
 * item) asks for the delay of attempt `n` (`backoffDelay`, `randomBackoffDelay`) and checks the
 * deadline itself (`pastDeadline`); retries inside one fiber use the same policy as a `Schedule`
 * (`schedule`).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"

/**
 * The numbers of one backoff: the first ceiling, the largest ceiling and, optionally, how long
 * after the first attempt retrying stops.
 */
export interface Backoff {
  readonly baseMillis: number
  readonly capMillis: number
  readonly deadlineMillis?: number
}

/**
 * The ceiling of the delay after `attempts` failed attempts: `min(cap, base * 2^attempts)`.
 */
export const ceilingMillis = (backoff: Backoff, attempts: number): number =>
  // The exponent is bounded so a huge attempt count cannot overflow to Infinity before the cap.
  Math.min(backoff.capMillis, backoff.baseMillis * 2 ** Math.min(Math.max(attempts, 0), 40))

/**
 * The delay after `attempts` failed attempts for the draw `random` in `[0, 1)`: the upper half of
 * the ceiling, whole milliseconds.
 */
export const backoffDelay = (backoff: Backoff, attempts: number, random: number): number => {
  const ceiling = ceilingMillis(backoff, attempts)
  return Math.floor(ceiling / 2 + random * (ceiling / 2))
}

/**
 * `backoffDelay` with the draw taken from Effect's `Random` service (seedable in tests).
 */
export const randomBackoffDelay = (backoff: Backoff, attempts: number): Effect.Effect<number> =>
  Effect.map(Random.next, (random) => backoffDelay(backoff, attempts, random))

/**
 * Whether retrying has stopped: `now` is at least `deadlineMillis` after `startedAt`. Never true
 * without a deadline.
 */
export const pastDeadline = (backoff: Backoff, startedAt: number, now: number): boolean =>
  backoff.deadlineMillis !== undefined && now - startedAt >= backoff.deadlineMillis

/**
 * The same policy as a `Schedule` for retries inside one fiber: exponential from the base, doubling,
 * capped, each delay jittered into the upper half of its ceiling, recurring until the deadline (if
 * any) has elapsed. Its output is the number of retries so far.
 */
export const schedule = (backoff: Backoff): Schedule.Schedule<number> => {
  const jittered = Schedule.exponential(Duration.millis(backoff.baseMillis), 2).pipe(
    // The union keeps the smaller of the two delays: the cap.
    Schedule.union(Schedule.spaced(Duration.millis(backoff.capMillis))),
    Schedule.jitteredWith({ min: 0.5, max: 1 }),
    // Whole milliseconds, as `backoffDelay`.
    Schedule.modifyDelay((_, delay) => Duration.millis(Math.floor(Duration.toMillis(delay)))),
    Schedule.map(([, retries]) => retries)
  )
  return backoff.deadlineMillis === undefined
    ? jittered
    : Schedule.upTo(jittered, Duration.millis(backoff.deadlineMillis))
}

/**
 * An HTTP `Retry-After` value (delay seconds or an HTTP date) in milliseconds from `now`;
 * `undefined` when absent or unreadable. A date in the past is 0.
 */
export const retryAfterMillis = (header: string | null | undefined, now: number): number | undefined => {
  if (header === null || header === undefined || header.trim() === "") return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/**
 * The delay before the next attempt when the server named one (`Retry-After` on a 429 or 503): the
 * server's hint replaces the exponential ceiling, so a client that failed many times during an
 * outage comes back when the server says it is ready rather than at the end of a long backoff. The
 * hint is never undercut, is spread by up to half of itself (at least half the base, at most
 * 500 ms of it) so clients told the same hint do not return in one burst, and is capped at
 * `capMillis`, as every delay is.
 */
export const hintedDelay = (backoff: Backoff, hintMillis: number, random: number): number => {
  const hint = Math.min(Math.max(hintMillis, 0), backoff.capMillis)
  const spread = Math.max(hint / 2, Math.min(backoff.baseMillis, 1_000) / 2)
  return Math.min(backoff.capMillis, Math.floor(hint + random * spread))
}

/**
 * The delay after `attempts` failed attempts: the server's hint when it gave one (`hintedDelay`),
 * the exponential backoff otherwise (`backoffDelay`).
 */
export const retryDelay = (backoff: Backoff, attempts: number, random: number, hintMillis?: number): number =>
  hintMillis === undefined ? backoffDelay(backoff, attempts, random) : hintedDelay(backoff, hintMillis, random)
