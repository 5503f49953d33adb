/**
 * Write batching: concurrent callers hand their item to a batcher and wait; a worker takes whatever
 * has queued up (up to `maxBatch`) and runs ONE operation for all of them, then answers each caller
 * with its own result. Under load many callers share one round trip or one commit; alone, a
 * caller's item goes out at once.
 *
 * It serves the ingest group commit (`ingest/Committer`: "a 202 is never sent before its event is
 * committed") and the SQL stores' statement batching alike. Its home is beside the ports, as
 * storage-facing machinery (like `Outbox.runLeased`), not inside a domain: a storage adapter uses
 * it without importing a domain, and it needs nothing but `effect`.
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as internal from "./internal/batcher.ts"

/**
 * `maxBatch` (default {@link defaultMaxBatch}), `workers` (runs in flight at once, default 1),
 * `one` (runs one item on its own: a batch of one, and each item of a split batch; default `many`
 * of one item), `splitOn` (which failures of a batch of several items split it, so that its
 * items run again one at a time through `one` and an item that fails fails only itself; default
 * every failure), `retryOn` (which failures of a run are met by running the same batch once
 * more, at once, before it is answered or split; default none), `shareOn` (which failures of a
 * run are also the answer of every item queued meanwhile; default none), `gather` (what an idle worker woken by an item waits for before it takes its
 * batch, e.g. {@link gatherNextTurn}; default nothing) and `manyNow` (`many` in callback form: the
 * batches then run from callbacks, without worker fibers).
 */
export interface BatcherOptions<A, B, E> extends internal.Options<A, B, E> {}

/**
 * The most items in one run unless told otherwise.
 */
export const defaultMaxBatch: number = internal.defaultMaxBatch

/**
 * Waits for the host's next turn, so that items arriving together are taken together: see
 * `BatcherOptions.gather`.
 */
export const gatherNextTurn: Effect.Effect<void> = internal.gatherNextTurn

/**
 * Builds a batcher over `many`, which must answer one result per item, in the items' order, and
 * starts its workers in the current scope. A batch taken is always run and answered, even while
 * the scope closes; items still waiting when it closes are interrupted, and so is an item
 * submitted after.
 */
export const make: <A, B, E>(
  many: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>,
  options?: BatcherOptions<A, B, E>
) => Effect.Effect<(item: A) => Effect.Effect<B, E>, never, Scope.Scope> = internal.make

/**
 * A batcher's two doors: `submit` waits in the calling fiber; `offer` queues the item and calls
 * its callback once with the item's result, without a fiber per item (for a hot path that is not
 * itself a fiber, such as the `node:http` ingest route).
 */
export interface Doors<A, B, E> extends internal.Doors<A, B, E> {}

/**
 * {@link make} with both doors.
 */
export const makeDoors: <A, B, E>(
  many: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>,
  options?: BatcherOptions<A, B, E>
) => Effect.Effect<Doors<A, B, E>, never, Scope.Scope> = internal.makeDoors
