/**
 * A background worker over leased outbox items that carry an action (`leaseWithActions`): the
 * reconciler and the evidence watcher. One item's storage failure is logged and its lease left to
 * expire, so another round (or worker) takes it again; its siblings go on.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { LeasedAction } from "../../ports/ActionLedger.ts"
import { runLeased } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"

/**
 * Runs until the scope closes; `what` names one unit of work in the warning (`a read`, `a look`).
 */
export const runActionWorker = <R>(options: {
  readonly name: string
  readonly what: string
  readonly concurrency: number
  readonly idleMillis: number
  readonly lease: (limit: number) => Effect.Effect<ReadonlyArray<LeasedAction>, StorageError, R>
  readonly work: (leased: LeasedAction) => Effect.Effect<unknown, StorageError, R>
}): Effect.Effect<void, never, R | Scope.Scope> =>
  runLeased({
    name: options.name,
    concurrency: options.concurrency,
    idleMillis: options.idleMillis,
    lease: options.lease,
    idOf: (leased) => leased.item.id,
    work: (leased) =>
      Effect.catchAll(options.work(leased), (error) =>
        Effect.logWarning(`${options.name}: storage failed during ${options.what}`, error.message)
      )
  })
