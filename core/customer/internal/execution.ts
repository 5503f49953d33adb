/**
 * One claimed execution run through the host's `ActionExecutor` (spec "Rules for execution handling
 * on the customer side" 6–7): before the executor runs, the record moves `accepted` → `executing`
 * (a durable marker). An item whose record already says `executing`, or that failed before
 * (`attempts > 0`), may have run: the kit then "looks up its record by providerIdempotencyKey,
 * reconciles with the owning system" (`ActionExecutor.lookup`) and runs `execute` only when it
 * never ran. The completion body (with a fresh `completionId`) and its delivery item are then
 * committed in ONE `ActionLedger.transition` (`executing` → `completing`), before any delivery.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ActionLedgerService, ActionRecord } from "../../ports/ActionLedger.ts"
import type { CryptoService } from "../../ports/Crypto.ts"
import type { OutboxItem } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { toHex } from "../../protocol/Hex.ts"
import { Completion } from "../../protocol/messages/Completion.ts"
import { protocolVersion } from "../../protocol/Signing.ts"
import { formatTimestamp } from "../../protocol/Timestamp.ts"
import { ClaimedExecution } from "../ClaimedExecution.ts"
import type { ActionExecutorService, ExecutionResult } from "./actionExecutor.ts"
import { completionOutboxItem, kitStates } from "./kitRecord.ts"
import type { LeasedItemEnds } from "./leasedItem.ts"
import * as FastDecode from "../../protocol/FastDecode.ts"

const ExecutePayload = Schema.Struct({ actionRequestId: Schema.String })
const decodeExecutePayload = FastDecode.decodeUnknownOption(ExecutePayload)
const decodeClaimed = FastDecode.decodeUnknownOption(ClaimedExecution)
const validCompletion = FastDecode.is(Completion)

/**
 * Builds the step that runs one leased `customer.execute` item; `onPersisted` runs once its
 * completion was committed (the worker wakes its delivery loop).
 */
export const makeExecuteItem = (options: {
  readonly ledger: ActionLedgerService
  readonly crypto: CryptoService
  readonly executor: ActionExecutorService
  readonly executeTimeout: Duration.Duration
  readonly ends: LeasedItemEnds
  readonly onPersisted: Effect.Effect<unknown>
}): ((item: OutboxItem) => Effect.Effect<void, StorageError>) => {
  const { crypto, executeTimeout, executor, ledger, onPersisted } = options
  const { done, reschedule } = options.ends

  /** The completion body for `result`; a result the schema refuses becomes an honest `unknown`. */
  const completionBody = (record: ActionRecord, result: ExecutionResult) =>
    Effect.gen(function* () {
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
    Effect.gen(function* () {
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
    Effect.gen(function* () {
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
        outbox: completionOutboxItem(record, { completionId, body, now })
      })
      // Stale: another worker got there first (our lease had expired); its completion stands.
      yield* done(item)
      if (persisted._tag === "Applied") yield* onPersisted
    })

  return executeItem
}
