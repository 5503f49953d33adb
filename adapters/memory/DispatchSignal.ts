/**
 * DispatchSignal in one process: a sliding queue of one wake-up, and the in-process handoff.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import {
  type DispatchReceiver,
  DispatchSignal,
  type DispatchSignalService,
  type DispatchSlot
} from "../../core/ports/DispatchSignal.ts"

/**
 * A coalescing in-process signal, with the handoff to the dispatchers of this process.
 */
export const make: Effect.Effect<DispatchSignalService> = Effect.map(Queue.sliding<true>(1), (queue) => {
  const receivers: Array<DispatchReceiver> = []
  const reserveFrom = (i: number): Effect.Effect<Option.Option<DispatchSlot>> =>
    i >= receivers.length
      ? Effect.succeed(Option.none())
      : Effect.flatMap(receivers[i]!.reserve, (slot) =>
          Option.isSome(slot) ? Effect.succeed(slot) : reserveFrom(i + 1)
        )
  return {
    wake: Effect.asVoid(Queue.offer(queue, true)),
    next: Effect.asVoid(Queue.take(queue)),
    reserve: Effect.suspend(() => reserveFrom(0)),
    receive: (receiver) =>
      Effect.acquireRelease(
        Effect.sync(() => receivers.push(receiver)),
        () =>
          Effect.sync(() => {
            const at = receivers.indexOf(receiver)
            if (at >= 0) receivers.splice(at, 1)
          })
      )
  }
})

/** Provides a `DispatchSignal` that wakes the dispatcher of this process only. */
export const layerMemory: Layer.Layer<DispatchSignal> = Layer.effect(DispatchSignal, make)
