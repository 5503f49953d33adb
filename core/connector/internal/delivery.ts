/**
 * One delivery of an action to the customer endpoint and the write of its answer (spec "Execution
 * request body", "Execution acknowledgement body", "Payment continuation rules"; docs/decisions.md,
 * "Execution nonce and retries"): the execution body is built and signed per delivery (fresh
 * `requestNonce` = nonce header, fresh `requestedAt`, the same `providerIdempotencyKey`), and only a
 * signed HTTP 202 `dispatch_response` acknowledgement that echoes every binding of this delivery
 * counts. Anything else after the request may have reached the endpoint is an unknown outcome
 * (`DeliveryAmbiguous`); a failure before anything was sent changes nothing.
 *
 * Before every attempt, first send and retries alike, a Payment action passes the payment
 * capability gate again (`Capability.paymentGate`): if it does not, nothing is sent, the
 * outbox item is completed and the `Blocked` trigger is applied (a never-sent action ends `blocked`;
 * an `unknown_outcome` one keeps its state with a `delivery_blocked` history entry). A continuation
 * in the acknowledgement passes the same gate once more, with the same reasons
 * (`response_continuation_<reason>` when it does not).
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ActionLedger, type ActionRecord } from "../../ports/ActionLedger.ts"
import { CapabilityRegistry } from "../../ports/CapabilityRegistry.ts"
import { type ConnectionRevision, ConnectionStore } from "../../ports/ConnectionStore.ts"
import { ConnectorTransport } from "../../ports/ConnectorTransport.ts"
import { Crypto } from "../../ports/Crypto.ts"
import type { SecretVault } from "../../ports/SecretVault.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { Cipher } from "../../protocol/Cipher.ts"
import { Acknowledgement } from "../../protocol/messages/Acknowledgement.ts"
import { Code } from "../../protocol/messages/Common.ts"
import type { ExecutionRequest } from "../../protocol/messages/Execution.ts"
import { encodeBody, headerNames, protocolVersion } from "../../protocol/Signing.ts"
import { formatTimestamp } from "../../protocol/Timestamp.ts"
import { snakeCaseTag } from "../../protocol/Verification.ts"
import * as Metrics from "../../telemetry/Metrics.ts"
import { decodeStoredRequestEither, isPaymentAction } from "../Action.ts"
import type { ActionState, Trigger } from "../ActionState.ts"
import { continuationProblem, paymentGateWith } from "../Capability.ts"
import { Revalidation } from "../Revalidation.ts"
import { revisionNumbered } from "../Revisions.ts"
import { answer, applyTrigger, stepDetail } from "./applyTrigger.ts"
import { makeOutbound } from "./outbound.ts"

/**
 * How one delivery ended.
 */
export type DeliveryResult =
  | { readonly _tag: "Acknowledged"; readonly state: "accepted" | "rejected" }
  | { readonly _tag: "Ambiguous"; readonly reason: string }
  | { readonly _tag: "NotSent"; readonly reason: string }
  | { readonly _tag: "Skipped"; readonly reason: string }
  | { readonly _tag: "Blocked"; readonly reason: string }

/**
 * How long a dispatcher trusts a connection revision it read (endpoint and state).
 */
export const revisionCacheMillis = 5_000

/**
 * The services one delivery uses.
 */
export type DeliveryServices =
  | ActionLedger
  | ConnectionStore
  | SecretVault
  | CapabilityRegistry
  | Cipher
  | Crypto
  | ConnectorTransport
  | Revalidation

/**
 * Delivers `record` (attempt number `attempt`) and writes the answer; `completes` is the leased
 * outbox item an acknowledgement's write also completes. `itemCompleted` says whether it did.
 */
export type DeliverAction = (
  record: ActionRecord,
  attempt: number,
  completes: { readonly id: string; readonly owner: string },
  /** The provider connection generation the action was taken under (its outbox payload), if known. */
  generation?: string
) => Effect.Effect<{ readonly result: DeliveryResult; readonly itemCompleted: boolean }, StorageError>

const isCode = Schema.is(Code)

const notWritten = (result: DeliveryResult) => ({ result, itemCompleted: false })

/**
 * Builds the delivery of a dispatcher. Signing keys are imported once per connection revision and
 * kept for the dispatcher's life (a retired revision is never delivered to).
 */
export const makeDeliverAction = (options: {
  readonly timeoutMillis?: number
}): Effect.Effect<DeliverAction, never, DeliveryServices> =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    const connections = yield* ConnectionStore
    const capabilities = yield* CapabilityRegistry
    const cipher = yield* Cipher
    const crypto = yield* Crypto
    const transport = yield* ConnectorTransport
    const revalidation = yield* Revalidation
    const { keysFor, signer, timeout, verifier } = yield* makeOutbound(options)
    const gateOf = paymentGateWith({ connections, capabilities })

    /**
     * Applies an acknowledgement or an ambiguous delivery. A completion may have moved the action on
     * (it proves acceptance) before this acknowledgement was processed: the acknowledgement and its
     * sealed continuation are still stored, with a history entry and no change of state.
     */
    const apply = (
      clock: Clock.Clock,
      record: ActionRecord,
      trigger: Trigger,
      extra: {
        readonly detail: Record<string, unknown>
        readonly acknowledgement?: unknown
        readonly sealedContinuation?: string
        readonly completes?: { readonly id: string; readonly owner: string }
      }
    ): Effect.Effect<{ readonly state: ActionState; readonly written: boolean } | undefined, StorageError> =>
      applyTrigger<{ readonly state: ActionState; readonly written: boolean }, never, never>({
        ledger,
        clock,
        actionRequestId: record.actionRequestId,
        record,
        trigger,
        decide: (current, step) => {
          const late = step?._tag === "Stay" && extra.acknowledgement !== undefined && current.acknowledgement === null
          if (step?._tag !== "Move" && !late) return Effect.succeed(answer({ state: current.state, written: false }))
          const toState = step._tag === "Move" ? step.to : current.state
          return Effect.succeed({
            _tag: "Write" as const,
            write: {
              toState,
              history: {
                trigger:
                  trigger._tag === "AckAccepted" || trigger._tag === "AckRejected"
                    ? "acknowledgement"
                    : "delivery_ambiguous",
                detail: { ...extra.detail, ...stepDetail(step) }
              },
              ...(extra.acknowledgement !== undefined ? { acknowledgement: extra.acknowledgement } : {}),
              ...(extra.sealedContinuation !== undefined ? { sealedContinuation: extra.sealedContinuation } : {}),
              ...(extra.completes !== undefined ? { completeOutboxItem: extra.completes } : {})
            },
            settle: () => Effect.succeed({ state: toState, written: true })
          })
        }
      })

    /**
     * The gate refused to send: a never-sent action ends `blocked`; one that may have reached the
     * customer keeps `unknown_outcome` (reconciled, never dropped) and is not sent again. Either
     * way the history names the reason and the outbox item is completed.
     */
    const block = (
      clock: Clock.Clock,
      record: ActionRecord,
      attempt: number,
      reason: string,
      completes: { readonly id: string; readonly owner: string }
    ) =>
      applyTrigger<{ readonly result: DeliveryResult; readonly itemCompleted: boolean }, never, never>({
        ledger,
        clock,
        actionRequestId: record.actionRequestId,
        record,
        trigger: { _tag: "Blocked", reason },
        decide: (current, step) => {
          const kept = step?._tag === "Stay" && step.reason === "delivery_blocked"
          if (step?._tag !== "Move" && !kept) {
            return Effect.succeed(answer(notWritten({ _tag: "Skipped", reason: "already_acknowledged" })))
          }
          return Effect.succeed({
            _tag: "Write" as const,
            write: {
              toState: step._tag === "Move" ? step.to : current.state,
              history: { trigger: step._tag === "Move" ? "blocked" : "delivery_blocked", detail: { attempt, reason } },
              completeOutboxItem: completes
            },
            settle: () => Effect.succeed({ result: { _tag: "Blocked" as const, reason }, itemCompleted: true })
          })
        }
      }).pipe(Effect.map((applied) => applied ?? notWritten({ _tag: "Skipped", reason: "concurrent_change" })))

    // A revision's endpoint never changes; its state is re-read at most every few seconds, so a
    // busy dispatcher does not read the connection for every delivery. A fresh entry is kept as the
    // effect that answers it.
    const revisionCache = new Map<
      string,
      { readonly at: number; readonly answer: Effect.Effect<Option.Option<ConnectionRevision>> }
    >()
    const revisionOf = (
      connectionId: string,
      revision: number,
      now: number
    ): Effect.Effect<Option.Option<ConnectionRevision>, StorageError> => {
      const key = `${connectionId}:${revision}`
      const hit = revisionCache.get(key)
      if (hit !== undefined && now - hit.at < revisionCacheMillis) return hit.answer
      return Effect.map(connections.getById(connectionId), (connection) => {
        const found = Option.flatMap(connection, (c) => Option.fromNullable(revisionNumbered(c, revision)))
        revisionCache.set(key, { at: now, answer: Effect.succeed(found) })
        return found
      })
    }

    // The clock is read once per delivery from its fiber (a caller's `Effect.withClock` counts), then
    // synchronously: a `Clock.currentTimeMillis` step per reading measurably added up.
    return (record, attempt, completes, generation) =>
      Effect.clockWith((clock) => deliverWith(clock, record, attempt, completes, generation))

    function deliverWith(
      clock: Clock.Clock,
      record: ActionRecord,
      attempt: number,
      completes: { readonly id: string; readonly owner: string },
      generation: string | undefined
    ): Effect.Effect<{ readonly result: DeliveryResult; readonly itemCompleted: boolean }, StorageError> {
      return Effect.gen(function* () {
        if (record.state !== "dispatching" && record.state !== "unknown_outcome") {
          return notWritten({ _tag: "Skipped", reason: "already_acknowledged" })
        }
        const decoded = decodeStoredRequestEither(record)
        if (Either.isLeft(decoded)) return notWritten({ _tag: "Skipped", reason: "invalid_stored_request" })
        const request = decoded.right
        const startedAt = clock.unsafeCurrentTimeMillis()
        const revision = yield* revisionOf(record.connectionId, record.revision, startedAt)
        if (Option.isNone(revision) || revision.value.state === "retired") {
          return notWritten({ _tag: "NotSent", reason: "revision_unavailable" })
        }
        // Before every attempt, first send and retries alike: the catalog, account, authority and
        // frequency still allow the action, or nothing is sent.
        const revalidated = yield* revalidation
          .check({
            workspaceId: record.workspaceId,
            request,
            stored: { actionRequestId: record.actionRequestId, createdAt: record.createdAt },
            now: startedAt
          })
          .pipe(Effect.either)
        if (revalidated._tag === "Left") {
          if (revalidated.left._tag === "StorageError") return yield* revalidated.left
          return yield* block(clock, record, attempt, revalidated.left.reason, completes)
        }
        // The time of this attempt: the gate's and the body's `requestedAt`.
        const now = clock.unsafeCurrentTimeMillis()
        // Read fresh, not from the revision cache: a lapsed or invalidated capability must stop this very attempt.
        // Only a Payment action has a gate to pass.
        const gate = !isPaymentAction(request)
          ? undefined
          : yield* gateOf(record.connectionId, request, {
              now,
              boundRevision: record.revision,
              ...(generation !== undefined ? { generation } : {})
            })
        if (gate !== undefined && gate.verdict !== "covered")
          return yield* block(clock, record, attempt, gate.verdict, completes)
        const keys = yield* keysFor(record.connectionId, record.revision)
        if (Option.isNone(keys)) return notWritten({ _tag: "NotSent", reason: "secrets_unavailable" })
        const nonce = yield* signer.freshNonce
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
        const signing = { purpose: "dispatch_request" as const, keys: keys.value, body: bytes, nonce }
        const headers = yield* signer.sign(signing)
        const exchange = yield* transport
          .post({
            url: revision.value.endpoint,
            headers: { ...headers, [headerNames.idempotencyKey]: record.providerIdempotencyKey },
            body: bytes,
            ...timeout
          })
          .pipe(Effect.either)
        const ambiguous = (reason: string) =>
          Effect.as(
            apply(clock, record, { _tag: "DeliveryAmbiguous" }, { detail: { attempt, reason } }),
            notWritten({ _tag: "Ambiguous", reason })
          )
        if (exchange._tag === "Left") {
          const failure = exchange.left
          return failure.maybeDelivered
            ? yield* ambiguous(failure.reason)
            : notWritten({ _tag: "NotSent", reason: failure.reason })
        }
        const response = exchange.right
        if (response.status !== 202)
          return yield* ambiguous(
            response.status >= 300 && response.status < 400 ? "redirect" : `status_${response.status}`
          )
        const verified = yield* verifier
          .verifyAndDecode(Acknowledgement, {
            purpose: "dispatch_response",
            keys: keys.value,
            headers: response.headers,
            body: response.body,
            nonceScope: `dispatch_response:${record.connectionId}`
          })
          .pipe(Effect.either)
        if (verified._tag === "Left") {
          if (verified.left._tag === "StorageError") return yield* verified.left
          yield* Metrics.customerResponseRefused("acknowledgement", verified.left._tag)
          return yield* ambiguous(`response_${snakeCaseTag(verified.left._tag)}`)
        }
        const ack = verified.right.body
        if (
          ack.workspaceId !== record.workspaceId ||
          ack.actionRequestId !== record.actionRequestId ||
          ack.providerIdempotencyKey !== record.providerIdempotencyKey ||
          ack.requestNonce !== nonce
        ) {
          return yield* ambiguous("response_binding_mismatch")
        }
        const referenceHash =
          ack.providerReference === undefined ? undefined : yield* crypto.sha256Hex(ack.providerReference)
        const stored = {
          state: ack.state,
          ...(referenceHash !== undefined ? { providerReferenceHash: referenceHash } : {}),
          ...(ack.state === "rejected" && ack.errorCode !== undefined ? { errorCode: ack.errorCode } : {})
        }
        let sealedContinuation: string | undefined
        if (ack.state === "accepted" && ack.continuation !== undefined) {
          // "Allowed only on an accepted, server-authorized Payment action ... Each requires its
          // matching workspace capability and the current connector revision": the continuation's
          // own rules, then the gate's verdict again, read fresh at receipt, with the same reasons.
          const problem =
            continuationProblem(request, ack.continuation) ??
            (yield* gateOf(record.connectionId, request, {
              now: clock.unsafeCurrentTimeMillis(),
              boundRevision: record.revision,
              ...(generation !== undefined ? { generation } : {})
            }).pipe(
              Effect.map((answer) =>
                answer === undefined || answer.verdict === "covered" ? undefined : answer.verdict
              )
            ))
          if (problem !== undefined) return yield* ambiguous(`response_continuation_${problem}`)
          sealedContinuation = yield* cipher.seal(
            JSON.stringify(ack.continuation),
            `continuation:${record.actionRequestId}`
          )
        }
        const applied = yield* apply(
          clock,
          record,
          { _tag: ack.state === "accepted" ? "AckAccepted" : "AckRejected" },
          {
            completes,
            detail: {
              attempt,
              state: ack.state,
              ...(referenceHash !== undefined ? { providerReferenceHash: referenceHash } : {}),
              ...(ack.state === "rejected" && ack.errorCode !== undefined && isCode(ack.errorCode)
                ? { errorCode: ack.errorCode }
                : {}),
              ...(sealedContinuation !== undefined ? { continuation: "stored_encrypted" } : {})
            },
            acknowledgement: stored,
            ...(sealedContinuation !== undefined ? { sealedContinuation } : {})
          }
        )
        if (applied === undefined) return notWritten({ _tag: "Skipped", reason: "concurrent_change" })
        return { result: { _tag: "Acknowledged", state: ack.state }, itemCompleted: applied.written }
      })
    }
  })
