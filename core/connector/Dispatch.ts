/**
 * Dispatch of an authorized action to the customer's endpoint (spec "Execution request body",
 * "Execution acknowledgement body", "States and transitions", "Errors"; DESIGN D1–D6, D12).
 *
 * Intake persists the action (state `dispatching`) and its `service.dispatch` outbox item in one
 * transaction. A worker leases due items and delivers them: the execution body is built and signed
 * per delivery (fresh `requestNonce` = nonce header, fresh `requestedAt`, the same
 * `providerIdempotencyKey`), and only a signed HTTP 202 `dispatch_response` acknowledgement that
 * echoes every binding of this delivery counts. Anything else after the request may have reached
 * the endpoint is an unknown outcome: the action moves to `unknown_outcome` and the same key is
 * delivered again later with bounded exponential backoff and jitter — never a new key, so the
 * customer's idempotent claim makes the retry safe. A failure before anything was sent is retried
 * without changing the state.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { ActionLedger, type ActionRecord, type LeasedAction } from "../ports/ActionLedger.ts"
import { randomUuid } from "../protocol/Uuid.ts"
import { type Backoff, pastDeadline, randomBackoffDelay } from "../protocol/Backoff.ts"
import { CapabilityRegistry } from "../ports/CapabilityRegistry.ts"
import { DispatchSignal } from "../ports/DispatchSignal.ts"
import { Cipher } from "../protocol/Cipher.ts"
import { type ConnectionRevision, ConnectionStore } from "../ports/ConnectionStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import { deriveProviderIdempotencyKey } from "../protocol/Idempotency.ts"
import { Acknowledgement } from "../protocol/messages/Acknowledgement.ts"
import { Code, type PaymentMode, PaymentMode as PaymentModeSchema, Sha256Hex } from "../protocol/messages/Common.ts"
import type { PaymentContinuation } from "../protocol/messages/Continuation.ts"
import { Action, Actor, Binding, type ExecutionRequest } from "../protocol/messages/Execution.ts"
import { Currency } from "../protocol/messages/Reconciliation.ts"
import { makeMemory as makeMemoryNonceStore, NonceStore } from "../ports/NonceStore.ts"
import { Outbox, type OutboxItem, runLeased } from "../ports/Outbox.ts"
import { SecretVault } from "../ports/SecretVault.ts"
import { encodeBody, headerNames, makeSigner, protocolVersion } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import { makeVerifier, snakeCaseTag } from "../protocol/Verification.ts"
import { type ActionState, isActionState, transition, type Trigger } from "./ActionState.ts"
import { makeRevisionKeys } from "./RevisionKeys.ts"
import { ConnectorTransport } from "../ports/ConnectorTransport.ts"

/**
 * @since 0.1.0
 */
export const dispatchOutboxKind = "service.dispatch"

/**
 * @since 0.1.0
 */
export const reconcileOutboxKind = "service.reconcile"

/**
 * The operation families that make an action a Payment action (spec "Payment continuation rules"
 * 2), with the capability mode each requires.
 *
 * @since 0.1.0
 */
export const paymentFamilies: Readonly<Record<string, PaymentMode>> = {
  "payment.existing_subscription_change": "existing_subscription_change",
  "payment.new_subscription": "new_subscription",
  "payment.one_time_purchase": "one_time_purchase",
  "payment.setup_only": "setup_only",
  "recover_payment": "recover_payment"
}

/**
 * The price and version snapshot taken at authorization, for Payment actions.
 *
 * @since 0.1.0
 */
export const PaymentSnapshot = Schema.Struct({
  mode: PaymentModeSchema,
  actionVersionId: Schema.UUID,
  offerVersionId: Schema.NullOr(Schema.UUID),
  expected: Schema.NullOr(Schema.Struct({
    amountMinor: Schema.Int.pipe(Schema.nonNegative()),
    currency: Currency,
    priceReferenceHash: Sha256Hex
  }))
}).annotations({ identifier: "PaymentSnapshot", parseOptions: { onExcessProperty: "error" } })

/**
 * @since 0.1.0
 */
export interface PaymentSnapshot extends Schema.Schema.Type<typeof PaymentSnapshot> {}

/**
 * The caller-owned parts of an execution request (`POST /action-requests`).
 *
 * @since 0.1.0
 */
export const ActionIntake = Schema.Struct({
  accountId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256)),
  action: Action,
  actor: Actor,
  binding: Binding,
  payment: Schema.optionalWith(PaymentSnapshot, { exact: true })
}).annotations({ identifier: "ActionIntake", parseOptions: { onExcessProperty: "error" } })

/**
 * @since 0.1.0
 */
export interface ActionIntake extends Schema.Schema.Type<typeof ActionIntake> {}

/**
 * @since 0.1.0
 */
export class ConnectorNotActive extends Schema.TaggedError<ConnectorNotActive>()("ConnectorNotActive", {}) {}

/**
 * @since 0.1.0
 */
export class PaymentSnapshotMismatch extends Schema.TaggedError<PaymentSnapshotMismatch>()("PaymentSnapshotMismatch", {
  reason: Schema.Literal("snapshot_required", "snapshot_not_allowed", "mode_mismatch", "terms_required")
}) {}

/**
 * What the ledger stores as the action's `request`.
 *
 * @since 0.1.0
 */
export interface StoredRequest extends ActionIntake {}

/**
 * @since 0.1.0
 */
export const isPaymentAction = (request: Pick<StoredRequest, "action">): boolean =>
  Object.hasOwn(paymentFamilies, request.action.operation.family)

const checkPaymentSnapshot = (input: ActionIntake): Effect.Effect<void, PaymentSnapshotMismatch> => {
  const mode = paymentFamilies[input.action.operation.family]
  if (mode === undefined) {
    return input.payment === undefined ? Effect.void : Effect.fail(new PaymentSnapshotMismatch({ reason: "snapshot_not_allowed" }))
  }
  if (input.payment === undefined) return Effect.fail(new PaymentSnapshotMismatch({ reason: "snapshot_required" }))
  if (input.payment.mode !== mode) return Effect.fail(new PaymentSnapshotMismatch({ reason: "mode_mismatch" }))
  // "A non-purchase setup has no priced offer"; every other mode carries the exact price.
  if ((input.payment.expected === null) !== (mode === "setup_only")) {
    return Effect.fail(new PaymentSnapshotMismatch({ reason: "terms_required" }))
  }
  return Effect.void
}

/**
 * Accepts an authorized action for delivery: requires an active connection revision, binds the
 * action to it and persists the action with its outbox item atomically, then wakes the dispatcher
 * through the `DispatchSignal` when the context has one.
 *
 * @since 0.1.0
 */
export const intake = (
  workspaceId: string,
  input: ActionIntake
): Effect.Effect<
  { readonly actionRequestId: string; readonly state: ActionState },
  ConnectorNotActive | PaymentSnapshotMismatch | StorageError,
  ActionLedger | ConnectionStore | Crypto
> =>
  Effect.gen(function*() {
    yield* checkPaymentSnapshot(input)
    const connection = yield* (yield* ConnectionStore).get(workspaceId)
    const active = Option.flatMap(connection, (c) => Option.fromNullable(c.revisions.find((r) => r.state === "active")))
    if (Option.isNone(connection) || Option.isNone(active)) return yield* new ConnectorNotActive()
    const actionRequestId = yield* randomUuid
    const providerIdempotencyKey = yield* deriveProviderIdempotencyKey(workspaceId, actionRequestId)
    const now = yield* Clock.currentTimeMillis
    const request: StoredRequest = input
    const created = yield* (yield* ActionLedger).create({
      record: {
        actionRequestId,
        workspaceId,
        accountId: input.accountId,
        connectionId: connection.value.connectionId,
        revision: active.value.revision,
        providerIdempotencyKey,
        state: "dispatching",
        request,
        acknowledgement: null,
        sealedContinuation: null,
        createdAt: now
      },
      history: { at: now, trigger: "intake", detail: { revision: active.value.revision } },
      outbox: {
        id: yield* randomUuid,
        kind: dispatchOutboxKind,
        dedupeKey: actionRequestId,
        payload: { actionRequestId },
        nextAttemptAt: now,
        createdAt: now
      }
    })
    // A fresh random id cannot collide; if it ever did, nothing was written and the caller retries.
    if (created === "duplicate") return yield* Effect.die("action request id collision")
    // Committed: wake this process's dispatcher, if one listens (it polls in any case).
    yield* Effect.serviceOption(DispatchSignal).pipe(Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (signal) => signal.wake })))
    return { actionRequestId, state: "dispatching" as const }
  })

/**
 * The retry backoff of a delivery (Accord's choice; the spec leaves it open): 1 s doubling per
 * attempt up to 5 minutes, each delay drawn uniformly from its upper half (jitter), for up to 24
 * hours after intake. After that the action keeps its state for operators and reconciliation.
 *
 * @since 0.1.0
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
 *
 * @since 0.1.0
 */
export const dispatchTimeout: Duration.Duration = Duration.seconds(10)

/**
 * How long a dispatcher trusts a connection revision it read (endpoint and state).
 *
 * @since 0.1.0
 */
export const revisionCacheMillis = 5_000

/**
 * How one delivery ended.
 *
 * @since 0.1.0
 */
export type DeliveryResult =
  | { readonly _tag: "Acknowledged"; readonly state: "accepted" | "rejected" }
  | { readonly _tag: "Ambiguous"; readonly reason: string }
  | { readonly _tag: "NotSent"; readonly reason: string }
  | { readonly _tag: "Skipped"; readonly reason: string }

/**
 * @since 0.1.0
 */
export interface DispatcherOptions {
  /** Lease owner name, unique per worker. */
  readonly owner: string
  /** Items leased by one `runOnce` (default 64); `runDispatcher` leases as slots free up instead. */
  readonly batchSize?: number
  /** Deliveries in flight at once (default 32). */
  readonly concurrency?: number
  /** Lease length; must exceed the time-out (default 30 s). */
  readonly leaseMillis?: number
  /** Per-delivery time-out (default: the transport's own, `dispatchTimeout` for `HttpTransport`). */
  readonly timeoutMillis?: number
}

/**
 * @since 0.1.0
 */
export type DispatcherServices =
  | ActionLedger
  | Outbox
  | ConnectionStore
  | SecretVault
  | CapabilityRegistry
  | Cipher
  | Crypto
  | ConnectorTransport

/**
 * @since 0.1.0
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

const isCode = Schema.is(Code)

/**
 * Which continuation intent a payment mode may mount: a setup-only action saves a method (a setup
 * intent), a one-time purchase charges (a payment intent); subscription changes, new subscriptions
 * and recoveries may need either (a trial or a zero first invoice mounts a setup intent).
 *
 * @since 0.1.0
 */
export const intentFits = (mode: PaymentMode, intent: PaymentContinuation["intent"]): boolean =>
  mode === "setup_only" ? intent === "setup" : mode === "one_time_purchase" ? intent === "payment" : true

/**
 * Builds a dispatcher bound to its services. Signing keys are imported once per connection
 * revision and kept for the dispatcher's life (a retired revision is never delivered to).
 *
 * @since 0.1.0
 */
export const makeDispatcher = (options: DispatcherOptions): Effect.Effect<Dispatcher, never, DispatcherServices> =>
  Effect.gen(function*() {
    const ledger = yield* ActionLedger
    const outbox = yield* Outbox
    const connections = yield* ConnectionStore
    const capabilities = yield* CapabilityRegistry
    const cipher = yield* Cipher
    const crypto = yield* Crypto
    const transport = yield* ConnectorTransport
    const signer = yield* makeSigner
    // An acknowledgement must echo the fresh nonce of the one delivery it answers (D12) and arrives
    // on the connection this process opened for it, so no other process can ever be shown it:
    // its nonce is remembered in this process's memory, which costs no database write per delivery.
    const verifier = yield* Effect.provideService(makeVerifier, NonceStore, makeMemoryNonceStore())
    const leaseMillis = options.leaseMillis ?? 30_000
    const timeout = options.timeoutMillis === undefined ? {} : { timeoutMillis: options.timeoutMillis }
    const keysFor = yield* makeRevisionKeys

    /**
     * Applies a trigger with compare-and-set, starting from the record the delivery read and
     * re-reading only after a concurrent change.
     */
    const apply = (
      record: ActionRecord,
      trigger: Trigger,
      extra: {
        readonly detail: Record<string, unknown>
        readonly acknowledgement?: unknown
        readonly sealedContinuation?: string
        /** The leased outbox item to complete in the same write, if one is written. */
        readonly completes?: { readonly id: string; readonly owner: string }
      }
    ): Effect.Effect<{ readonly state: ActionState; readonly written: boolean } | undefined, StorageError> =>
      Effect.gen(function*() {
        const actionRequestId = record.actionRequestId
        for (let round = 0; round < 5; round++) {
          const current = round === 0 ? Option.some(record) : yield* ledger.get(actionRequestId)
          if (Option.isNone(current) || !isActionState(current.value.state)) return undefined
          const step = transition(current.value.state, trigger)
          // A completion may have moved the action on (it proves acceptance) before this
          // acknowledgement was processed: the acknowledgement and its sealed continuation are still
          // stored, with a history entry and no change of state.
          const late = step._tag === "Stay" && extra.acknowledgement !== undefined && current.value.acknowledgement === null
          if (step._tag !== "Move" && !late) return { state: current.value.state, written: false }
          const toState = step._tag === "Move" ? step.to : current.value.state
          const now = yield* Clock.currentTimeMillis
          const result = yield* ledger.transition({
            actionRequestId,
            expectedVersion: current.value.version,
            toState,
            at: now,
            history: {
              at: now,
              trigger: trigger._tag === "AckAccepted" || trigger._tag === "AckRejected" ? "acknowledgement" : "delivery_ambiguous",
              detail: {
                ...extra.detail,
                ...(step._tag === "Move" && step.passedThrough.length > 0 ? { passedThrough: step.passedThrough } : {}),
                ...(step._tag === "Stay" ? { unchanged: step.reason } : {})
              }
            },
            ...(extra.acknowledgement !== undefined ? { acknowledgement: extra.acknowledgement } : {}),
            ...(extra.sealedContinuation !== undefined ? { sealedContinuation: extra.sealedContinuation } : {}),
            ...(extra.completes !== undefined ? { completeOutboxItem: extra.completes } : {})
          })
          if (result._tag === "Applied") return { state: toState, written: true }
        }
        return undefined
      })

    const providerReferenceHash = (reference: string | undefined) =>
      reference === undefined ? Effect.succeed(undefined) : crypto.sha256Hex(reference)

    /**
     * A continuation is valid only on an accepted, server-authorized Payment action (spec "Payment
     * continuation rules" 1–2): its operation family is one of the payment operation keys, the
     * action is bound to the connection's current (active) revision, the current capability
     * evidence of that revision includes the family's mode, and the intent fits the mode (a
     * setup-only action mounts a setup intent, a one-time purchase a payment intent).
     */
    const continuationAllowed = (
      record: ActionRecord,
      request: StoredRequest,
      continuation: PaymentContinuation,
      activeRevision: number | undefined,
      now: number
    ) =>
      Effect.gen(function*() {
        const mode = paymentFamilies[request.action.operation.family]
        if (mode === undefined || request.payment === undefined || request.payment.mode !== mode) return "not_a_payment_action"
        if (activeRevision !== record.revision) return "revision_not_current"
        if (!intentFits(mode, continuation.intent)) return "intent_does_not_fit_mode"
        const evidence = yield* capabilities.current(record.connectionId, now)
        if (Option.isNone(evidence) || evidence.value.revision !== record.revision || !evidence.value.modes.includes(mode)) {
          return "mode_not_enabled"
        }
        return "allowed"
      })

    // A revision's endpoint never changes; its state is re-read at most every few seconds, so a
    // busy dispatcher does not read the connection for every delivery.
    const revisionCache = new Map<string, { readonly at: number; readonly revision: Option.Option<ConnectionRevision> }>()
    const revisionOf = (connectionId: string, revision: number) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const key = `${connectionId}:${revision}`
        const hit = revisionCache.get(key)
        if (hit !== undefined && now - hit.at < revisionCacheMillis) return hit.revision
        const connection = yield* connections.getById(connectionId)
        const found = Option.flatMap(connection, (c) => Option.fromNullable(c.revisions.find((r) => r.revision === revision)))
        revisionCache.set(key, { at: now, revision: found })
        return found
      })

    /** Delivers and applies the answer; `onItemCompleted` runs when the answer's write also completed the item. */
    const deliverAndApply = (
      record: ActionRecord,
      attempt: number,
      completes: { readonly id: string; readonly owner: string },
      onItemCompleted: () => void
    ): Effect.Effect<DeliveryResult, StorageError> =>
      Effect.gen(function*() {
        if (record.state !== "dispatching" && record.state !== "unknown_outcome") {
          return { _tag: "Skipped", reason: "already_acknowledged" } as const
        }
        const revision = yield* revisionOf(record.connectionId, record.revision)
        if (Option.isNone(revision) || revision.value.state === "retired") {
          return { _tag: "NotSent", reason: "revision_unavailable" } as const
        }
        const keys = yield* keysFor(record.connectionId, record.revision)
        if (Option.isNone(keys)) return { _tag: "NotSent", reason: "secrets_unavailable" } as const
        const request = record.request as StoredRequest
        const nonce = yield* signer.freshNonce
        const now = yield* Clock.currentTimeMillis
        const body: ExecutionRequest = {
          type: "service.customer_action.execute",
          protocolVersion,
          workspaceId: record.workspaceId,
          accountId: request.accountId,
          actionRequestId: record.actionRequestId,
          action: request.action,
          actor: request.actor,
          binding: request.binding,
          providerIdempotencyKey: record.providerIdempotencyKey,
          requestedAt: formatTimestamp(now),
          requestNonce: nonce
        }
        const bytes = encodeBody(body)
        const headers = yield* signer.sign({ purpose: "dispatch_request", keys: keys.value, body: bytes, nonce })
        const exchange = yield* transport.post({
          url: revision.value.endpoint,
          headers: { ...headers, [headerNames.idempotencyKey]: record.providerIdempotencyKey },
          body: bytes,
          ...timeout
        }).pipe(Effect.either)
        const ambiguous = (reason: string) =>
          Effect.as(
            apply(record, { _tag: "DeliveryAmbiguous" }, { detail: { attempt, reason } }),
            { _tag: "Ambiguous", reason } as const
          )
        if (exchange._tag === "Left") {
          const failure = exchange.left
          return failure.maybeDelivered
            ? yield* ambiguous(failure.reason)
            : ({ _tag: "NotSent", reason: failure.reason } as const)
        }
        const response = exchange.right
        if (response.status !== 202) return yield* ambiguous(response.status >= 300 && response.status < 400 ? "redirect" : `status_${response.status}`)
        const verified = yield* verifier.verifyAndDecode(Acknowledgement, {
          purpose: "dispatch_response",
          keys: keys.value,
          headers: response.headers,
          body: response.body,
          nonceScope: `dispatch_response:${record.connectionId}`
        }).pipe(Effect.either)
        if (verified._tag === "Left") {
          if (verified.left._tag === "StorageError") return yield* verified.left
          return yield* ambiguous(`response_${snakeCaseTag(verified.left._tag)}`)
        }
        const ack = verified.right.body
        if (
          ack.workspaceId !== record.workspaceId || ack.actionRequestId !== record.actionRequestId ||
          ack.providerIdempotencyKey !== record.providerIdempotencyKey || ack.requestNonce !== nonce
        ) {
          return yield* ambiguous("response_binding_mismatch")
        }
        const referenceHash = yield* providerReferenceHash(ack.providerReference)
        const stored = {
          state: ack.state,
          ...(referenceHash !== undefined ? { providerReferenceHash: referenceHash } : {}),
          ...(ack.state === "rejected" && ack.errorCode !== undefined ? { errorCode: ack.errorCode } : {})
        }
        let sealedContinuation: string | undefined
        if (ack.state === "accepted" && ack.continuation !== undefined) {
          const receivedAt = yield* Clock.currentTimeMillis
          // Read fresh: a continuation is allowed only for the revision that is active right now.
          const connection = yield* connections.getById(record.connectionId)
          const active = Option.flatMap(connection, (c) => Option.fromNullable(c.revisions.find((r) => r.state === "active")))
          const verdict = yield* continuationAllowed(
            record,
            request,
            ack.continuation,
            Option.getOrUndefined(Option.map(active, (r) => r.revision)),
            receivedAt
          )
          if (verdict !== "allowed") return yield* ambiguous(`response_continuation_${verdict}`)
          sealedContinuation = yield* cipher.seal(JSON.stringify(ack.continuation), `continuation:${record.actionRequestId}`)
        }
        const applied = yield* apply(
          record,
          { _tag: ack.state === "accepted" ? "AckAccepted" : "AckRejected" },
          {
            completes,
            detail: {
              attempt,
              state: ack.state,
              ...(referenceHash !== undefined ? { providerReferenceHash: referenceHash } : {}),
              ...(ack.state === "rejected" && ack.errorCode !== undefined && isCode(ack.errorCode) ? { errorCode: ack.errorCode } : {}),
              ...(sealedContinuation !== undefined ? { continuation: "stored_encrypted" } : {})
            },
            acknowledgement: stored,
            ...(sealedContinuation !== undefined ? { sealedContinuation } : {})
          }
        )
        if (applied === undefined) return { _tag: "Skipped", reason: "concurrent_change" } as const
        if (applied.written) onItemCompleted()
        return { _tag: "Acknowledged", state: ack.state } as const
      })

    /**
     * Past the delivery deadline the action keeps its state (`unknown_outcome`, or `dispatching` if
     * nothing was ever sent) for operators and reconciliation; the history says delivery stopped.
     */
    const abandon = (record: ActionRecord, attempts: number, lastReason: string, now: number) =>
      Effect.gen(function*() {
        const current = yield* ledger.get(record.actionRequestId)
        if (Option.isNone(current) || (current.value.state !== "dispatching" && current.value.state !== "unknown_outcome")) return
        yield* ledger.transition({
          actionRequestId: record.actionRequestId,
          expectedVersion: current.value.version,
          toState: current.value.state,
          at: now,
          history: { at: now, trigger: "delivery_abandoned", detail: { attempts, lastReason } }
        })
      })

    /** Delivers a leased item; `known` is its action when already read with the lease. */
    const deliverItem = (item: OutboxItem, known?: Option.Option<ActionRecord>): Effect.Effect<DeliveryResult, StorageError> =>
      Effect.gen(function*() {
        const actionRequestId = (item.payload as { readonly actionRequestId: string }).actionRequestId
        const record = known ?? (yield* ledger.get(actionRequestId))
        let itemCompleted = false
        const result: DeliveryResult = Option.isNone(record)
          ? { _tag: "Skipped", reason: "unknown_action" }
          : yield* deliverAndApply(record.value, item.attempts + 1, { id: item.id, owner: options.owner }, () => (itemCompleted = true))
        const now = yield* Clock.currentTimeMillis
        const settled = result._tag === "Acknowledged" || result._tag === "Skipped"
        const expired = Option.isSome(record) && pastDeadline(retrySchedule, record.value.createdAt, now)
        if (settled || expired) {
          if (!settled && Option.isSome(record)) yield* abandon(record.value, item.attempts + 1, result.reason, now)
          if (!itemCompleted) yield* outbox.complete({ id: item.id, owner: options.owner, now })
        } else {
          const delay = yield* randomBackoffDelay(retrySchedule, item.attempts)
          yield* outbox.reschedule({ id: item.id, owner: options.owner, nextAttemptAt: now + delay, error: result.reason })
        }
        return result
      })

    const deliver = (item: OutboxItem): Effect.Effect<DeliveryResult, StorageError> => deliverItem(item)

    const lease = (limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        ledger.leaseWithActions({ owner: options.owner, now, leaseMillis, limit, kinds: [dispatchOutboxKind] }))
    const deliverLeased = ({ action, item }: LeasedAction) => deliverItem(item, action)

    const runOnce = Effect.gen(function*() {
      const leased = yield* lease(options.batchSize ?? 64)
      yield* Effect.forEach(leased, (one) => deliverLogged(deliverLeased(one)), { concurrency: options.concurrency ?? 32, discard: true })
      return leased.length
    })

    return { runOnce, lease, deliver, deliverLeased }
  })

/**
 * One item's storage failure must not interrupt its siblings' deliveries in flight: it is logged,
 * and its lease expires so another round (or worker) delivers it again, same key.
 */
const deliverLogged = (delivery: Effect.Effect<DeliveryResult, StorageError>): Effect.Effect<unknown> =>
  Effect.catchAll(delivery, (error) => Effect.logWarning("dispatch: storage failed during a delivery", error.message))

/**
 * A dispatcher running until its scope closes. It keeps up to `concurrency` deliveries in flight
 * and leases more as soon as a slot frees (a slow customer endpoint holds one slot, not a whole
 * round); when nothing is due it waits for the `DispatchSignal` (intake wakes it) or `idleMillis`.
 *
 * @since 0.1.0
 */
export const runDispatcher = (
  options: DispatcherOptions & {
    readonly idleMillis?: number
    /** Runs after each delivery with its result (metrics, tests, benchmarks). */
    readonly onDelivery?: (item: OutboxItem, result: DeliveryResult) => Effect.Effect<void>
  }
): Effect.Effect<void, never, DispatcherServices | DispatchSignal | Scope.Scope> =>
  Effect.gen(function*() {
    const dispatcher = yield* makeDispatcher(options)
    const signal = yield* DispatchSignal
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
      wakeup: signal.next
    })
  })
