/**
 * The customer endpoint's execution claim and acknowledgement (spec "Rules for execution handling on
 * the customer side" 1–5; docs/decisions.md "Execution nonce and retries"): an execution is
 * acknowledged `202` only after `ActionLedger.create` returned, the record, its first history entry
 * and its outbox item committed together under the unique idempotency key, so "a concurrent or later
 * duplicate gets the original acknowledgement and never creates work again". A duplicate whose
 * request differs from the one first claimed under its key is not a retry: it is refused (409
 * `request_mismatch`, naming the differing fields) and stores nothing.
 *
 * With the payment hooks (`Payments.ts`), an accepted Payment action's intent is created before the
 * claim, only when no record exists under the key, and its reference is stored in the
 * acknowledgement; the acknowledgement then carries the continuation, and a duplicate gets the same
 * one read back from the provider. Such an action gets no execute item: its completions come from
 * the provider's webhooks.
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ActionLedgerService, ActionRecord } from "../../ports/ActionLedger.ts"
import type { CryptoService, CryptoSyncService } from "../../ports/Crypto.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { checkIdempotencyKeySync, checkIdempotencyKeyWith } from "../../protocol/Idempotency.ts"
import { canonicalJson } from "../../protocol/Json.ts"
import type { AcceptedAck, RejectedAck } from "../../protocol/messages/Acknowledgement.ts"
import type { PaymentContinuation } from "../../protocol/messages/Continuation.ts"
import { Code } from "../../protocol/messages/Common.ts"
import { ExecutionRequest } from "../../protocol/messages/Execution.ts"
import { headerNames, protocolVersion, type SigningKeys } from "../../protocol/Signing.ts"
import { parseTimestamp } from "../../protocol/Timestamp.ts"
import { readHeader, ReplayedNonce, type VerificationError } from "../../protocol/Verification.ts"
import type { ClaimedExecution } from "../ClaimedExecution.ts"
import type { PaymentClaim } from "../Payments.ts"
import { expiryOutboxItem } from "./paymentEvents.ts"
import { StoredPayment } from "./paymentRecord.ts"
import { type ParsedRequest, type CustomerResponse, type EndpointExchange, errorResponse } from "./endpoint.ts"
import * as FastDecode from "../../protocol/FastDecode.ts"

/**
 * The ledger record kind and outbox kind of a claimed execution.
 */
export const executeOutboxKind = "customer.execute"

/**
 * What the ledger stores as a record's `acknowledgement`: the original state and error code, which
 * every duplicate delivery is answered with (a duplicate's state and error code are the original's).
 */
export const StoredAcknowledgement = Schema.Struct({
  state: Schema.Literal("accepted", "rejected"),
  errorCode: Schema.optionalWith(Code, { exact: true }),
  /** A Payment action's intent and binding (`Payments.ts`): its continuation answers duplicates too. */
  payment: Schema.optionalWith(StoredPayment, { exact: true })
})

export type StoredAcknowledgement = typeof StoredAcknowledgement.Type

/**
 * The top-level fields in which a claimed request differs from the stored one (compared as JSON:
 * storage may reorder keys), by name only, never by value.
 */
const differingFields = (stored: unknown, claimed: ClaimedExecution): ReadonlyArray<string> => {
  const before = (typeof stored === "object" && stored !== null ? stored : {}) as Readonly<Record<string, unknown>>
  const after = claimed as unknown as Readonly<Record<string, unknown>>
  return [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((field) => canonicalJson(before[field]) !== canonicalJson(after[field]))
    .sort()
}

const isCode = Schema.is(Code)
const decodeStored = FastDecode.decodeUnknownOption(StoredAcknowledgement)

/**
 * Builds the execution claim: verifies, checks the idempotency key, runs the host's precheck, claims
 * the request in the ledger and acknowledges it (or answers a duplicate with the original). Without a
 * precheck or payment hook the nonce is recorded in the claim's statement (one statement fewer per
 * execution): the spec's "before using the parsed payload" holds, since before it the payload only
 * serves the checks that refuse, and a replay writes nothing and gets `replayed_nonce` as before.
 */
export const makeExecutionClaim = (options: {
  readonly workspaceId: string
  readonly connectionId: string
  readonly precheck: ((request: ExecutionRequest) => Effect.Effect<Option.Option<string>>) | undefined
  readonly onClaimed: Effect.Effect<void> | undefined
  /** Payment actions: the intent and continuation (`Payments.ts`); without it they run like any other. */
  readonly payment?: PaymentClaim | undefined
  readonly crypto: CryptoService
  /** The synchronous digest, where the `Crypto` has one (`node:crypto`). */
  readonly cryptoSync: CryptoSyncService | undefined
  readonly ledger: ActionLedgerService
  readonly exchange: EndpointExchange
}): ((input: ParsedRequest) => Effect.Effect<CustomerResponse, VerificationError | StorageError>) => {
  const { connectionId, crypto, cryptoSync, ledger, workspaceId } = options
  const { signed, verifyAndDecode } = options.exchange

  const acknowledge = (
    keys: SigningKeys,
    request: ExecutionRequest,
    nonce: string,
    stored: StoredAcknowledgement,
    continuation?: PaymentContinuation
  ): Effect.Effect<CustomerResponse> => {
    const echoed = {
      type: "service.customer_action.ack" as const,
      protocolVersion: protocolVersion as typeof protocolVersion,
      workspaceId: request.workspaceId,
      actionRequestId: request.actionRequestId,
      providerIdempotencyKey: request.providerIdempotencyKey,
      requestNonce: nonce
    }
    const ack: AcceptedAck | RejectedAck =
      stored.state === "accepted"
        ? { ...echoed, state: "accepted", ...(continuation !== undefined ? { continuation } : {}) }
        : { ...echoed, state: "rejected", ...(stored.errorCode !== undefined ? { errorCode: stored.errorCode } : {}) }
    return signed(keys, 202, "dispatch_response", ack)
  }

  // Without a precheck or payment hook, nothing of the payload is used before the claim, so the
  // nonce is recorded in the claim's own statement (`ActionLedger.create`'s `nonce`): a replay
  // writes nothing and is refused as one. With them, the nonce is recorded first, on its own.
  const nonceWithClaim = options.precheck === undefined && options.payment === undefined
  const verified = (input: ParsedRequest) =>
    nonceWithClaim
      ? options.exchange.verifyAndDecodeUnclaimed(ExecutionRequest, "dispatch_request", input)
      : Effect.map(verifyAndDecode(ExecutionRequest, "dispatch_request", input), (v) => ({ ...v, nonce: undefined }))

  // The clock is read once per request from its fiber, then synchronously.
  return (input: ParsedRequest): Effect.Effect<CustomerResponse, VerificationError | StorageError> =>
    Effect.clockWith((clock) => claimWith(clock, input))

  function claimWith(
    clock: Clock.Clock,
    input: ParsedRequest
  ): Effect.Effect<CustomerResponse, VerificationError | StorageError> {
    return Effect.gen(function* () {
      const { body: request, entry, headers, nonce } = yield* verified(input)
      // Until the claim records the nonce, the request may be a replay: these checks only refuse.
      if (request.requestNonce !== headers.nonce || request.workspaceId !== workspaceId) {
        return errorResponse(401, { error: "binding_mismatch" })
      }
      const keyInput = { header: readHeader(input.headers, headerNames.idempotencyKey), body: request }
      const keyMismatch =
        cryptoSync !== undefined
          ? typeof checkIdempotencyKeySync(cryptoSync.sha256Hex, keyInput) !== "string"
          : (yield* Effect.either(checkIdempotencyKeyWith(crypto, undefined, keyInput)))._tag === "Left"
      if (keyMismatch) return errorResponse(401, { error: "idempotency_key_mismatch" })

      const verdict = options.precheck === undefined ? Option.none() : yield* options.precheck(request)
      const stored: StoredAcknowledgement = Option.match(verdict, {
        onNone: (): StoredAcknowledgement => ({ state: "accepted" }),
        onSome: (code): StoredAcknowledgement => ({ state: "rejected", errorCode: isCode(code) ? code : "rejected" })
      })
      const { requestNonce: _nonce, requestedAt: _requestedAt, ...claimed } = request
      // A duplicate: answer with the original acknowledgement, never creating work again, but only
      // for the same request (rule 3); the same key with other bindings is refused.
      const duplicate = (existing: Option.Option<ActionRecord>) =>
        Effect.gen(function* () {
          if (Option.isNone(existing)) return errorResponse(409, { error: "conflict" })
          const fields = differingFields(existing.value.request, claimed)
          if (fields.length > 0) return errorResponse(409, { error: "request_mismatch", fields })
          const original = decodeStored(existing.value.acknowledgement)
          if (Option.isNone(original)) return errorResponse(409, { error: "conflict" })
          const payment = original.value.payment
          if (payment === undefined || options.payment === undefined) {
            return yield* acknowledge(entry.keys, request, headers.nonce, original.value)
          }
          // The same intent as the first answer (its client secret read back), until it expires.
          const presented = yield* Effect.either(options.payment.present(payment))
          if (presented._tag === "Left") return errorResponse(503, { error: "payment_provider_unavailable" })
          return yield* acknowledge(
            entry.keys,
            request,
            headers.nonce,
            original.value,
            Option.getOrUndefined(presented.right)
          )
        })
      let acknowledged = stored
      let continuation: PaymentContinuation | undefined
      if (stored.state === "accepted" && options.payment !== undefined) {
        // A Payment action's intent is created before the claim (under the key as the provider's
        // idempotency key, so a concurrent duplicate gets the same intent) and only when no claim exists.
        const existing = yield* ledger.getByIdempotencyKey(request.providerIdempotencyKey)
        if (Option.isSome(existing)) return yield* duplicate(existing)
        const prepared = yield* Effect.either(options.payment.prepare(request))
        if (prepared._tag === "Left") return errorResponse(503, { error: "payment_provider_unavailable" })
        if (prepared.right._tag === "Rejected")
          acknowledged = { state: "rejected", errorCode: prepared.right.errorCode }
        if (prepared.right._tag === "Prepared") {
          acknowledged = { state: "accepted", payment: prepared.right.payment }
          continuation = prepared.right.continuation
        }
      }
      const now = clock.unsafeCurrentTimeMillis()
      const created = yield* ledger.create({
        ...(nonce === undefined ? {} : { nonce }),
        record: {
          actionRequestId: request.actionRequestId,
          workspaceId: request.workspaceId,
          accountId: request.accountId,
          connectionId,
          revision: entry.revision,
          providerIdempotencyKey: request.providerIdempotencyKey,
          state: acknowledged.state,
          request: claimed,
          acknowledgement: acknowledged,
          sealedContinuation: null,
          createdAt: now
        },
        history: {
          at: now,
          trigger: "customer.execute_received",
          detail: acknowledged.errorCode !== undefined ? { errorCode: acknowledged.errorCode } : {}
        },
        // A Payment action with an intent completes from the provider's webhooks, not the executor;
        // its continuation's expiry is scheduled with the claim (`paymentEvents.ts`).
        ...(acknowledged.state === "accepted" && acknowledged.payment !== undefined
          ? {
              outbox: expiryOutboxItem(
                request.actionRequestId,
                now,
                parseTimestamp(acknowledged.payment.expiresAt) ?? now
              )
            }
          : {}),
        ...(acknowledged.state === "accepted" && acknowledged.payment === undefined
          ? {
              outbox: {
                id: request.actionRequestId,
                kind: executeOutboxKind,
                dedupeKey: request.providerIdempotencyKey,
                payload: { actionRequestId: request.actionRequestId },
                nextAttemptAt: now,
                createdAt: now
              }
            }
          : {})
      })
      if (created === "created") {
        if (acknowledged.state === "accepted" && options.onClaimed !== undefined) yield* options.onClaimed
        return yield* acknowledge(entry.keys, request, headers.nonce, acknowledged, continuation)
      }
      if (created === "replayed_nonce") return yield* new ReplayedNonce()

      return yield* duplicate(yield* ledger.getByIdempotencyKey(request.providerIdempotencyKey))
    })
  }
}
