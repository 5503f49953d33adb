/**
 * The customer kit's durable work (spec "Rules for execution handling on the customer side" 6–8):
 * a worker runs each claimed execution through the host's `ActionExecutor`, persists the
 * completion body before any delivery, and delivers it to the service signed with the completion
 * secret until the service answers 2xx.
 *
 * Both steps are driven by the `Outbox`:
 *
 * - `customer.execute` (enqueued by the handler with the claim): before the executor runs, the
 *   record moves `accepted` → `executing` (a durable marker). An item whose record already says
 *   `executing`, or that failed before (`attempts > 0`), may have run: the worker then asks
 *   `ActionExecutor.lookup` first and runs `execute` only when the owning system says it never
 *   ran (rule 7: "looks up its record by providerIdempotencyKey, reconciles with the owning
 *   system"). The completion body (with a fresh `completionId`) and a `customer.complete` item are
 *   then committed in ONE `ActionLedger.transition` (`executing` → `completing`), before any
 *   delivery (rule 6).
 * - `customer.complete`: the stored body's exact bytes, signed per attempt with a fresh nonce and
 *   timestamp ("A redelivery reuses the same body and ID with a fresh nonce, timestamp and
 *   signature"); 2xx completes the item and moves the record to `completed` in one write; anything
 *   else is rescheduled with bounded exponential backoff and jitter, or after the service's
 *   `Retry-After` on a 429 or 503.
 *
 * The public module composes the worker service, its layers and settings over the host's port
 * (`internal/actionExecutor.ts`), the execution step (`internal/execution.ts`) and the delivery
 * step (`internal/completionDelivery.ts`).
 *
 * - `customer.payment_event` (with a `paymentProvider`, enqueued by the webhook route): a verified
 *   provider event reconciled against a fresh provider read into at most the completions the
 *   payment's state calls for, each committed with its `customer.complete` item
 *   (`internal/paymentEvents.ts`).
 *
 * Each kind runs in its own loop that keeps up to `concurrency` items in flight and leases more as
 * each one ends (`runLeased`): a slow or hung host call holds one slot, never the executions behind
 * it. A host call that has not returned within `executeTimeoutMillis` is abandoned and counts as an
 * ambiguous result, like a defect: the item is rescheduled with backoff and its next attempt asks
 * `lookup` first.
 *
 * Leases are short (`defaultLeaseMillis`, 10 s) and renewed every third of their length while the
 * item is worked (`leaseHeartbeat`, as the service's dispatcher does), so a killed worker's items
 * are free again within one lease, however long a host call may take. A worker that stops (its
 * scope closes) gives its in-flight items back due at once, their attempt counted, so the next
 * process takes them up without waiting for the lease, an execution through `lookup` first.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { ActionLedger } from "../ports/ActionLedger.ts"
import { ConnectorTransport } from "../ports/ConnectorTransport.ts"
import { Crypto } from "../ports/Crypto.ts"
import { toHex } from "../protocol/Hex.ts"
import { leaseHeartbeat, Outbox, type OutboxItem, runLeased } from "../ports/Outbox.ts"
import { makeSigner } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import type { Backoff } from "../protocol/Backoff.ts"
import { executeOutboxKind } from "./Handler.ts"
import { type KeyOptions, keyringOf } from "./Keyring.ts"
import { ActionExecutor } from "./internal/actionExecutor.ts"
import { makeDeliverItem, makeRecoverDelivered } from "./internal/completionDelivery.ts"
import { makeExecuteItem } from "./internal/execution.ts"
import { completeOutboxKind } from "./internal/kitRecord.ts"
import { makeLeasedItemEnds } from "./internal/leasedItem.ts"
import { makePaymentEventItem } from "./internal/paymentEvents.ts"
import { paymentEventOutboxKind } from "./internal/paymentRecord.ts"
import type { PaymentProviderService } from "./PaymentProvider.ts"

/**
 * The host's port: the executor service, its tag and the result it reports
 * (`internal/actionExecutor.ts`).
 */
export { ActionExecutor, type ActionExecutorService, type ExecutionResult } from "./internal/actionExecutor.ts"

/**
 * The completion outbox kind and the kit's record states after the claim (`internal/kitRecord.ts`).
 */
export { completeOutboxKind, kitStates } from "./internal/kitRecord.ts"

/**
 * The service's completion route, appended to `serviceUrl`.
 */
export const completionPath = "/api/funnels/v1/runtime/actions/customer-complete"

/**
 * The worker's retry backoff (`core/protocol/Backoff.ts`): 1 s doubling to a 5 minute cap.
 */
export const defaultBackoff: Backoff = { baseMillis: 1_000, capMillis: 300_000 }

/**
 * The default time limit of one host `execute` or `lookup` call: 60 s. The item's lease is renewed
 * by the heartbeat while the calls run, so no other worker leases an item whose host calls are
 * still running while this worker lives.
 */
export const defaultExecuteTimeoutMillis = 60_000

/**
 * The default lease of an execution, a completion delivery and a provider event's reconciliation:
 * 10 s, renewed every third of it while the item is worked. It is the recovery time after a crash:
 * a dead worker's items are free again at most one lease later.
 */
export const defaultLeaseMillis = 10_000

/**
 * The default lease of an execution (`defaultLeaseMillis`).
 */
export const defaultExecuteLeaseMillis = defaultLeaseMillis

/** The kit worker's settings: the workspace, service URL, completion path, secrets and timing. */
export interface CustomerWorkerSettings {
  readonly workspaceId: string
  /** The service's base URL; completions go to `serviceUrl + completionPath`. */
  readonly serviceUrl: string
  /** Poll interval when idle (default 500 ms); `wake` cuts it short. */
  readonly pollMillis?: number
  /**
   * Lease of an execution (default 10 s), renewed every third of it while the execution runs: a
   * crashed worker's executions are taken up again within it.
   */
  readonly executeLeaseMillis?: number
  /**
   * Time limit of one host `execute` or `lookup` call (default 60 s). A call that has not returned
   * by then is abandoned (its promise may still settle; its result is ignored) and the attempt is
   * ambiguous: rescheduled with backoff, and the retry asks `lookup` first.
   */
  readonly executeTimeoutMillis?: number
  /** Lease of a completion delivery (default 10 s), renewed every third of it while the attempt runs. */
  readonly deliveryLeaseMillis?: number
  /** Items in flight per loop, executions and deliveries each (default 16). */
  readonly concurrency?: number
  readonly backoff?: Backoff
  /**
   * The host's payment provider: verified webhook events recorded by the webhook route are
   * reconciled against it and turned into completions (`internal/paymentEvents.ts`), in a third loop.
   */
  readonly paymentProvider?: PaymentProviderService
  /** Lease of one provider event's reconciliation (default 10 s), renewed while it runs. */
  readonly paymentEventLeaseMillis?: number
}

/**
 * The settings plus the keys (`Keyring.ts`): a completion is signed with the completion secret of
 * the revision its action was claimed under.
 */
export type CustomerWorkerOptions = CustomerWorkerSettings & KeyOptions

/**
 * The kit's worker: executes claimed actions once and delivers their completions, by hand or as
 * loops.
 */
export interface CustomerWorkerService {
  /** One step by hand: leases due executions, runs them and waits for all; the number leased. */
  readonly executeDue: Effect.Effect<number, StorageError>
  /** One step by hand: leases due completion deliveries and attempts each once; the number leased. */
  readonly deliverDue: Effect.Effect<number, StorageError>
  /** Cuts the execution loop's idle wait short (the handler calls it after a claim). */
  readonly wake: Effect.Effect<void>
  /** One step by hand: leases recorded provider events and reconciles each once; the number leased. */
  readonly reconcileEventsDue: Effect.Effect<number, StorageError>
  /** Cuts the payment event loop's idle wait short (the webhook route calls it after recording an event). */
  readonly wakePaymentEvents: Effect.Effect<void>
  /**
   * Moves to `completed` the records left in `completing` although their completion was delivered
   * (by a kit killed between two writes that are now one); the number moved. `start` runs it once.
   */
  readonly recoverDelivered: Effect.Effect<number, StorageError>
}

/** The service tag of the kit's worker. */
export class CustomerWorker extends Context.Tag("@accord/core/customer/CustomerWorker")<
  CustomerWorker,
  CustomerWorkerService
>() {}

/**
 * What the kit's worker needs: the ledger, outbox, crypto, the transport and the host's executor.
 */
export type WorkerServices = ActionLedger | Outbox | Crypto | ConnectorTransport | ActionExecutor

/** The worker and its loops, not yet running. */
const build = (
  options: CustomerWorkerOptions
): Effect.Effect<
  { readonly worker: CustomerWorkerService; readonly loops: Effect.Effect<void, never, Scope.Scope> },
  never,
  WorkerServices
> =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    const outbox = yield* Outbox
    const crypto = yield* Crypto
    const signer = yield* makeSigner
    const transport = yield* ConnectorTransport
    const executor = yield* ActionExecutor
    const backoff = options.backoff ?? defaultBackoff
    const pollMillis = options.pollMillis ?? 500
    const executeLeaseMillis = options.executeLeaseMillis ?? defaultExecuteLeaseMillis
    const executeTimeout = Duration.millis(options.executeTimeoutMillis ?? defaultExecuteTimeoutMillis)
    const deliveryLeaseMillis = options.deliveryLeaseMillis ?? defaultLeaseMillis
    const concurrency = options.concurrency ?? 16
    const keyring = keyringOf(options)
    const owner = "customer-worker:" + toHex(yield* crypto.randomBytes(8))
    const url = options.serviceUrl.replace(/\/+$/, "") + completionPath
    const executeSignal = yield* Queue.sliding<void>(1)
    const deliverySignal = yield* Queue.sliding<void>(1)
    const ends = makeLeasedItemEnds({ outbox, crypto, owner, backoff })
    const executeItem = makeExecuteItem({
      ledger,
      crypto,
      executor,
      executeTimeout,
      ends,
      onPersisted: Queue.offer(deliverySignal, undefined)
    })
    const deliverItem = makeDeliverItem({ ledger, signer, transport, keyring, url, ends })
    const paymentSignal = yield* Queue.sliding<void>(1)
    const paymentEventLeaseMillis = options.paymentEventLeaseMillis ?? defaultLeaseMillis
    const paymentEventItem =
      options.paymentProvider === undefined
        ? (item: OutboxItem) => Effect.asVoid(ends.done(item))
        : makePaymentEventItem({
            ledger,
            crypto,
            provider: options.paymentProvider,
            ends,
            onPersisted: Queue.offer(deliverySignal, undefined)
          })

    const lease = (kind: string, leaseMillis: number) => (limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => outbox.lease({ owner, now, leaseMillis, limit, kinds: [kind] }))
    /**
     * An item's storage failure is logged; its lease expires and it is tried again. An item whose
     * worker stops mid-attempt is given back due at once (`release`).
     */
    const logged =
      (name: string, each: (item: OutboxItem) => Effect.Effect<void, StorageError>) => (item: OutboxItem) =>
        Effect.catchAllCause(
          Effect.onInterrupt(each(item), () => Effect.ignore(ends.release(item))),
          (cause) =>
            Cause.isInterruptedOnly(cause) ? Effect.interrupt : Effect.logWarning(`customer kit: ${name} failed`, cause)
        )
    const step = (kind: string, leaseMillis: number, each: (item: OutboxItem) => Effect.Effect<void, StorageError>) =>
      Effect.gen(function* () {
        const items = yield* lease(kind, leaseMillis)(concurrency)
        yield* Effect.forEach(items, each, { concurrency: "unbounded", discard: true })
        return items.length
      })
    const loop = (
      name: string,
      kind: string,
      leaseMillis: number,
      each: (item: OutboxItem) => Effect.Effect<void, StorageError>,
      wakeups: Queue.Queue<void>
    ) =>
      runLeased({
        name: `customer kit ${name}`,
        concurrency,
        idleMillis: pollMillis,
        lease: lease(kind, leaseMillis),
        idOf: (item) => item.id,
        work: logged(name, each),
        wakeup: Queue.take(wakeups),
        heartbeat: leaseHeartbeat({ outbox, owner, leaseMillis })
      })

    const recoverDelivered = makeRecoverDelivered({ ledger, outbox, workspaceId: options.workspaceId })
    const recoverAtStart = Effect.forkScoped(
      Effect.catchAllCause(
        Effect.flatMap(recoverDelivered, (moved) =>
          moved === 0 ? Effect.void : Effect.logInfo(`customer kit: ${moved} delivered completion(s) closed at start`)
        ),
        (cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logWarning("customer kit: closing delivered completions at start failed", cause)
      )
    )

    return {
      worker: {
        executeDue: step(executeOutboxKind, executeLeaseMillis, executeItem),
        deliverDue: step(completeOutboxKind, deliveryLeaseMillis, deliverItem),
        wake: Effect.asVoid(Queue.offer(executeSignal, undefined)),
        reconcileEventsDue: step(paymentEventOutboxKind, paymentEventLeaseMillis, paymentEventItem),
        wakePaymentEvents: Effect.asVoid(Queue.offer(paymentSignal, undefined)),
        recoverDelivered
      },
      loops: Effect.zipRight(
        recoverAtStart,
        Effect.zipRight(
          Effect.zipRight(
            loop("execution", executeOutboxKind, executeLeaseMillis, executeItem, executeSignal),
            loop("delivery", completeOutboxKind, deliveryLeaseMillis, deliverItem, deliverySignal)
          ),
          options.paymentProvider === undefined
            ? Effect.void
            : loop("payment events", paymentEventOutboxKind, paymentEventLeaseMillis, paymentEventItem, paymentSignal)
        )
      )
    }
  })

/**
 * Builds the worker; its loops are not running (`start` runs them). For driving it step by step.
 */
export const make = (options: CustomerWorkerOptions): Effect.Effect<CustomerWorkerService, never, WorkerServices> =>
  Effect.map(build(options), ({ worker }) => worker)

/**
 * Builds the worker and runs both loops until the scope closes.
 */
export const start = (
  options: CustomerWorkerOptions
): Effect.Effect<CustomerWorkerService, never, Scope.Scope | WorkerServices> =>
  Effect.flatMap(build(options), ({ loops, worker }) => Effect.as(loops, worker))

/** Provides the kit's worker, its loops running for the layer's lifetime. */
export const layer = (options: CustomerWorkerOptions): Layer.Layer<CustomerWorker, never, WorkerServices> =>
  Layer.scoped(CustomerWorker, start(options))
