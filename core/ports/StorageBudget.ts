/**
 * The storage bound of one unit of work (an HTTP request, one batch of a bulk import): all its
 * waits for storage together, for a connection and for each statement, in a transaction or not,
 * one after another or in parallel, last at most the storage bound. Past it the work fails with a
 * `StorageError` (a timeout), answered 503 with `Retry-After`, however many statements it had
 * still to run: a slow database costs a caller one bound, not one per statement. Time spent
 * waiting for anything else (a long poll's wait for a change, an outbound call, a request body)
 * does not count. Work outside such a unit (the dispatcher, the ingest batches) bounds each wait
 * on its own.
 *
 * The budget is a cell in a `FiberRef`: fibers forked by the work share their parent's cell. The
 * adapter that bounds storage waits (the PostgreSQL client) reads the current fiber's budget when a
 * wait begins, gives the wait no more than what remains, and records the wait's start and end
 * (`beginWait`, `endWait`, in its own clock). Overlapping waits count once, as the time during
 * which at least one of them was in progress.
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"

/** The storage waits of one unit of work so far. Mutable: the adapter that waits updates it. */
export interface StorageBudget {
  /** Milliseconds spent waiting before the waits now in progress began. */
  spentMillis: number
  /** Waits in progress. */
  waiting: number
  /** When the first of the waits in progress began, in the adapter's clock. */
  since: number
}

/** The current unit of work's budget; none outside a unit (each wait is then bounded on its own). */
export const currentStorageBudget: FiberRef.FiberRef<StorageBudget | undefined> = globalValue(
  Symbol.for("@accord/core/ports/StorageBudget/current"),
  () => FiberRef.unsafeMake<StorageBudget | undefined>(undefined)
)

/** Runs `effect` as one unit of work: its storage waits share one storage bound, counted from none. */
export const withStorageBudget = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => Effect.locally(effect, currentStorageBudget, { spentMillis: 0, waiting: 0, since: 0 }))

/** What remains of `boundMillis` at `now`: the bound less the time spent waiting so far (may be ≤ 0). */
export const remainingMillis = (budget: StorageBudget, boundMillis: number, now: number): number =>
  boundMillis - budget.spentMillis - (budget.waiting > 0 ? now - budget.since : 0)

/** A wait begins at `now`. */
export const beginWait = (budget: StorageBudget, now: number): void => {
  if (budget.waiting++ === 0) budget.since = now
}

/** A wait begun with {@link beginWait} ended at `now`. */
export const endWait = (budget: StorageBudget, now: number): void => {
  if (budget.waiting === 0) return
  if (--budget.waiting === 0) budget.spentMillis += Math.max(0, now - budget.since)
}
