/**
 * The `DispatchSignal` port: intake tells the dispatcher that new work was committed, so a queued
 * action is delivered at once instead of at the dispatcher's next poll. Signals coalesce (many
 * intakes while the dispatcher is busy are one wake-up), and a lost signal costs only latency:
 * the dispatcher still polls the outbox (`runLeased`), which is what makes any number of
 * processes on one database correct. The memory implementation reaches the dispatcher of this
 * process; an adapter may reach others (for example PostgreSQL `LISTEN`/`NOTIFY`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"

/**
 * @since 0.1.0
 */
export interface DispatchSignalService {
  /** New dispatch work was committed. Never blocks. */
  readonly wake: Effect.Effect<void>
  /** Waits until the next wake-up (at once if one came since the last wait). */
  readonly next: Effect.Effect<void>
}

/**
 * @since 0.1.0
 */
export class DispatchSignal extends Context.Tag("@accord/core/ports/DispatchSignal")<DispatchSignal, DispatchSignalService>() {}

/**
 * A coalescing in-process signal.
 *
 * @since 0.1.0
 */
export const makeMemory: Effect.Effect<DispatchSignalService> = Effect.map(Queue.sliding<true>(1), (queue) => ({
  wake: Effect.asVoid(Queue.offer(queue, true)),
  next: Effect.asVoid(Queue.take(queue))
}))

/**
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<DispatchSignal> = Layer.effect(DispatchSignal, makeMemory)
