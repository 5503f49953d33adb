/**
 * Independent payment reconciliation on the service side (spec "What the service does" 8, "Payment
 * reconciliation request", "Payment observation", "Payment verification rules for the
 * observation"): a `succeeded` completion of a Payment action, or a `reversed` one of a verified
 * Payment action, queues a read (`service.reconcile`); the reconciler sends the signed read to the
 * customer endpoint of the action's revision, verifies the signed observation and that it echoes
 * every binding, the nonce and the expected terms, judges it by the verification rules and applies
 * the verdict to the action (`ObservationJudged`). Only a `verified` verdict promotes a payment
 * claim; a `reversed` verdict appends a reversal to a verified one; anything else leaves the action
 * as it is ("observation failed, missing, late or mismatched: stays inconclusive").
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { ActionLedger, type ActionRecord, type LeasedAction } from "../ports/ActionLedger.ts"
import { ConnectionStore } from "../ports/ConnectionStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import type { PaymentMode } from "../protocol/messages/Common.ts"
import { PaymentObservation, type PaymentReconciliationRequest } from "../protocol/messages/Reconciliation.ts"
import { makeMemory as makeMemoryNonceStore, NonceStore } from "../ports/NonceStore.ts"
import { Outbox, runLeased } from "../ports/Outbox.ts"
import type { SecretVault } from "../ports/SecretVault.ts"
import { encodeBody, makeSigner, protocolVersion } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { formatTimestamp, parseTimestamp } from "../protocol/Timestamp.ts"
import { makeVerifier, snakeCaseTag } from "../protocol/Verification.ts"
import { pastDeadline, randomBackoffDelay } from "../protocol/Backoff.ts"
import { isActionState, transition } from "./ActionState.ts"
import { isPaymentAction, type PaymentSnapshot, reconcileOutboxKind, retrySchedule, type StoredRequest } from "./Dispatch.ts"
import { makeRevisionKeys } from "./RevisionKeys.ts"
import { ConnectorTransport } from "../ports/ConnectorTransport.ts"

/**
 * How far a state read may sit outside the read's own time span (clock drift between the customer
 * and the service): a read must be made after the request was sent and before its answer arrived
 * (rule 1: "a fresh state read"), give or take this much.
 *
 * @since 0.1.0
 */
export const readSkewMillis = 60_000

/**
 * The verdict on one observation. `retry` says whether reading again later may change it (a
 * payment still processing, a provider event not seen yet, a late read); a definite mismatch is
 * not read again.
 *
 * @since 0.1.0
 */
export interface Judgement {
  readonly verdict: "verified" | "reversed" | "inconclusive"
  readonly reason: string
  readonly retry: boolean
}

const verified = (reason: string): Judgement => ({ verdict: "verified", reason, retry: false })
const reversed = (reason: string): Judgement => ({ verdict: "reversed", reason, retry: false })
const inconclusive = (reason: string, retry: boolean): Judgement => ({ verdict: "inconclusive", reason, retry })

/** The provider object each mode is read from (a recovery may be an invoice or a payment). */
const intentsFor = (mode: PaymentMode): ReadonlyArray<PaymentObservation["intent"]> => {
  switch (mode) {
    case "setup_only":
      return ["setup"]
    case "one_time_purchase":
      return ["payment"]
    case "new_subscription":
    case "existing_subscription_change":
      return ["subscription"]
    case "recover_payment":
      return ["payment", "subscription"]
  }
}

const subscriptionLive = (state: PaymentObservation["subscriptionState"]) => state === "active" || state === "trialing"

/** Subscription states that never become active again. */
const endedSubscription = (state: PaymentObservation["subscriptionState"]) => state === "canceled" || state === "incomplete_expired"

/**
 * Judges an observation whose bindings already matched the read (spec "Payment verification rules
 * for the observation"), in this order, the first failure naming the reason:
 *
 * 1. the state read was made for this read: `stateReadAt` not before `requestedAt` and not after
 *    `receivedAt`, give or take `readSkewMillis`; the payment is bound to the customer, the
 *    provider object is the one the mode uses, and the raw provider reference hashes to the one the
 *    completion named (`providerReferenceHash`);
 * 2. the outcome: `pending`/`unknown` may still change (read again), `failed` and a partial refund
 *    stay inconclusive ("a partial refund stays inconclusive");
 * 3. "a verified result requires a matching signed provider event": `eventId` present and
 *    `eventSignatureVerified`;
 * 4. per mode: a one-time purchase a succeeded charge of exactly the expected amount (the currency
 *    is the echoed expected term), nothing refunded; a new subscription active or trialing with a
 *    paid initial invoice, or trialing; a subscription change active or trialing and no unpaid
 *    invoice; setup-only a method attached and nothing charged ("records no revenue"); a recovery
 *    a paid invoice or a succeeded payment of the expected amount. A reversal is a full refund:
 *    everything charged refunded (for a one-time purchase or a recovery, the expected amount).
 *
 * @since 0.1.0
 */
export const judgeObservation = (
  snapshot: PaymentSnapshot,
  observation: PaymentObservation,
  observedReferenceHash: string,
  span: { readonly requestedAt: number; readonly receivedAt: number }
): Judgement => {
  const readAt = parseTimestamp(observation.stateReadAt)
  if (readAt === undefined || readAt > span.receivedAt + readSkewMillis) return inconclusive("state_read_in_future", true)
  if (readAt < span.requestedAt - readSkewMillis) return inconclusive("state_read_before_request", true)
  if (!observation.customerBound) return inconclusive("not_customer_bound", false)
  if (!intentsFor(snapshot.mode).includes(observation.intent)) return inconclusive("intent_does_not_fit_mode", false)
  if (observedReferenceHash !== observation.providerReferenceHash) return inconclusive("provider_reference_mismatch", false)
  switch (observation.outcome) {
    case "pending":
    case "unknown":
      return inconclusive(`outcome_${observation.outcome}`, true)
    case "failed":
      return inconclusive("payment_failed", false)
    case "partially_reversed":
      return inconclusive("partial_refund", false)
    case "reversed":
    case "succeeded":
      break
  }
  if (observation.eventId === null || !observation.eventSignatureVerified) return inconclusive("provider_event_unverified", true)
  const expected = snapshot.expected
  const amountFixed = snapshot.mode === "one_time_purchase" || snapshot.mode === "recover_payment"
  if (observation.outcome === "reversed") {
    // "A full refund may reverse it": everything charged refunded, for a fixed price the expected
    // amount; "a partial refund stays inconclusive" in every mode.
    if (amountFixed && (expected === null || observation.chargedAmountMinor !== expected.amountMinor)) {
      return inconclusive("amount_mismatch", false)
    }
    return observation.refundedAmountMinor === observation.chargedAmountMinor
      ? reversed("full_refund")
      : inconclusive("partial_refund", false)
  }
  if (observation.refundedAmountMinor > 0) return inconclusive("partial_refund", false)
  switch (snapshot.mode) {
    case "one_time_purchase":
      if (observation.paymentStatus !== "succeeded") return inconclusive("charge_not_succeeded", true)
      if (expected === null || observation.chargedAmountMinor !== expected.amountMinor) return inconclusive("amount_mismatch", false)
      return verified("charge_matches")
    case "new_subscription":
      if (endedSubscription(observation.subscriptionState)) return inconclusive("subscription_ended", false)
      if (!subscriptionLive(observation.subscriptionState)) return inconclusive("subscription_not_active", true)
      return observation.invoicePaid === true || observation.subscriptionState === "trialing"
        ? verified(observation.invoicePaid === true ? "initial_invoice_paid" : "trial_started")
        : inconclusive("initial_invoice_unpaid", true)
    case "existing_subscription_change":
      if (endedSubscription(observation.subscriptionState)) return inconclusive("subscription_ended", false)
      if (!subscriptionLive(observation.subscriptionState)) return inconclusive("subscription_not_active", true)
      return observation.invoicePaid === false ? inconclusive("invoice_unpaid", true) : verified("subscription_changed")
    case "setup_only":
      if (!observation.methodAttached) return inconclusive("method_not_attached", true)
      return observation.chargedAmountMinor === 0 ? verified("method_attached") : inconclusive("setup_charged", false)
    case "recover_payment":
      if (observation.invoicePaid !== true && observation.paymentStatus !== "succeeded") return inconclusive("not_recovered", true)
      if (expected === null || observation.chargedAmountMinor !== expected.amountMinor) return inconclusive("amount_mismatch", false)
      return verified("payment_recovered")
  }
}

/**
 * How one read ended.
 *
 * @since 0.1.0
 */
export type ReadResult =
  | { readonly _tag: "Judged"; readonly judgement: Judgement; readonly state: string }
  | { readonly _tag: "Failed"; readonly reason: string; readonly final?: boolean }
  | { readonly _tag: "Skipped"; readonly reason: string }

/**
 * @since 0.1.0
 */
export interface ReconcilerOptions {
  /** Lease owner name, unique per worker. */
  readonly owner: string
  /** Reads in flight at once (default 8). */
  readonly concurrency?: number
  /** Lease length; must exceed the time-out (default 30 s). */
  readonly leaseMillis?: number
  /** Per-read time-out (default: the transport's own). */
  readonly timeoutMillis?: number
}

/**
 * @since 0.1.0
 */
export type ReconcilerServices = ActionLedger | Outbox | ConnectionStore | SecretVault | Crypto | ConnectorTransport

/**
 * @since 0.1.0
 */
export interface Reconciler {
  /** Leases up to `limit` due reads, each with its action. */
  readonly lease: (limit: number) => Effect.Effect<ReadonlyArray<LeasedAction>, StorageError>
  /** Performs one leased read and settles its item (completed or rescheduled). */
  readonly read: (leased: LeasedAction) => Effect.Effect<ReadResult, StorageError>
}

interface ReadPayload {
  readonly actionRequestId: string
  readonly completionId?: string
  readonly providerReferenceHash?: string
}

const echoedFields = [
  "workspaceId",
  "accountId",
  "actionRequestId",
  "actionVersionId",
  "offerVersionId",
  "mode",
  "providerIdempotencyKey",
  "providerReferenceHash",
  "requestNonce"
] as const

/** Whether the observation echoes every binding, the nonce and every expected term of the read. */
const echoes = (request: PaymentReconciliationRequest, observation: PaymentObservation): boolean =>
  echoedFields.every((field) => request[field] === observation[field]) &&
  (request.expected === null
    ? observation.expected === null
    : observation.expected !== null &&
      request.expected.amountMinor === observation.expected.amountMinor &&
      request.expected.currency === observation.expected.currency &&
      request.expected.priceReferenceHash === observation.expected.priceReferenceHash)

/**
 * Builds a reconciler bound to its services.
 *
 * @since 0.1.0
 */
export const makeReconciler = (options: ReconcilerOptions): Effect.Effect<Reconciler, never, ReconcilerServices> =>
  Effect.gen(function*() {
    const ledger = yield* ActionLedger
    const outbox = yield* Outbox
    const connections = yield* ConnectionStore
    const crypto = yield* Crypto
    const transport = yield* ConnectorTransport
    const signer = yield* makeSigner
    const keysFor = yield* makeRevisionKeys
    // An observation must echo the fresh nonce of the one read it answers and arrives on the
    // connection this process opened, so its own nonce is remembered in this process's memory.
    const verifier = yield* Effect.provideService(makeVerifier, NonceStore, makeMemoryNonceStore())
    const leaseMillis = options.leaseMillis ?? 30_000
    const timeout = options.timeoutMillis === undefined ? {} : { timeoutMillis: options.timeoutMillis }

    /** The hash of the provider reference the completion named (kept in its history entry). */
    const referenceHashOf = (record: ActionRecord, payload: ReadPayload) =>
      payload.providerReferenceHash !== undefined
        ? Effect.succeed(Option.some(payload.providerReferenceHash))
        : Effect.map(ledger.history(record.actionRequestId), (entries) => {
          for (const entry of [...entries].reverse()) {
            const detail = entry.detail as { readonly completionId?: string; readonly providerReferenceHash?: string } | null
            if (entry.trigger !== "completion" || detail === null) continue
            if (payload.completionId === undefined || detail.completionId === payload.completionId) {
              return Option.fromNullable(detail.providerReferenceHash)
            }
          }
          return Option.none<string>()
        })

    /** Whether a read of the payment made later than `readAt` has already been judged for the action. */
    const newerReadRecorded = (actionRequestId: string, readAt: number) =>
      Effect.map(ledger.history(actionRequestId), (entries) =>
        entries.some((entry) => {
          const recorded = entry.trigger === "reconciliation" ? (entry.detail as { readonly stateReadAt?: string }).stateReadAt : undefined
          const at = recorded === undefined ? undefined : parseTimestamp(recorded)
          return at !== undefined && at > readAt
        }))

    /**
     * Applies the verdict with compare-and-set, re-reading only after a concurrent change. Two reads
     * of one action may run at once (a `succeeded` and a later `reversed` completion): after a
     * concurrent change, a verdict on an older state read than one already recorded is dropped, so
     * the newest reading of the payment is the one that stands.
     */
    const applyVerdict = (record: ActionRecord, judgement: Judgement, readAt: number, detail: Record<string, unknown>) =>
      Effect.gen(function*() {
        for (let round = 0; round < 5; round++) {
          const current = round === 0 ? Option.some(record) : yield* ledger.get(record.actionRequestId)
          if (Option.isNone(current) || !isActionState(current.value.state)) return undefined
          if (round > 0 && (yield* newerReadRecorded(record.actionRequestId, readAt))) return current.value.state
          const step = transition(current.value.state, { _tag: "ObservationJudged", verdict: judgement.verdict, isPayment: true })
          if (step._tag === "Illegal") return current.value.state
          const toState = step._tag === "Move" ? step.to : current.value.state
          const now = yield* Clock.currentTimeMillis
          const result = yield* ledger.transition({
            actionRequestId: record.actionRequestId,
            expectedVersion: current.value.version,
            toState,
            at: now,
            history: {
              at: now,
              trigger: "reconciliation",
              detail: {
                ...detail,
                verdict: judgement.verdict,
                reason: judgement.reason,
                ...(step._tag === "Move" && step.appendReversal ? { reversal: true } : {}),
                ...(step._tag === "Stay" ? { unchanged: step.reason } : {})
              }
            }
          })
          if (result._tag === "Applied") return toState
        }
        return undefined
      })

    /** Sends the read and judges the answer; settles nothing. */
    const readOnce = (record: ActionRecord, payload: ReadPayload, attempt: number): Effect.Effect<ReadResult, StorageError> =>
      Effect.gen(function*() {
        const request = record.request as StoredRequest
        const snapshot = request.payment
        if (!isPaymentAction(request) || snapshot === undefined) return { _tag: "Skipped", reason: "not_a_payment_action" } as const
        const referenceHash = yield* referenceHashOf(record, payload)
        if (Option.isNone(referenceHash)) return { _tag: "Skipped", reason: "no_provider_reference" } as const
        const connection = yield* connections.getById(record.connectionId)
        const revision = Option.flatMap(connection, (c) => Option.fromNullable(c.revisions.find((r) => r.revision === record.revision)))
        // A retired revision's secrets never come back: no read can be signed or verified again.
        if (Option.isNone(revision) || revision.value.state === "retired") {
          return { _tag: "Failed", reason: "revision_unavailable", final: true } as const
        }
        const keys = yield* keysFor(record.connectionId, record.revision)
        if (Option.isNone(keys)) return { _tag: "Failed", reason: "secrets_unavailable", final: true } as const
        const nonce = yield* signer.freshNonce
        const requestedAt = yield* Clock.currentTimeMillis
        const body: PaymentReconciliationRequest = {
          type: "service.customer_action.payment_reconciliation",
          protocolVersion,
          workspaceId: record.workspaceId,
          accountId: request.accountId,
          actionRequestId: record.actionRequestId,
          actionVersionId: snapshot.actionVersionId,
          offerVersionId: snapshot.offerVersionId,
          mode: snapshot.mode,
          providerIdempotencyKey: record.providerIdempotencyKey,
          providerReferenceHash: referenceHash.value,
          requestNonce: nonce,
          expected: snapshot.expected,
          requestedAt: formatTimestamp(requestedAt)
        }
        const bytes = encodeBody(body)
        const headers = yield* signer.sign({ purpose: "payment_reconciliation_request", keys: keys.value, body: bytes, nonce })
        const exchange = yield* Effect.either(transport.post({ url: revision.value.endpoint, headers, body: bytes, ...timeout }))
        if (exchange._tag === "Left") return { _tag: "Failed", reason: exchange.left.reason } as const
        const response = exchange.right
        if (response.status !== 200) return { _tag: "Failed", reason: `status_${response.status}` } as const
        const answer = yield* Effect.either(verifier.verifyAndDecode(PaymentObservation, {
          purpose: "payment_reconciliation_response",
          keys: keys.value,
          headers: response.headers,
          body: response.body,
          nonceScope: `payment_reconciliation_response:${record.connectionId}`
        }))
        if (answer._tag === "Left") {
          if (answer.left._tag === "StorageError") return yield* answer.left
          return { _tag: "Failed", reason: `response_${snakeCaseTag(answer.left._tag)}` } as const
        }
        const observation = answer.right.body
        if (!echoes(body, observation)) return { _tag: "Failed", reason: "response_binding_mismatch" } as const
        const receivedAt = yield* Clock.currentTimeMillis
        // "The service hashes the provider event and reference and does not store the raw reference."
        const observedReferenceHash = yield* crypto.sha256Hex(observation.providerReference)
        const judged = judgeObservation(snapshot, observation, observedReferenceHash, { requestedAt, receivedAt })
        // A read of a verified payment was queued by a `reversed` completion: the refund may still
        // be in flight, so a payment still standing is read again (until the deadline).
        const judgement = record.state === "verified" && judged.verdict === "verified"
          ? inconclusive("reversal_not_observed", true)
          : judged
        if (judgement.verdict === "inconclusive" && judgement.retry) {
          return { _tag: "Judged", judgement, state: record.state } as const
        }
        const state = yield* applyVerdict(record, judgement, parseTimestamp(observation.stateReadAt) ?? receivedAt, {
          attempt,
          ...(payload.completionId !== undefined ? { completionId: payload.completionId } : {}),
          outcome: observation.outcome,
          providerReferenceHash: observedReferenceHash,
          providerEventIdHash: observation.eventId === null ? null : yield* crypto.sha256Hex(observation.eventId),
          eventSignatureVerified: observation.eventSignatureVerified,
          stateReadAt: observation.stateReadAt,
          intent: observation.intent,
          chargedAmountMinor: observation.chargedAmountMinor,
          refundedAmountMinor: observation.refundedAmountMinor
        })
        return { _tag: "Judged", judgement, state: state ?? record.state } as const
      })

    /** A read that will never give a final verdict stops; the history says so. */
    const abandon = (record: ActionRecord, attempts: number, lastReason: string, now: number) =>
      Effect.gen(function*() {
        for (let round = 0; round < 5; round++) {
          const current = yield* ledger.get(record.actionRequestId)
          if (Option.isNone(current)) return
          const written = yield* ledger.transition({
            actionRequestId: record.actionRequestId,
            expectedVersion: current.value.version,
            toState: current.value.state,
            at: now,
            history: { at: now, trigger: "reconciliation_abandoned", detail: { attempts, lastReason } }
          })
          if (written._tag !== "Stale") return
        }
      })

    const read = ({ action, item }: LeasedAction): Effect.Effect<ReadResult, StorageError> =>
      Effect.gen(function*() {
        const payload = item.payload as ReadPayload
        const record = Option.isSome(action) ? action : yield* ledger.get(payload.actionRequestId)
        const result: ReadResult = Option.isNone(record)
          ? { _tag: "Skipped", reason: "unknown_action" }
          : yield* readOnce(record.value, payload, item.attempts + 1)
        const now = yield* Clock.currentTimeMillis
        const again = result._tag === "Failed" || (result._tag === "Judged" && result.judgement.retry)
        const reason = result._tag === "Judged" ? result.judgement.reason : result.reason
        if (!again) {
          yield* outbox.complete({ id: item.id, owner: options.owner, now })
        } else if (Option.isSome(record) && ((result._tag === "Failed" && result.final === true) || pastDeadline(retrySchedule, item.createdAt, now))) {
          yield* abandon(record.value, item.attempts + 1, reason, now)
          yield* outbox.complete({ id: item.id, owner: options.owner, now })
        } else {
          const delay = yield* randomBackoffDelay(retrySchedule, item.attempts)
          if (result._tag === "Failed") {
            yield* Effect.logWarning("reconcile: the read failed; it is retried", { actionRequestId: payload.actionRequestId, reason })
          }
          yield* outbox.reschedule({ id: item.id, owner: options.owner, nextAttemptAt: now + delay, error: reason })
        }
        return result
      })

    const lease = (limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        ledger.leaseWithActions({ owner: options.owner, now, leaseMillis, limit, kinds: [reconcileOutboxKind] }))

    return { lease, read }
  })

/**
 * A reconciler running until its scope closes: up to `concurrency` reads in flight, leasing more as
 * slots free up, polling every `idleMillis` (default 1 s) when nothing is due.
 *
 * @since 0.1.0
 */
export const runReconciler = (
  options: ReconcilerOptions & { readonly idleMillis?: number }
): Effect.Effect<void, never, ReconcilerServices | Scope.Scope> =>
  Effect.gen(function*() {
    const reconciler = yield* makeReconciler(options)
    yield* runLeased({
      name: "reconcile",
      concurrency: options.concurrency ?? 8,
      idleMillis: options.idleMillis ?? 1_000,
      lease: reconciler.lease,
      idOf: (leased) => leased.item.id,
      work: (leased) =>
        Effect.catchAll(reconciler.read(leased), (error) => Effect.logWarning("reconcile: storage failed during a read", error.message))
    })
  })
