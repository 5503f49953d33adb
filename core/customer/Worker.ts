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
 *   signature"); 2xx completes the item and moves the record to `completed`; anything else is
 *   rescheduled with bounded exponential backoff and jitter.
 *
 * Each kind runs in its own loop that keeps up to `concurrency` items in flight and leases more as
 * each one ends (`runLeased`): a slow or hung host call holds one slot, never the executions behind
 * it. A host call that has not returned within `executeTimeoutMillis` is abandoned and counts as an
 * ambiguous result, like a defect: the item is rescheduled with backoff and its next attempt asks
 * `lookup` first.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { type ActionRecord, ActionLedger } from "../ports/ActionLedger.ts"
import { ConnectorTransport, type TransportFailure } from "../ports/ConnectorTransport.ts"
import { Crypto } from "../ports/Crypto.ts"
import { toHex } from "../protocol/Hex.ts"
import { type CatalogEvidenceType, Completion, type CompletionOutcome, type EvidenceScalar } from "../protocol/messages/Completion.ts"
import { Outbox, type OutboxItem, runLeased } from "../ports/Outbox.ts"
import { makeSigner, protocolVersion } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import { type Backoff, backoffDelay } from "../protocol/Backoff.ts"
import { ClaimedExecution } from "./ClaimedExecution.ts"
import { executeOutboxKind } from "./Handler.ts"
import { completionKeysFor, type KeyOptions, keyringOf } from "./Keyring.ts"

/**
 * The outbox kind of a completion delivery (dedupe key: the action request id).
 *
 * @since 0.1.0
 */
export const completeOutboxKind = "customer.complete"

/**
 * The service's completion route, appended to `serviceUrl`.
 *
 * @since 0.1.0
 */
export const completionPath = "/api/funnels/v1/runtime/actions/customer-complete"

/**
 * The kit's record states after the claim (`accepted`, `rejected` are the handler's).
 *
 * @since 0.1.0
 */
export const kitStates = {
  executing: "executing",
  completing: "completing",
  completed: "completed"
} as const

/**
 * The business outcome the host observed, sent as the completion's evidence unchanged: the spec's
 * `entitlement`, `reasonCode` and `source` (a catalog evidence type for the service to verify the
 * action), and up to 15 further scalar evidence fields. An `accountId` field, if the host sets one,
 * must be the action's account, or the service does not match the evidence.
 *
 * @since 0.1.0
 */
export interface ExecutionResult {
  readonly outcome: CompletionOutcome
  readonly providerReference: string
  readonly evidence: {
    readonly entitlement: string
    readonly reasonCode: string
    readonly source: CatalogEvidenceType
    readonly [field: string]: EvidenceScalar
  }
}

/**
 * The host's side of an execution.
 *
 * - `execute` performs exactly the claimed operation. It should pass `providerIdempotencyKey` to the
 *   owning system (billing, subscription, entitlement), so that even a run the kit could not record
 *   (a crash mid-call, or a call abandoned at its time limit that goes on running) is not repeated
 *   there. A defect or a call past the time limit is treated as an ambiguous result.
 * - `lookup` reads the owning system for a run under that key: `Some(result)` if it ran (with the
 *   outcome observed now), `None` if it never ran. Called before any second `execute`.
 *
 * @since 0.1.0
 */
export interface ActionExecutorService {
  readonly execute: (request: ClaimedExecution) => Effect.Effect<ExecutionResult>
  readonly lookup: (providerIdempotencyKey: string) => Effect.Effect<Option.Option<ExecutionResult>>
}

/**
 * @since 0.1.0
 */
export class ActionExecutor extends Context.Tag("@accord/core/customer/ActionExecutor")<
  ActionExecutor,
  ActionExecutorService
>() {}

/**
 * The worker's retry backoff (`core/protocol/Backoff.ts`): 1 s doubling to a 5 minute cap.
 *
 * @since 0.1.0
 */
export const defaultBackoff: Backoff = { baseMillis: 1_000, capMillis: 300_000 }

/**
 * The default time limit of one host `execute` or `lookup` call: 60 s. A run may make both calls,
 * and both fit well inside the 5 minute execution lease, so no other worker can lease an item
 * whose host calls are still running.
 *
 * @since 0.1.0
 */
export const defaultExecuteTimeoutMillis = 60_000

/**
 * The default lease of an execution: 5 minutes.
 *
 * @since 0.1.0
 */
export const defaultExecuteLeaseMillis = 300_000

/**
 * @since 0.1.0
 */
export interface CustomerWorkerSettings {
  readonly workspaceId: string
  /** The service's base URL; completions go to `serviceUrl + completionPath`. */
  readonly serviceUrl: string
  /** Poll interval when idle (default 500 ms); `wake` cuts it short. */
  readonly pollMillis?: number
  /** Lease of an execution (default 5 minutes): must be longer than `executeTimeoutMillis`. */
  readonly executeLeaseMillis?: number
  /**
   * Time limit of one host `execute` or `lookup` call (default 60 s). A call that has not returned
   * by then is abandoned (its promise may still settle; its result is ignored) and the attempt is
   * ambiguous: rescheduled with backoff, and the retry asks `lookup` first.
   */
  readonly executeTimeoutMillis?: number
  /** Lease of one delivery attempt (default 60 s): longer than the transport's time-out. */
  readonly deliveryLeaseMillis?: number
  /** Items in flight per loop, executions and deliveries each (default 16). */
  readonly concurrency?: number
  readonly backoff?: Backoff
}

/**
 * The settings plus the keys (`Keyring.ts`): a completion is signed with the completion secret of
 * the revision its action was claimed under.
 *
 * @since 0.1.0
 */
export type CustomerWorkerOptions = CustomerWorkerSettings & KeyOptions

/**
 * @since 0.1.0
 */
export interface CustomerWorkerService {
  /** One step by hand: leases due executions, runs them and waits for all; the number leased. */
  readonly executeDue: Effect.Effect<number, StorageError>
  /** One step by hand: leases due completion deliveries and attempts each once; the number leased. */
  readonly deliverDue: Effect.Effect<number, StorageError>
  /** Cuts the execution loop's idle wait short (the handler calls it after a claim). */
  readonly wake: Effect.Effect<void>
}

/**
 * @since 0.1.0
 */
export class CustomerWorker extends Context.Tag("@accord/core/customer/CustomerWorker")<
  CustomerWorker,
  CustomerWorkerService
>() {}

const ExecutePayload = Schema.Struct({ actionRequestId: Schema.String })
const DeliveryPayload = Schema.Struct({
  actionRequestId: Schema.String,
  completionId: Schema.String,
  body: Schema.String,
  /** The revision whose completion secret signs it (absent in items written before revisions). */
  revision: Schema.optional(Schema.Number)
})
const decodeExecutePayload = Schema.decodeUnknownOption(ExecutePayload)
const decodeDeliveryPayload = Schema.decodeUnknownOption(DeliveryPayload)
const decodeClaimed = Schema.decodeUnknownOption(ClaimedExecution)
const validCompletion = Schema.is(Completion)

const encoder = new TextEncoder()

const failureText = (failure: TransportFailure): string => `transport_${failure.reason}`

type WorkerServices = ActionLedger | Outbox | Crypto | ConnectorTransport | ActionExecutor

/** The worker and its two loops, not yet running. */
const build = (
  options: CustomerWorkerOptions
): Effect.Effect<{ readonly worker: CustomerWorkerService; readonly loops: Effect.Effect<void, never, Scope.Scope> }, never, WorkerServices> =>
  Effect.gen(function*() {
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
    const deliveryLeaseMillis = options.deliveryLeaseMillis ?? 60_000
    const concurrency = options.concurrency ?? 16
    const keyring = keyringOf(options)
    const owner = "customer-worker:" + toHex(yield* crypto.randomBytes(8))
    const url = options.serviceUrl.replace(/\/+$/, "") + completionPath
    const executeSignal = yield* Queue.sliding<void>(1)
    const deliverySignal = yield* Queue.sliding<void>(1)

    const random01 = Effect.map(
      crypto.randomBytes(4),
      (b) => (((b[0]! << 24) >>> 0) + (b[1]! << 16) + (b[2]! << 8) + b[3]!) / 2 ** 32
    )
    const reschedule = (item: OutboxItem, error: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const delay = backoffDelay(backoff, item.attempts, yield* random01)
        yield* outbox.reschedule({ id: item.id, owner, nextAttemptAt: now + delay, error })
      })
    const done = (item: OutboxItem) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => outbox.complete({ id: item.id, owner, now }))

    /** The completion body for `result`; a result the schema refuses becomes an honest `unknown`. */
    const completionBody = (record: ActionRecord, result: ExecutionResult) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const completionId = "cmp_" + toHex(yield* crypto.randomBytes(16))
        const body = {
          type: "service.customer_action.completion" as const,
          protocolVersion,
          workspaceId: record.workspaceId,
          actionRequestId: record.actionRequestId,
          providerIdempotencyKey: record.providerIdempotencyKey,
          providerReference: result.providerReference,
          completionId,
          completedAt: formatTimestamp(now),
          outcome: result.outcome,
          evidence: result.evidence
        }
        if (validCompletion(body)) return { body, completionId, now }
        yield* Effect.logWarning("customer kit: the executor's result is not a valid completion; reporting unknown")
        return {
          body: {
            ...body,
            providerReference: record.providerIdempotencyKey,
            outcome: "unknown" as const,
            evidence: {
              entitlement: "",
              reasonCode: "invalid_executor_result",
              source: "authenticated_completion",
              accountId: record.accountId
            }
          },
          completionId,
          now
        }
      })

    /** Marks the record `executing` before the first run; the marker survives a crash. */
    const markExecuting = (record: ActionRecord) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        return yield* ledger.transition({
          actionRequestId: record.actionRequestId,
          expectedVersion: record.version,
          toState: kitStates.executing,
          at: now,
          history: { at: now, trigger: "customer.execution_started", detail: {} }
        })
      })

    /** One host call within its time limit; past it the call is abandoned and fails with `reason`. */
    const limited = <A>(call: Effect.Effect<A>, reason: "execute_timeout" | "lookup_timeout") =>
      Effect.timeoutFail(call, { duration: executeTimeout, onTimeout: () => reason })

    const runExecutor = (record: ActionRecord, request: ClaimedExecution, attempted: boolean) => {
      const execute = limited(executor.execute(request), "execute_timeout")
      return attempted
        ? Effect.flatMap(
          limited(executor.lookup(record.providerIdempotencyKey), "lookup_timeout"),
          Option.match({ onNone: () => execute, onSome: Effect.succeed })
        )
        : execute
    }

    const executeItem = (item: OutboxItem): Effect.Effect<void, StorageError> =>
      Effect.gen(function*() {
        const payload = decodeExecutePayload(item.payload)
        const found = Option.isSome(payload) ? yield* ledger.get(payload.value.actionRequestId) : Option.none()
        if (Option.isNone(found)) {
          yield* Effect.logWarning("customer kit: execute item without a record; dropped")
          yield* done(item)
          return
        }
        let record = found.value
        if (record.state !== "accepted" && record.state !== kitStates.executing) {
          // Already completed (a crash after the completion commit, before this item was closed).
          yield* done(item)
          return
        }
        const request = decodeClaimed(record.request)
        if (Option.isNone(request)) return yield* reschedule(item, "undecodable_request")
        const attempted = item.attempts > 0 || record.state === kitStates.executing
        if (record.state === "accepted") {
          const marked = yield* markExecuting(record)
          if (marked._tag !== "Applied") return yield* reschedule(item, "stale_record")
          record = marked.record
        }
        const exit = yield* Effect.exit(runExecutor(record, request.value, attempted))
        if (Exit.isFailure(exit)) {
          // Ambiguous: the operation may have run. The next attempt asks `lookup` first.
          const reason = Option.getOrElse(Cause.failureOption(exit.cause), () => "executor_defect")
          yield* Effect.logWarning(`customer kit: execution attempt ambiguous (${reason}); retrying through lookup`)
          return yield* reschedule(item, reason)
        }
        const { body, completionId, now } = yield* completionBody(record, exit.value)
        const persisted = yield* ledger.transition({
          actionRequestId: record.actionRequestId,
          expectedVersion: record.version,
          toState: kitStates.completing,
          at: now,
          history: {
            at: now,
            trigger: attempted ? "customer.completion_recorded_after_lookup" : "customer.completion_recorded",
            detail: { completionId, outcome: body.outcome }
          },
          outbox: {
            id: `${record.actionRequestId}:complete`,
            kind: completeOutboxKind,
            dedupeKey: record.actionRequestId,
            payload: { actionRequestId: record.actionRequestId, completionId, body: JSON.stringify(body), revision: record.revision },
            nextAttemptAt: now,
            createdAt: now
          }
        })
        // Stale: another worker got there first (our lease had expired); its completion stands.
        yield* done(item)
        if (persisted._tag === "Applied") yield* Queue.offer(deliverySignal, undefined)
      })

    const deliverItem = (item: OutboxItem): Effect.Effect<void, StorageError> =>
      Effect.gen(function*() {
        const payload = decodeDeliveryPayload(item.payload)
        if (Option.isNone(payload)) return yield* reschedule(item, "undecodable_completion")
        const bytes = encoder.encode(payload.value.body)
        const entry = completionKeysFor(keyring, payload.value.revision, item)
        if (entry === undefined) return yield* reschedule(item, "no_keys")
        const headers = yield* signer.sign({ purpose: "completion", keys: entry.keys, body: bytes })
        const response = yield* Effect.either(transport.post({ url, headers: { ...headers }, body: bytes }))
        if (Either.isLeft(response)) return yield* reschedule(item, failureText(response.left))
        const status = response.right.status
        if (status < 200 || status > 299) return yield* reschedule(item, `status_${status}`)
        yield* done(item)
        const record = yield* ledger.get(payload.value.actionRequestId)
        if (Option.isSome(record) && record.value.state === kitStates.completing) {
          const now = yield* Clock.currentTimeMillis
          yield* ledger.transition({
            actionRequestId: record.value.actionRequestId,
            expectedVersion: record.value.version,
            toState: kitStates.completed,
            at: now,
            history: { at: now, trigger: "customer.completion_delivered", detail: { completionId: payload.value.completionId, status } }
          })
        }
      })

    const lease = (kind: string, leaseMillis: number) => (limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => outbox.lease({ owner, now, leaseMillis, limit, kinds: [kind] }))
    /** An item's storage failure is logged; its lease expires and it is tried again. */
    const logged = (name: string, each: (item: OutboxItem) => Effect.Effect<void, StorageError>) => (item: OutboxItem) =>
      Effect.catchAllCause(each(item), (cause) => Effect.logWarning(`customer kit: ${name} failed`, cause))
    const step = (kind: string, leaseMillis: number, each: (item: OutboxItem) => Effect.Effect<void, StorageError>) =>
      Effect.gen(function*() {
        const items = yield* lease(kind, leaseMillis)(concurrency)
        yield* Effect.forEach(items, each, { concurrency: "unbounded", discard: true })
        return items.length
      })
    const loop = (name: string, kind: string, leaseMillis: number, each: (item: OutboxItem) => Effect.Effect<void, StorageError>, wakeups: Queue.Queue<void>) =>
      runLeased({
        name: `customer kit ${name}`,
        concurrency,
        idleMillis: pollMillis,
        lease: lease(kind, leaseMillis),
        idOf: (item) => item.id,
        work: logged(name, each),
        wakeup: Queue.take(wakeups)
      })

    return {
      worker: {
        executeDue: step(executeOutboxKind, executeLeaseMillis, executeItem),
        deliverDue: step(completeOutboxKind, deliveryLeaseMillis, deliverItem),
        wake: Effect.asVoid(Queue.offer(executeSignal, undefined))
      },
      loops: Effect.zipRight(
        loop("execution", executeOutboxKind, executeLeaseMillis, executeItem, executeSignal),
        loop("delivery", completeOutboxKind, deliveryLeaseMillis, deliverItem, deliverySignal)
      )
    }
  })

/**
 * Builds the worker; its loops are not running (`start` runs them). For driving it step by step.
 *
 * @since 0.1.0
 */
export const make = (options: CustomerWorkerOptions): Effect.Effect<CustomerWorkerService, never, WorkerServices> =>
  Effect.map(build(options), ({ worker }) => worker)

/**
 * Builds the worker and runs both loops until the scope closes.
 *
 * @since 0.1.0
 */
export const start = (options: CustomerWorkerOptions): Effect.Effect<CustomerWorkerService, never, Scope.Scope | WorkerServices> =>
  Effect.flatMap(build(options), ({ loops, worker }) => Effect.as(loops, worker))

/**
 * @since 0.1.0
 */
export const layer = (options: CustomerWorkerOptions): Layer.Layer<CustomerWorker, never, WorkerServices> =>
  Layer.scoped(CustomerWorker, start(options))
