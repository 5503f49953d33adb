/**
 * The `DispatchSignal` port: intake tells the dispatcher that new work was committed, so a queued
 * action is delivered at once instead of at the dispatcher's next poll. Signals coalesce (many
 * intakes while the dispatcher is busy are one wake-up), and a lost signal costs only latency:
 * the dispatcher still polls the outbox (`runLeased`), which is what makes any number of
 * processes on one database correct. The memory implementation reaches the dispatcher of this
 * process; an adapter may reach others (for example PostgreSQL `LISTEN`/`NOTIFY`).
 *
 * The handoff (opt-in, `runDispatcher`'s `takeFromIntake`): a dispatcher running in this
 * process registers as a receiver; intake
 * reserves one of its free delivery slots, creates the action with its outbox item already leased
 * to that dispatcher (in the same write, lease length as the dispatcher's own leases), and once
 * the write committed hands the item and the action straight to it. No poll, wake-up or separate
 * lease statement stands between creation and delivery. The lease is what it always is: if this
 * process dies, it expires and any dispatcher (of any process) takes the item.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { LeasedAction } from "./ActionLedger.ts"

/**
 * A reserved delivery slot of a dispatcher: create the action's outbox item leased to `owner`
 * until `now + leaseMillis`, then end the reservation exactly once, by `start` once the write
 * committed or by `release` when nothing was created (a failure, an interruption, a duplicate).
 */
export interface DispatchSlot {
  readonly owner: string
  readonly leaseMillis: number
  /** Delivers the committed action with its item, as written (attempts 0, leased to `owner`). */
  readonly start: (leased: LeasedAction) => Effect.Effect<void>
  readonly release: Effect.Effect<void>
}

/**
 * A dispatcher taking actions from intake: a free slot, or none when all are busy.
 */
export interface DispatchReceiver {
  readonly reserve: Effect.Effect<Option.Option<DispatchSlot>>
}

/** Wakes the dispatcher when new work is committed, so it need not wait for its next poll. */
export interface DispatchSignalService {
  /** New dispatch work was committed. Never blocks. */
  readonly wake: Effect.Effect<void>
  /** Waits until the next wake-up (at once if one came since the last wait). */
  readonly next: Effect.Effect<void>
  /** A free slot of a dispatcher of this process, when one runs and has one (see the module's handoff). */
  readonly reserve: Effect.Effect<Option.Option<DispatchSlot>>
  /** Registers a dispatcher as a receiver until the scope closes. */
  readonly receive: (receiver: DispatchReceiver) => Effect.Effect<void, never, Scope.Scope>
}

/** The service tag of the dispatch wake-up signal. */
export class DispatchSignal extends Context.Tag("@accord/core/ports/DispatchSignal")<
  DispatchSignal,
  DispatchSignalService
>() {}
