/**
 * Graceful shutdown: requests in flight when the process is asked to stop are finished before the
 * server goes away.
 *
 * Why this exists: on SIGTERM/SIGINT `runMain` interrupts the main fiber and the layers are closed
 * in reverse order. Node's server closes by waiting for open requests, but Bun's interrupts the
 * request fibers it forked (an in-flight request answers 503). So the server composition calls
 * `drain` first, before it closes the HTTP server: from then on `/readyz` reports 503 (load
 * balancers stop routing here) and the call waits until no request is in flight, or the grace
 * period ends.
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Counts requests in flight so a stopping server answers them before it closes. */
export interface DrainService {
  /** Counts `self` as in flight while it runs. */
  readonly track: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Counts one request as in flight until the returned function is called (once), for a server
   * that tracks a request outside an effect (`NodeIngest`).
   */
  readonly unsafeEnter: () => () => void
  /** `true` once `drain` has started. */
  readonly draining: Effect.Effect<boolean>
  /**
   * Completes once `drain` has started (at once if it has): a request that waits on purpose (a
   * long poll) stops waiting and answers, so it does not hold the shutdown for its whole wait.
   */
  readonly awaitDraining: Effect.Effect<void>
  /** Starts draining and waits until nothing is in flight, at most `timeout`. */
  readonly drain: (timeout: Duration.DurationInput) => Effect.Effect<void>
  /**
   * Runs `f` once when draining starts (at once if it already has): a server stops accepting
   * connections there, so nothing new begins while the requests in flight finish.
   */
  readonly unsafeOnDrain: (f: () => void) => void
}

/** The service tag of the in-flight request counter that graceful shutdown waits on. */
export class Drain extends Context.Tag("@accord/adapters/http/Drain")<Drain, DrainService>() {}

/** A fresh counter, open for requests, with nothing in flight. */
export const make: Effect.Effect<DrainService> = Effect.sync(() => {
  let inFlight = 0
  let draining = false
  const onDrain: Array<() => void> = []
  const idle = Effect.unsafeMakeLatch(true)
  const started = Effect.unsafeMakeLatch(false)
  const enter = () => {
    if (inFlight++ === 0) idle.unsafeClose()
  }
  const leave = () => {
    if (--inFlight === 0) idle.unsafeOpen()
  }
  return {
    track: (self) =>
      Effect.acquireUseRelease(
        Effect.sync(enter),
        () => self,
        () => Effect.sync(leave)
      ),
    unsafeEnter: () => {
      enter()
      let left = false
      return () => {
        if (left) return
        left = true
        leave()
      }
    },
    draining: Effect.sync(() => draining),
    awaitDraining: started.await,
    unsafeOnDrain: (f) => {
      if (draining) f()
      else onDrain.push(f)
    },
    drain: (timeout) =>
      Effect.suspend(() => {
        if (!draining) for (const f of onDrain.splice(0)) f()
        draining = true
        started.unsafeOpen()
        // Interruptible, so the timeout ends the wait: `drain` runs in a finalizer, where the
        // awaited effect would otherwise be uninterruptible and the timeout would wait for it.
        return Effect.timeoutTo(Effect.interruptible(idle.await), {
          duration: timeout,
          onSuccess: () => undefined,
          onTimeout: () => undefined
        })
      })
  }
})

/** Provides a fresh `Drain` counter. */
export const layer: Layer.Layer<Drain> = Layer.effect(Drain, make)
