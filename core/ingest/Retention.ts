/**
 * Event retention: a workspace keeps its raw Direct API events for its retention (its own, set by
 * an administrator, else the server's default, `ACCORD_EVENT_RETENTION_DAYS`), and a periodic sweep
 * removes older ones (docs/decisions.md, "Event retention"). Profiles, logins and usage rollups
 * outlive the events they came from: only raw events expire.
 *
 * An event expires when its occurrence time (`occurredAt`, the event's own `timestamp`) is more
 * than the retention before now: a backfilled event older than that is accepted and removed by the
 * next sweep, like any other.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { EventStore, type Retention, type RetentionSweep } from "../ports/EventStore.ts"
import type { StorageError } from "../ports/StorageError.ts"

/** One day in milliseconds: retention is counted in whole days of 24 hours. */
export const dayMillis = 86_400_000

/** The longest retention a workspace or the server may set, in days (100 years). */
export const maxRetentionDays = 36_500

/** The server's default retention when `ACCORD_EVENT_RETENTION_DAYS` is unset. */
export const defaultRetentionDays = 400

/** How often the server sweeps: hourly, so an event outlives its retention by at most about an hour. */
export const sweepEveryMillis = 3_600_000

/**
 * The occurrence time before which a workspace's events have expired at `now`; none when it keeps
 * them forever.
 */
export const expiredBefore = (retention: Retention, now: number): number | undefined =>
  retention === "forever" ? undefined : now - retention * dayMillis

/**
 * A retention as configured in text: `forever` or `0` (keep forever), else a whole number of days
 * from 1 to `maxRetentionDays`; anything else is none.
 */
export const parseRetention = (text: string): Retention | undefined => {
  const value = text.trim().toLowerCase()
  if (value === "forever" || value === "0") return "forever"
  if (!/^[0-9]{1,6}$/.test(value)) return undefined
  const days = Number(value)
  return days >= 1 && days <= maxRetentionDays ? days : undefined
}

/** The retention that applies to a workspace: its own when set, else the server's default. */
export const effectiveRetention = (
  workspaceId: string,
  defaultRetention: Retention
): Effect.Effect<{ readonly retention: Retention; readonly own: boolean }, StorageError, EventStore> =>
  Effect.map(
    Effect.flatMap(EventStore, (store) => store.retention(workspaceId)),
    (own) => (own._tag === "Some" ? { retention: own.value, own: true } : { retention: defaultRetention, own: false })
  )

/**
 * One sweep now: every workspace's expired events removed (whole partitions dropped where every
 * workspace's retention has expired them), storage prepared ahead. What it created and dropped is
 * logged at INFO, so an operator sees every removal the sweep made.
 */
export const sweep = (defaultRetention: Retention): Effect.Effect<RetentionSweep, StorageError, EventStore> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const done = yield* (yield* EventStore).sweep({ now, defaultRetention })
    for (const name of done.createdPartitions) yield* Effect.logInfo(`event retention: created partition ${name}`)
    for (const name of done.droppedPartitions)
      yield* Effect.logInfo(`event retention: dropped partition ${name} (every workspace's retention expired it)`)
    if (done.deletedEvents > 0 || done.deletedKeys > 0)
      yield* Effect.logInfo(
        `event retention: deleted ${done.deletedEvents} expired events and ${done.deletedKeys} of their idempotency keys`
      )
    return done
  })

/**
 * The server's sweep: once at start (which also prepares the partitions ahead), then every
 * `everyMillis`, until interrupted. A failed sweep is logged and tried again at the next one.
 */
export const scheduler = (options: {
  readonly defaultRetention: Retention
  readonly everyMillis?: number
}): Effect.Effect<never, never, EventStore> =>
  sweep(options.defaultRetention).pipe(
    Effect.catchAll((error) => Effect.logWarning("event retention sweep failed", error.message)),
    Effect.repeat(Schedule.spaced(Duration.millis(options.everyMillis ?? sweepEveryMillis))),
    Effect.zipRight(Effect.never)
  )
