/**
 * The `ActionChanges` port: who waits for an action to change, so a reader that has nothing new to
 * show (a runtime long-polling its action's status) is woken by the change instead of asking again.
 *
 * A waiter subscribes before it reads the action: a change committed between its read and its wait
 * still wakes it. Every applied ledger transition is announced (`changed`). The memory
 * implementation reaches the waiters of this process only; a change made by another process sharing
 * the database wakes nobody here, so a waiter bounds its wait and reads again at its end: what it
 * answers is never staler than that bound.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** Subscriptions to an action's next change, and the announcement of a change. */
export interface ActionChangesService {
  /**
   * Registers a waiter for the scope and answers the effect that completes at the action's next
   * announced change (at once if it was announced since the subscription).
   */
  readonly subscribe: (actionRequestId: string) => Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
  /** Announces that the action changed: every waiter subscribed to it wakes. Never blocks. */
  readonly changed: (actionRequestId: string) => Effect.Effect<void>
}

/** The service tag of the action-change waiters. */
export class ActionChanges extends Context.Tag("@accord/core/ports/ActionChanges")<
  ActionChanges,
  ActionChangesService
>() {}
