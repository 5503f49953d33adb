/**
 * The evidence watcher: a `succeeded` completion that points to evidence the service does not hold
 * yet (a Direct API event, an approval) leaves the action `pending` with a `service.evidence` outbox
 * item. The watcher leases those items and looks again (`evidenceSchedule`: 1 s doubling to 30 s, for
 * 24 hours): once the service holds the evidence, the `EvidenceObserved` trigger verifies the action;
 * an action that left `pending` meanwhile (a later `failed` completion) ends the watch; past the
 * deadline (the matching window) the watch ends with an `evidence_wait_ended` history entry and the
 * action becomes `evidence_overdue`, so an operator sees it (`GET /action-requests?state=`, the
 * console, `accord_evidence_overdue_total`) instead of an action pending for ever.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { ActionLedger, type ActionRecord, type LeasedAction } from "../ports/ActionLedger.ts"
import { EventStore } from "../ports/EventStore.ts"
import { Outbox } from "../ports/Outbox.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { pastDeadline, randomBackoffDelay } from "../protocol/Backoff.ts"
import * as Metrics from "../telemetry/Metrics.ts"
import { decodeStoredRequest, isPaymentAction } from "./Action.ts"
import type { Backoff } from "../protocol/Backoff.ts"
import { runActionWorker } from "./internal/actionWorker.ts"
import { answer, applyTrigger, stepDetail } from "./internal/applyTrigger.ts"
import { evidenceOutboxKind, type EvidenceWatch, holdsEvidence } from "./ObservedEvidence.ts"

/**
 * When the watcher looks again (Accord's choice): 1 s doubling to 30 s, for 24 hours after the
 * completion. The cap is short so that an event arriving late verifies the action within 30 s.
 */
export const evidenceSchedule = {
  baseMillis: 1_000,
  capMillis: 30_000,
  deadlineMillis: 24 * 60 * 60_000
} as const satisfies Backoff

/**
 * How one look ended.
 */
export type WatchResult = "verified" | "waiting" | "ended" | "skipped"

/**
 * Watches actions waiting for evidence the service observes itself: leases them, looks for their
 * evidence, settles or reschedules.
 */
export interface EvidenceWatcher {
  /** Leases up to `limit` actions whose evidence is due to be looked for. */
  readonly lease: (limit: number) => Effect.Effect<ReadonlyArray<LeasedAction>, StorageError>
  /** Looks for the leased action's evidence and settles it, or schedules the next look. */
  readonly look: (leased: LeasedAction) => Effect.Effect<WatchResult, StorageError>
}

/** What the evidence watcher needs: the ledger, the event store and the outbox. */
export type EvidenceWatcherServices = ActionLedger | EventStore | Outbox

/**
 * Builds a watcher bound to its services.
 */
export const makeEvidenceWatcher = (options: {
  readonly owner: string
  readonly leaseMillis?: number
}): Effect.Effect<EvidenceWatcher, never, EvidenceWatcherServices> =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    const events = yield* EventStore
    const outbox = yield* Outbox
    const leaseMillis = options.leaseMillis ?? 30_000

    const verify = (
      record: ActionRecord,
      watch: EvidenceWatch,
      completes: { readonly id: string; readonly owner: string }
    ) =>
      applyTrigger<WatchResult, never, never>({
        ledger,
        actionRequestId: record.actionRequestId,
        record,
        trigger: { _tag: "EvidenceObserved", isPayment: false },
        decide: (_current, step) =>
          Effect.succeed(
            step?._tag !== "Move"
              ? answer<WatchResult>("ended")
              : {
                  _tag: "Write" as const,
                  write: {
                    toState: step.to,
                    history: {
                      trigger: "evidence_observed",
                      detail: { type: watch.type, completionId: watch.completionId, ...stepDetail(step) }
                    },
                    completeOutboxItem: completes
                  },
                  settle: () => Effect.succeed<WatchResult>("verified")
                }
          )
      })

    // The window passed without the evidence: `pending` becomes `evidence_overdue` (an action that
    // left `pending` meanwhile keeps its state), counted by evidence type.
    const endWatch = (record: ActionRecord, watch: EvidenceWatch, attempts: number) =>
      applyTrigger<void, never, never>({
        ledger,
        actionRequestId: record.actionRequestId,
        record,
        trigger: { _tag: "EvidenceWindowPassed" },
        decide: (current, step) =>
          Effect.succeed({
            _tag: "Write" as const,
            write: {
              toState: step?._tag === "Move" ? step.to : current.state,
              history: { trigger: "evidence_wait_ended", detail: { type: watch.type, attempts, ...stepDetail(step) } }
            },
            settle: () =>
              step?._tag === "Move" ? Metrics.count(Metrics.evidenceOverdue, "type", watch.type) : Effect.void
          })
      })

    const look = ({ action, item }: LeasedAction): Effect.Effect<WatchResult, StorageError> =>
      Effect.gen(function* () {
        const watch = item.payload as EvidenceWatch
        const completes = { id: item.id, owner: options.owner }
        const record = Option.isSome(action) ? action : yield* ledger.get(watch.actionRequestId)
        const now = yield* Clock.currentTimeMillis
        const done = (result: WatchResult) => Effect.as(outbox.complete({ ...completes, now }), result)
        if (Option.isNone(record)) return yield* done("skipped")
        if (record.value.state !== "pending") return yield* done("ended")
        const request = yield* Effect.either(decodeStoredRequest(record.value))
        if (request._tag === "Left" || isPaymentAction(request.right)) return yield* done("skipped")
        if (yield* holdsEvidence({ events, ledger }, watch.type, record.value, request.right)) {
          const result = yield* verify(record.value, watch, completes)
          if (result === "verified") return result
          return yield* done(result ?? "ended")
        }
        if (pastDeadline(evidenceSchedule, item.createdAt, now)) {
          yield* endWatch(record.value, watch, item.attempts + 1)
          return yield* done("ended")
        }
        const delay = yield* randomBackoffDelay(evidenceSchedule, item.attempts)
        yield* outbox.reschedule({ ...completes, nextAttemptAt: now + delay, error: "evidence_not_observed" })
        return "waiting" as const
      })

    const lease = (limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        ledger.leaseWithActions({ owner: options.owner, now, leaseMillis, limit, kinds: [evidenceOutboxKind] })
      )

    return { lease, look }
  })

/**
 * The watcher running until its scope closes.
 */
export const runEvidenceWatcher = (options: {
  readonly owner: string
  readonly idleMillis?: number
  readonly concurrency?: number
}): Effect.Effect<void, never, EvidenceWatcherServices | Scope.Scope> =>
  Effect.gen(function* () {
    const watcher = yield* makeEvidenceWatcher(options)
    yield* runActionWorker({
      name: "evidence",
      what: "a look",
      concurrency: options.concurrency ?? 8,
      idleMillis: options.idleMillis ?? 1_000,
      lease: watcher.lease,
      work: watcher.look
    })
  })
