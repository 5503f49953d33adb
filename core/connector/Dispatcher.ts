/**
 * Dispatch of an authorized action to the customer's endpoint (spec "Execution request body",
 * "Execution acknowledgement body", "States and transitions", "Errors"; docs/decisions.md,
 * "Interoperability rules").
 *
 * Intake (`Intake.ts`) persists the action (state `dispatching`) and its `service.dispatch` outbox
 * item in one transaction. A dispatcher leases due items and delivers them: the execution body is
 * built and signed per delivery, and only a signed HTTP 202 `dispatch_response` acknowledgement that
 * echoes every binding of this delivery counts. Anything else after the request may have reached
 * the endpoint is an unknown outcome: the action moves to `unknown_outcome` and the same key is
 * delivered again later with bounded exponential backoff and jitter — never a new key, so the
 * customer's idempotent claim makes the retry safe. A failure before anything was sent is retried
 * without changing the state. A Payment action passes the payment capability gate before every
 * attempt; when it does not, nothing is sent and the action is `blocked` (see `internal/delivery.ts`).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { ActionLedger, type ActionRecord, type LeasedAction } from "../ports/ActionLedger.ts"
import { DispatchSignal } from "../ports/DispatchSignal.ts"
import { type HandoffSlots, leaseHeartbeat, Outbox, type OutboxItem, runLeased } from "../ports/Outbox.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { type Backoff, pastDeadline, randomBackoffDelay } from "../protocol/Backoff.ts"
import { dispatchOutboxKind } from "./Action.ts"
import type { DispatchPayload } from "./Intake.ts"
import { answer, applyTrigger } from "./internal/applyTrigger.ts"
import { type DeliveryResult, type DeliveryServices, makeDeliverAction } from "./internal/delivery.ts"

/** What delivering one action needs (the dispatcher's services but the outbox). */
export type { DeliveryServices } from "./internal/delivery.ts"

/**
 * How one delivery ended: acknowledged (`accepted` or `rejected`), ambiguous (the request may have
 * reached the endpoint), not sent, skipped (nothing to deliver) or blocked by the payment gate.
 */
export type { DeliveryResult } from "./internal/delivery.ts"

/**
 * The retry backoff of a delivery (Accord's choice; the spec leaves it open): 1 s doubling per
 * attempt up to 5 minutes, each delay drawn uniformly from its upper half (jitter), for up to 24
 * hours after intake. After that the action keeps its state for operators and reconciliation.
 */
export const retrySchedule = {
  baseMillis: 1_000,
  capMillis: 5 * 60_000,
  deadlineMillis: 24 * 60 * 60_000
} as const satisfies Backoff

/**
 * The connector request time-out (Accord's choice): connect, send and the whole response. It is
 * the outbound transport's own default (`HttpTransport`, configurable there); a dispatcher passes
 * its `timeoutMillis` option only when one is set.
 */
export const dispatchTimeout: Duration.Duration = Duration.seconds(10)

/**
 * The delivery failures that say the endpoint could not be reached, or cut the exchange off, rather
 * than that it answered wrongly: nothing listening, a name that did not resolve, a time-out, a
 * reset, and the gateway answers of a proxy in front of an endpoint that is down. When the endpoint
 * of a connection revision acknowledges a delivery again, the dispatcher makes the deliveries to it
 * that are waiting out their backoff after one of these due at once (`ActionLedger.expediteRetries`):
 * after an outage, recovery does not wait for the longest backoff. Each keeps its attempt count.
 * While the endpoint stays unreachable, the one due soonest is made due every `probeMillis`, so
 * the first acknowledgement after the outage does not wait for a backoff either.
 */
export const unreachableReasons: ReadonlyArray<string> = [
  "connect",
  "dns",
  "timeout",
  "reset",
  "status_502",
  "status_503",
  "status_504"
]

/** `runOnce`'s lease when the options name none: longer than the delivery time-out, as nothing renews it. */
const defaultLeaseMillis = 30_000

/**
 * `runDispatcher`'s lease when its options name none (Accord's choice): the leases of the
 * deliveries in flight are renewed every third of it (`leaseHeartbeat`), so a delivery may run
 * longer, and after a crash the items the dead process held are free again within 10 s.
 */
export const runningLeaseMillis = 10_000

/**
 * The dispatcher's settings: its lease owner name, batch size, concurrency, lease, time-out and
 * probe timing.
 */
export interface DispatcherOptions {
  /** Lease owner name, unique per worker. */
  readonly owner: string
  /** Items leased by one `runOnce` (default 64); `runDispatcher` leases as slots free up instead. */
  readonly batchSize?: number
  /** Deliveries in flight at once (default 32). */
  readonly concurrency?: number
  /**
   * Lease length. `runOnce` does not renew it, so there it must exceed the time-out (default 30 s);
   * `runDispatcher` renews the leases of the deliveries in flight every third of it (default
   * `runningLeaseMillis`, 10 s).
   */
  readonly leaseMillis?: number
  /** Per-delivery time-out (default: the transport's own, `dispatchTimeout` for `HttpTransport`). */
  readonly timeoutMillis?: number
  /**
   * While a connection revision's endpoint cannot be reached, how often one of the deliveries
   * waiting on it is made due to try it again (default `probeMillis`, 5 s).
   */
  readonly probeMillis?: number
}

/**
 * How often a dispatcher tries again an endpoint it could not reach, by making the delivery to it
 * due soonest due at once (Accord's choice): an endpoint back up is found within a few seconds,
 * and one that is down gets one request per interval, besides the deliveries' own backoff.
 */
export const probeMillis = 5_000

/** What the dispatcher needs: everything a delivery needs, and the outbox it leases from. */
export type DispatcherServices = DeliveryServices | Outbox

/**
 * The dispatcher: leases due execution requests and delivers them to the customer endpoint, one
 * step by hand or as a loop.
 */
export interface Dispatcher {
  /** Leases due items and delivers them; returns how many were leased. */
  readonly runOnce: Effect.Effect<number, StorageError>
  /** Leases up to `limit` due dispatch items for this dispatcher's owner, each with its action. */
  readonly lease: (limit: number) => Effect.Effect<ReadonlyArray<LeasedAction>, StorageError>
  /** Delivers one leased action now (also used by `runOnce`). */
  readonly deliver: (item: OutboxItem) => Effect.Effect<DeliveryResult, StorageError>
  /** Delivers a leased item with the action read with it. */
  readonly deliverLeased: (leased: LeasedAction) => Effect.Effect<DeliveryResult, StorageError>
}

/**
 * Builds a dispatcher bound to its services.
 */
export const makeDispatcher = (options: DispatcherOptions): Effect.Effect<Dispatcher, never, DispatcherServices> =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    const outbox = yield* Outbox
    const leaseMillis = options.leaseMillis ?? defaultLeaseMillis
    const deliverAction = yield* makeDeliverAction(options)

    /**
     * Past the delivery deadline the action keeps its state (`unknown_outcome`, or `dispatching` if
     * nothing was ever sent) for operators and reconciliation; the history says delivery stopped.
     */
    const abandon = (record: ActionRecord, attempts: number, lastReason: string) =>
      applyTrigger<void, never, never>({
        ledger,
        actionRequestId: record.actionRequestId,
        decide: (current) =>
          Effect.succeed(
            current.state !== "dispatching" && current.state !== "unknown_outcome"
              ? answer(undefined)
              : {
                  _tag: "Write" as const,
                  write: {
                    toState: current.state,
                    history: { trigger: "delivery_abandoned", detail: { attempts, lastReason } }
                  },
                  settle: () => Effect.void
                }
          )
      }).pipe(Effect.asVoid)

    /**
     * Recovery after an outage. `reachable`: the connection revisions whose endpoint acknowledged a
     * delivery of this dispatcher since it started. `unreachable`: those a delivery of this
     * dispatcher found unreachable (`unreachableReasons`, noted once its item was rescheduled) and
     * none acknowledged since, with when that began and when one of their waiting deliveries was
     * last made due. An acknowledgement makes the revision's deliveries waiting after such a failure
     * due at once (`expediteRetries`) when it is the first from that revision since this dispatcher
     * started (other workers, or this process before a crash, may have left some waiting), or when
     * the revision was unreachable for `probeMillis` or longer; after a shorter spell (an endpoint
     * shedding load) they keep their backoff. While a revision is unreachable, a lease makes its
     * delivery due soonest due every `probeMillis` (`probe`, one statement per lease at most).
     */
    const reachable = new Set<string>()
    const unreachable = new Map<
      string,
      { readonly connectionId: string; readonly revision: number; readonly since: number; probedAt: number }
    >()
    const everyMillis = options.probeMillis ?? probeMillis
    const expedite = (connectionId: string, revision: number, now: number, limit?: number) =>
      ledger.expediteRetries({
        connectionId,
        revision,
        kinds: [dispatchOutboxKind],
        errors: unreachableReasons,
        now,
        ...(limit === undefined ? {} : { limit })
      })
    const probe = (now: number): Effect.Effect<void> | undefined => {
      for (const [key, down] of unreachable) {
        if (now - down.probedAt < everyMillis) continue
        down.probedAt = now
        return expedite(down.connectionId, down.revision, now, 1).pipe(
          Effect.flatMap((made) =>
            Effect.sync(() => {
              // Nothing waits on it: forget it until a delivery to it fails again.
              if (made === 0 && unreachable.get(key) === down) unreachable.delete(key)
            })
          ),
          Effect.catchAll((error) =>
            Effect.logWarning("dispatch: could not make a waiting delivery due", error.message)
          )
        )
      }
      return undefined
    }
    /** Notes a delivery's outcome for recovery; the effect to run, or `undefined` when there is nothing to do. */
    const noteOutcome = (
      record: ActionRecord,
      result: DeliveryResult,
      now: number
    ): Effect.Effect<void> | undefined => {
      const key = `${record.connectionId}:${record.revision}`
      if (result._tag === "NotSent" || result._tag === "Ambiguous") {
        if (unreachableReasons.includes(result.reason) && !unreachable.has(key)) {
          unreachable.set(key, {
            connectionId: record.connectionId,
            revision: record.revision,
            since: now,
            probedAt: now
          })
        }
        return undefined
      }
      if (result._tag !== "Acknowledged") return undefined
      const down = unreachable.get(key)
      const first = !reachable.has(key)
      if (down === undefined && !first) return undefined
      unreachable.delete(key)
      reachable.add(key)
      return !first && now - down!.since < everyMillis
        ? undefined
        : expedite(record.connectionId, record.revision, now).pipe(
            Effect.asVoid,
            // Failed or interrupted: the next acknowledgement tries again.
            Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => reachable.delete(key)))),
            Effect.catchAll((error) =>
              Effect.logWarning("dispatch: could not make waiting deliveries due", error.message)
            )
          )
    }

    /** Delivers a leased item; `known` is its action when already read with the lease. */
    const deliverItem = (
      item: OutboxItem,
      known?: Option.Option<ActionRecord>
    ): Effect.Effect<DeliveryResult, StorageError> =>
      Effect.clockWith((clock) =>
        Effect.gen(function* () {
          const payload = item.payload as DispatchPayload
          const record = known ?? (yield* ledger.get(payload.actionRequestId))
          const { itemCompleted, result } = Option.isNone(record)
            ? { result: { _tag: "Skipped", reason: "unknown_action" } as const, itemCompleted: false }
            : yield* deliverAction(
                record.value,
                item.attempts + 1,
                { id: item.id, owner: options.owner },
                payload.providerConnectionGeneration
              )
          const settled = result._tag === "Acknowledged" || result._tag === "Skipped" || result._tag === "Blocked"
          // Settled with its item completed in the same write (an acknowledgement): nothing is left to do.
          if (settled && itemCompleted) {
            const recovered = Option.isSome(record)
              ? noteOutcome(record.value, result, clock.unsafeCurrentTimeMillis())
              : undefined
            if (recovered !== undefined) yield* recovered
            return result
          }
          const now = clock.unsafeCurrentTimeMillis()
          const expired = Option.isSome(record) && pastDeadline(retrySchedule, record.value.createdAt, now)
          if (settled || expired) {
            if (!settled && Option.isSome(record)) yield* abandon(record.value, item.attempts + 1, result.reason)
            if (!itemCompleted) yield* outbox.complete({ id: item.id, owner: options.owner, now })
          } else {
            const delay = yield* randomBackoffDelay(retrySchedule, item.attempts)
            yield* outbox.reschedule({
              id: item.id,
              owner: options.owner,
              nextAttemptAt: now + delay,
              error: result.reason
            })
          }
          // After the item's own write: an acknowledgement from now on makes it due too.
          const noted = Option.isSome(record) ? noteOutcome(record.value, result, now) : undefined
          if (noted !== undefined) yield* noted
          return result
        })
      )

    const deliver = (item: OutboxItem): Effect.Effect<DeliveryResult, StorageError> => deliverItem(item)

    const lease = (limit: number) =>
      Effect.clockWith((clock) => {
        const now = clock.unsafeCurrentTimeMillis()
        const leased = ledger.leaseWithActions({
          owner: options.owner,
          now,
          leaseMillis,
          limit,
          kinds: [dispatchOutboxKind]
        })
        const probed = unreachable.size === 0 ? undefined : probe(now)
        return probed === undefined ? leased : Effect.zipRight(probed, leased)
      })
    const deliverLeased = ({ action, item }: LeasedAction) => deliverItem(item, action)

    const runOnce = Effect.gen(function* () {
      const leased = yield* lease(options.batchSize ?? 64)
      yield* Effect.forEach(leased, (one) => deliverLogged(deliverLeased(one)), {
        concurrency: options.concurrency ?? 32,
        discard: true
      })
      return leased.length
    })

    return { runOnce, lease, deliver, deliverLeased }
  })

/**
 * One item's storage failure must not interrupt its siblings' deliveries in flight: it is logged,
 * and its lease expires so another round (or worker) delivers it again, same key.
 */
export const deliverLogged = (delivery: Effect.Effect<DeliveryResult, StorageError>): Effect.Effect<unknown> =>
  Effect.catchAll(delivery, (error) => Effect.logWarning("dispatch: storage failed during a delivery", error.message))

/**
 * A dispatcher running until its scope closes. It keeps up to `concurrency` deliveries in flight
 * and leases more as soon as a slot frees (a slow customer endpoint holds one slot, not a whole
 * round); when nothing is due it waits for the `DispatchSignal` (intake wakes it) or `idleMillis`.
 * With `takeFromIntake`, it also receives from intake, through the `DispatchSignal`, the actions
 * created already leased to it in one of its free slots, and delivers them at once (no lease
 * statement between). The leases of the deliveries in flight are renewed every third of the lease
 * (`runningLeaseMillis`, 10 s, unless the options name one), so a crashed dispatcher's deliveries
 * are taken up again within that lease.
 */
export const runDispatcher = (
  options: DispatcherOptions & {
    readonly idleMillis?: number
    /**
     * Takes new actions straight from intake in its free slots, created already leased to it (see
     * `DispatchSignal`'s handoff). Off by default: measured on this machine (docs/performance.md),
     * deliveries started one intake batch at a time share fewer of the following statements than
     * those a lease starts together, and cost more CPU per action.
     */
    readonly takeFromIntake?: boolean
    /** Runs after each delivery with its result (metrics, tests, benchmarks). */
    readonly onDelivery?: (item: OutboxItem, result: DeliveryResult) => Effect.Effect<void>
  }
): Effect.Effect<void, never, DispatcherServices | DispatchSignal | Scope.Scope> =>
  Effect.gen(function* () {
    const leaseMillis = options.leaseMillis ?? runningLeaseMillis
    const dispatcher = yield* makeDispatcher({ ...options, leaseMillis })
    const signal = yield* DispatchSignal
    const outbox = yield* Outbox
    yield* runLeased({
      name: "dispatch",
      concurrency: options.concurrency ?? 32,
      idleMillis: options.idleMillis ?? 250,
      lease: dispatcher.lease,
      idOf: (leased) => leased.item.id,
      work: (leased) =>
        deliverLogged(
          options.onDelivery === undefined
            ? dispatcher.deliverLeased(leased)
            : Effect.tap(dispatcher.deliverLeased(leased), (result) => options.onDelivery!(leased.item, result))
        ),
      wakeup: signal.next,
      // A crashed dispatcher's deliveries are free again within one lease; a slow one keeps its own.
      heartbeat: leaseHeartbeat({ outbox, owner: options.owner, leaseMillis }),
      // Intake hands new actions straight to a free slot, created already leased to this owner.
      ...(options.takeFromIntake === true
        ? {
            handoff: (slots: HandoffSlots<LeasedAction>) =>
              signal.receive({
                reserve: Effect.map(
                  slots.reserve,
                  Option.map((slot) => ({
                    owner: options.owner,
                    leaseMillis,
                    start: slot.start,
                    release: slot.release
                  }))
                )
              })
          }
        : {})
    })
  })
