/**
 * `ActionChanges` in one process: a registry of waiters by action, each a `Deferred` completed by
 * the action's next announced change. A waiter costs a map entry and a suspended fiber, no timer
 * of its own and no CPU while it waits; its entry leaves the registry with its scope.
 *
 * `announcing` feeds it from the ledger: every applied transition of the wrapped `ActionLedger`
 * is announced once it has committed.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ActionChanges, type ActionChangesService } from "../../core/ports/ActionChanges.ts"
import { ActionLedger, type ActionLedgerService } from "../../core/ports/ActionLedger.ts"

/** A registry of this process's waiters. */
export const make: Effect.Effect<ActionChangesService> = Effect.sync(() => {
  const waiters = new Map<string, Set<Deferred.Deferred<void>>>()
  const release = (id: string, waiter: Deferred.Deferred<void>) =>
    Effect.sync(() => {
      const set = waiters.get(id)
      if (set === undefined) return
      set.delete(waiter)
      if (set.size === 0) waiters.delete(id)
    })
  return {
    subscribe: (actionRequestId) =>
      Effect.acquireRelease(
        Effect.map(Deferred.make<void>(), (waiter) => {
          const set = waiters.get(actionRequestId)
          if (set === undefined) waiters.set(actionRequestId, new Set([waiter]))
          else set.add(waiter)
          return waiter
        }),
        (waiter) => release(actionRequestId, waiter)
      ).pipe(Effect.map((waiter) => Deferred.await(waiter))),
    changed: (actionRequestId) =>
      Effect.suspend(() => {
        const set = waiters.get(actionRequestId)
        if (set === undefined) return Effect.void
        waiters.delete(actionRequestId)
        return Effect.forEach(set, (waiter) => Deferred.succeed(waiter, undefined), { discard: true })
      })
  }
})

/** Provides `ActionChanges` that wakes the waiters of this process only. */
export const layerMemory: Layer.Layer<ActionChanges> = Layer.effect(ActionChanges, make)

/** The ledger with every applied transition announced to `changes` once it committed. */
export const announcing = (ledger: ActionLedgerService, changes: ActionChangesService): ActionLedgerService => ({
  ...ledger,
  transition: (options) =>
    Effect.tap(ledger.transition(options), (result) =>
      result._tag === "Applied" ? changes.changed(options.actionRequestId) : Effect.void
    )
})

/**
 * `storage` with `ActionChanges` in one process added, and its `ActionLedger` replaced by the same
 * ledger with every applied transition announced to it (`announcing`).
 */
export const announcingOver = <A, E, R>(
  storage: Layer.Layer<A | ActionLedger, E, R>
): Layer.Layer<A | ActionLedger | ActionChanges, E, R> =>
  Layer.flatMap(storage, (context) =>
    Layer.effectContext(
      Effect.map(make, (changes) =>
        Context.add(
          Context.add(context, ActionChanges, changes),
          ActionLedger,
          announcing(Context.get(context, ActionLedger), changes)
        )
      )
    )
  )
