/**
 * Connector metrics recorded at the port boundary, so the dispatcher, the reconciler and the
 * completion intake in `core/connector` stay untouched: every outbound connector call passes the
 * `ConnectorTransport` (calls in flight), every retry passes `Outbox.reschedule`, and every state
 * change passes `ActionLedger.transition`, whose history trigger says what happened
 * (`delivery_ambiguous`: an unknown outcome; `completion`: a completion applied). The runtime wraps
 * the ports it composes (`runtimes/Server.ts`).
 */
import * as Context from "effect/Context"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { ActionLedger, type ActionLedgerService } from "../../core/ports/ActionLedger.ts"
import { ConnectorTransport, type ConnectorTransportService } from "../../core/ports/ConnectorTransport.ts"
import { Outbox, type OutboxService } from "../../core/ports/Outbox.ts"
import * as Metrics from "../../core/telemetry/Metrics.ts"

export const transport = (service: ConnectorTransportService): ConnectorTransportService => ({
  ...service,
  post: (request) => Metrics.inFlight(Metrics.dispatchInFlight)(service.post(request))
})

export const outbox = (service: OutboxService): OutboxService => ({
  ...service,
  reschedule: (options) =>
    Effect.tap(service.reschedule(options), (rescheduled) =>
      rescheduled ? Metric.increment(Metrics.dispatchRetries) : Effect.void
    )
})

export const ledger = (service: ActionLedgerService): ActionLedgerService => ({
  ...service,
  transition: (options) =>
    Effect.tap(service.transition(options), (result) => {
      if (result._tag !== "Applied") return Effect.void
      if (options.history.trigger === "delivery_ambiguous") return Metric.increment(Metrics.dispatchUnknownOutcomes)
      if (options.history.trigger === "completion") return Metrics.count(Metrics.completions, "state", options.toState)
      return Effect.void
    })
})

/**
 * The same context with its `ActionLedger`, `Outbox` and `ConnectorTransport` (those present) instrumented.
 */
export const instrument = <A>(context: Context.Context<A>): Context.Context<A> => {
  let out = context as Context.Context<unknown>
  const swap = <I, S>(tag: Context.Tag<I, S>, wrap: (service: S) => S) => {
    const found = Context.getOption(out as Context.Context<I>, tag)
    if (found._tag === "Some") out = Context.add(out, tag, wrap(found.value))
  }
  swap(ActionLedger, ledger)
  swap(Outbox, outbox)
  swap(ConnectorTransport, transport)
  return out as Context.Context<A>
}

/**
 * A layer whose output is instrumented (`instrument`).
 */
export const layer = <A, E, R>(self: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> => Layer.map(self, instrument)

const acceptedIngest = Metrics.ingestAccepted

/**
 * Counts an ingest answer: 2xx accepted, anything else refused under its problem `code`. At once,
 * outside an effect (the ingest route answers from callbacks).
 */
export const unsafeIngestAnswered = (answer: { readonly status: number; readonly body: unknown }): void => {
  if (answer.status >= 200 && answer.status < 300) return acceptedIngest.unsafeUpdate(1, [])
  const code =
    typeof answer.body === "object" && answer.body !== null && "code" in answer.body ? answer.body.code : undefined
  Metrics.unsafeCount(Metrics.ingestRefused, "code", typeof code === "string" ? code : `status_${answer.status}`)
}

/**
 * Counts a refused completion whose signature or signed headers did not verify, under its code.
 */
export const completionRefused = (error: {
  readonly _tag: string
  readonly kind?: string | undefined
  readonly code?: string | undefined
}): Effect.Effect<void> =>
  error._tag === "CompletionRefused" && error.kind === "unauthenticated"
    ? Metrics.count(Metrics.verificationFailures, "reason", error.code ?? "other")
    : Effect.void

/**
 * A connection pool's counters, as `pg.Pool` exposes them.
 */
export interface PoolUse {
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
}

/** The pools open in this process (a process usually has one; tests and tools may open more). */
const openPools = new Set<PoolUse>()

const sampleOpenPools = Effect.suspend(() => {
  let [total, idle, waiting] = [0, 0, 0]
  for (const pool of openPools) {
    total += pool.totalCount
    idle += pool.idleCount
    waiting += pool.waitingCount
  }
  return Effect.all(
    [
      Metric.set(Metric.tagged(Metrics.databasePool, "state", "total"), total),
      Metric.set(Metric.tagged(Metrics.databasePool, "state", "idle"), idle),
      Metric.set(Metric.tagged(Metrics.databasePool, "state", "waiting"), waiting)
    ],
    { discard: true }
  )
})

/**
 * Counts `pool` in `accord_db_pool_connections{state}` (summed over every open pool, sampled every
 * second) until the scope closes.
 */
export const trackPool = (pool: PoolUse): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => void openPools.add(pool)),
    () =>
      Effect.zipRight(
        Effect.sync(() => void openPools.delete(pool)),
        sampleOpenPools
      )
  ).pipe(
    // Sampled on the wall clock, whatever Clock the caller runs under: a test's TestClock moved
    // a day ahead must not replay 86,400 samples.
    Effect.zipRight(
      Effect.forkScoped(Effect.withClock(Effect.repeat(sampleOpenPools, Schedule.spaced("1 second")), Clock.make()))
    ),
    Effect.asVoid
  )
