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
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { ActionLedger, type ActionRecord, type LeasedAction } from "../ports/ActionLedger.ts"
import { ConnectionStore } from "../ports/ConnectionStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import { PaymentObservation, type PaymentReconciliationRequest } from "../protocol/messages/Reconciliation.ts"
import { Outbox } from "../ports/Outbox.ts"
import type { SecretVault } from "../ports/SecretVault.ts"
import { encodeBody, protocolVersion } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { formatTimestamp, parseTimestamp } from "../protocol/Timestamp.ts"
import { snakeCaseTag } from "../protocol/Verification.ts"
import * as Metrics from "../telemetry/Metrics.ts"
import { pastDeadline, randomBackoffDelay } from "../protocol/Backoff.ts"
import type { ActionState } from "./ActionState.ts"
import { decodeStoredRequest, isPaymentAction, reconcileOutboxKind } from "./Action.ts"
import { retrySchedule } from "./Dispatcher.ts"
import { inconclusive, judgeObservation, type Judgement } from "./Judgement.ts"
import { runActionWorker } from "./internal/actionWorker.ts"
import { answer, applyTrigger, stepDetail } from "./internal/applyTrigger.ts"
import { makeOutbound } from "./internal/outbound.ts"
import { revisionNumbered } from "./Revisions.ts"
import { ConnectorTransport } from "../ports/ConnectorTransport.ts"

/**
 * How one read ended.
 */
export type ReadResult =
  | { readonly _tag: "Judged"; readonly judgement: Judgement; readonly state: string }
  | { readonly _tag: "Failed"; readonly reason: string; readonly final?: boolean }
  | { readonly _tag: "Skipped"; readonly reason: string }

/** The reconciler's settings: its lease owner name, batch size, lease and retry timing. */
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
 * What the reconciler needs: the ledger, outbox, connections and secrets, crypto and the transport.
 */
export type ReconcilerServices = ActionLedger | Outbox | ConnectionStore | SecretVault | Crypto | ConnectorTransport

/**
 * The payment reconciler: sends the signed read of a succeeded payment and judges the observation
 * it gets back.
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
 */
export const makeReconciler = (options: ReconcilerOptions): Effect.Effect<Reconciler, never, ReconcilerServices> =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    const outbox = yield* Outbox
    const connections = yield* ConnectionStore
    const crypto = yield* Crypto
    const transport = yield* ConnectorTransport
    const { keysFor, signer, timeout, verifier } = yield* makeOutbound(options)
    const leaseMillis = options.leaseMillis ?? 30_000

    /** The hash of the provider reference the completion named (kept in its history entry). */
    const referenceHashOf = (record: ActionRecord, payload: ReadPayload) =>
      payload.providerReferenceHash !== undefined
        ? Effect.succeed(Option.some(payload.providerReferenceHash))
        : Effect.map(ledger.history(record.actionRequestId), (entries) => {
            for (const entry of [...entries].reverse()) {
              const detail = entry.detail as {
                readonly completionId?: string
                readonly providerReferenceHash?: string
              } | null
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
          const recorded =
            entry.trigger === "reconciliation"
              ? (entry.detail as { readonly stateReadAt?: string }).stateReadAt
              : undefined
          const at = recorded === undefined ? undefined : parseTimestamp(recorded)
          return at !== undefined && at > readAt
        })
      )

    /**
     * Applies the verdict with compare-and-set, re-reading only after a concurrent change. Two reads
     * of one action may run at once (a `succeeded` and a later `reversed` completion): after a
     * concurrent change, a verdict on an older state read than one already recorded is dropped, so
     * the newest reading of the payment is the one that stands.
     */
    /** Whether a `succeeded` completion named evidence of an accepted type that a read confirms. */
    const claimedForRead = (actionRequestId: string) =>
      Effect.map(ledger.history(actionRequestId), (history) =>
        history.some((h) => {
          const detail = h.detail as {
            readonly outcome?: unknown
            readonly evidence?: { readonly standing?: unknown }
          } | null
          return (
            h.trigger === "completion" &&
            detail?.outcome === "succeeded" &&
            detail.evidence?.standing === "via_reconciliation"
          )
        })
      )

    const applyVerdict = (
      record: ActionRecord,
      judgement: Judgement,
      readAt: number,
      detail: Record<string, unknown>
    ) =>
      applyTrigger<ActionState, never, never>({
        ledger,
        actionRequestId: record.actionRequestId,
        record,
        trigger: { _tag: "ObservationJudged", verdict: judgement.verdict, isPayment: true },
        decide: (current, step, { round }) =>
          Effect.gen(function* () {
            if (round > 0 && (yield* newerReadRecorded(record.actionRequestId, readAt))) return answer(current.state)
            if (step === undefined || step._tag === "Illegal") return answer(current.state)
            // A read verifies only a success claimed with evidence a read confirms, of a type the
            // action's catalog entry accepts: otherwise it is recorded, not promoted.
            const unclaimed =
              step._tag === "Move" && step.to === "verified" && !(yield* claimedForRead(record.actionRequestId))
            const toState = step._tag === "Move" && !unclaimed ? step.to : current.state
            const verdict = unclaimed
              ? {
                  verdict: "inconclusive",
                  reason: "success_not_claimed_with_accepted_evidence",
                  unchanged: "evidence_not_accepted"
                }
              : { verdict: judgement.verdict, reason: judgement.reason, ...stepDetail(step) }
            return {
              _tag: "Write" as const,
              write: {
                toState,
                history: {
                  trigger: "reconciliation",
                  detail: { ...detail, ...verdict }
                }
              },
              settle: () => Effect.succeed(toState)
            }
          })
      })

    /** Sends the read and judges the answer; settles nothing. */
    const readOnce = (
      record: ActionRecord,
      payload: ReadPayload,
      attempt: number
    ): Effect.Effect<ReadResult, StorageError> =>
      Effect.gen(function* () {
        const decoded = yield* Effect.either(decodeStoredRequest(record))
        if (decoded._tag === "Left") return { _tag: "Skipped", reason: "invalid_stored_request" } as const
        const request = decoded.right
        const snapshot = request.payment
        if (!isPaymentAction(request) || snapshot === undefined)
          return { _tag: "Skipped", reason: "not_a_payment_action" } as const
        const referenceHash = yield* referenceHashOf(record, payload)
        if (Option.isNone(referenceHash)) return { _tag: "Skipped", reason: "no_provider_reference" } as const
        const connection = yield* connections.getById(record.connectionId)
        const revision = Option.flatMap(connection, (c) => Option.fromNullable(revisionNumbered(c, record.revision)))
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
        const headers = yield* signer.sign({
          purpose: "payment_reconciliation_request",
          keys: keys.value,
          body: bytes,
          nonce
        })
        const exchange = yield* Effect.either(
          transport.post({ url: revision.value.endpoint, headers, body: bytes, ...timeout })
        )
        if (exchange._tag === "Left") return { _tag: "Failed", reason: exchange.left.reason } as const
        const response = exchange.right
        if (response.status !== 200) return { _tag: "Failed", reason: `status_${response.status}` } as const
        const answer = yield* Effect.either(
          verifier.verifyAndDecode(PaymentObservation, {
            purpose: "payment_reconciliation_response",
            keys: keys.value,
            headers: response.headers,
            body: response.body,
            nonceScope: `payment_reconciliation_response:${record.connectionId}`
          })
        )
        if (answer._tag === "Left") {
          if (answer.left._tag === "StorageError") return yield* answer.left
          yield* Metrics.customerResponseRefused("observation", answer.left._tag)
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
        const judgement =
          record.state === "verified" && judged.verdict === "verified"
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
          ...(observation.chargedCurrency !== undefined ? { chargedCurrency: observation.chargedCurrency } : {}),
          refundedAmountMinor: observation.refundedAmountMinor
        })
        return { _tag: "Judged", judgement, state: state ?? record.state } as const
      })

    /** A read that will never give a final verdict stops; the history says so. */
    const abandon = (record: ActionRecord, attempts: number, lastReason: string) =>
      applyTrigger<void, never, never>({
        ledger,
        actionRequestId: record.actionRequestId,
        decide: (current) =>
          Effect.succeed({
            _tag: "Write" as const,
            write: {
              toState: current.state,
              history: { trigger: "reconciliation_abandoned", detail: { attempts, lastReason } }
            },
            settle: () => Effect.void
          })
      })

    const read = ({ action, item }: LeasedAction): Effect.Effect<ReadResult, StorageError> =>
      Effect.gen(function* () {
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
        } else if (
          Option.isSome(record) &&
          ((result._tag === "Failed" && result.final === true) || pastDeadline(retrySchedule, item.createdAt, now))
        ) {
          yield* abandon(record.value, item.attempts + 1, reason)
          yield* outbox.complete({ id: item.id, owner: options.owner, now })
        } else {
          const delay = yield* randomBackoffDelay(retrySchedule, item.attempts)
          if (result._tag === "Failed") {
            yield* Effect.logWarning("reconcile: the read failed; it is retried", {
              actionRequestId: payload.actionRequestId,
              reason
            })
          }
          yield* outbox.reschedule({ id: item.id, owner: options.owner, nextAttemptAt: now + delay, error: reason })
        }
        return result
      })

    const lease = (limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        ledger.leaseWithActions({ owner: options.owner, now, leaseMillis, limit, kinds: [reconcileOutboxKind] })
      )

    return { lease, read }
  })

/**
 * A reconciler running until its scope closes: up to `concurrency` reads in flight, leasing more as
 * slots free up, polling every `idleMillis` (default 1 s) when nothing is due.
 */
export const runReconciler = (
  options: ReconcilerOptions & { readonly idleMillis?: number }
): Effect.Effect<void, never, ReconcilerServices | Scope.Scope> =>
  Effect.gen(function* () {
    const reconciler = yield* makeReconciler(options)
    yield* runActionWorker({
      name: "reconcile",
      what: "a read",
      concurrency: options.concurrency ?? 8,
      idleMillis: options.idleMillis ?? 1_000,
      lease: reconciler.lease,
      work: reconciler.read
    })
  })
