/**
 * The customer kit's inbound endpoint (spec "Rules for execution handling on the customer side"
 * 1–5, "Authentication", DESIGN D1, D2, D12): one route that answers the service's handshake and
 * execution requests.
 *
 * One endpoint serves every message type, so the `type` is read from the still untrusted JSON only
 * to choose the signing purpose; the signature is then verified over the raw bytes with that
 * purpose, and only then is the body decoded with its schema. An execution is acknowledged `202`
 * only after `ActionLedger.create` returned: the record, its first history entry and its outbox item
 * are committed together under the unique idempotency key, so a concurrent or later duplicate gets
 * the original acknowledgement and never creates work again. A "duplicate" whose request differs
 * from the one first claimed under its key (another account, action, actor or binding) is not a
 * retry: it is refused (409 `request_mismatch`, naming the differing fields) and stores nothing.
 *
 * The endpoint may hold several connection revisions' secrets (`Keyring.ts`): a handshake is
 * verified and answered with the pair of the revision its header names, any other request with the
 * first pair whose action signing secret verifies it, and a claimed execution is recorded under
 * that pair's revision.
 *
 * `handle` never fails: every error becomes a JSON response that names a code and, for shape
 * errors, the failing paths, never the received values.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ActionLedger } from "../ports/ActionLedger.ts"
import { Crypto } from "../ports/Crypto.ts"
import { checkIdempotencyKey } from "../protocol/Idempotency.ts"
import { canonicalJson } from "../protocol/Json.ts"
import type { AcceptedAck, RejectedAck } from "../protocol/messages/Acknowledgement.ts"
import { Code } from "../protocol/messages/Common.ts"
import { ExecutionRequest } from "../protocol/messages/Execution.ts"
import { type HandshakeAck, HandshakeRequest, type PaymentCapabilities } from "../protocol/messages/Handshake.ts"
import { PaymentObservation, PaymentReconciliationRequest } from "../protocol/messages/Reconciliation.ts"
import type { NonceStore } from "../ports/NonceStore.ts"
import { encodeBody, headerNames, makeSigner, protocolVersion, type Purpose, type SigningKeys } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { ClaimedExecution } from "./ClaimedExecution.ts"
import type { PaymentReaderService } from "./Reconciliation.ts"
import { decodeBody, type HeaderSource, makeVerifier, readHeader, snakeCaseTag, type VerificationError } from "../protocol/Verification.ts"
import { parseJsonBody } from "../protocol/Json.ts"
import { type KeyOptions, keyringOf, type RevisionKeys } from "./Keyring.ts"

/**
 * Everything but the keys (see `CustomerHandlerOptions`).
 *
 * @since 0.1.0
 */
export interface CustomerHandlerSettings {
  readonly workspaceId: string
  /** Recorded on every ledger record; `"customer"` when absent. */
  readonly connectionId?: string
  /**
   * Decides, before the request is claimed, whether to reject it: `Some(errorCode)` rejects it
   * (the rejection is recorded too, so a retry gets the same answer). An errorCode that is not a
   * bounded code (`[A-Za-z0-9_.:-]{1,64}`) is replaced by `rejected`.
   */
  readonly precheck?: (request: ExecutionRequest) => Effect.Effect<Option.Option<string>>
  /**
   * The payment capability proof, sent in every `handshake_ack` only when configured: the modes the
   * host's payment handler supports and its connected provider account.
   */
  readonly payment?: {
    readonly modes: PaymentCapabilities["modes"]
    /** The connected payment provider account ID (e.g. Stripe's `acct_…`); only its hash is sent. */
    readonly providerAccountId: string
    readonly livemode: boolean
  }
  /** Answers payment reconciliation reads; without it they get 501 `reconciliation_unsupported`. */
  readonly paymentReader?: PaymentReaderService
  /** Run after an execution was claimed (the kit wakes its worker). */
  readonly onClaimed?: Effect.Effect<void>
}

/**
 * The settings plus the keys: `keys` with the connection `revision` they belong to (default 0,
 * "the initial revision is zero"), or `revisions`, one pair per revision. A handshake whose
 * revision header names a revision not configured is refused (409 `revision_mismatch`).
 *
 * @since 0.1.0
 */
export type CustomerHandlerOptions = CustomerHandlerSettings & KeyOptions

/**
 * @since 0.1.0
 */
export interface CustomerRequest {
  readonly headers: HeaderSource
  /** The raw body bytes as received (D1). */
  readonly body: Uint8Array
}

/**
 * @since 0.1.0
 */
export interface CustomerResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array
}

/**
 * The largest request body the endpoint reads: 64 KiB, as the transport's response cap (DESIGN
 * D4); larger gets 413 `body_too_large`. The HTTP adapters stop reading there.
 *
 * @since 0.1.0
 */
export const maxRequestBytes = 64 * 1024

/**
 * @since 0.1.0
 */
export interface CustomerHandler {
  readonly handle: (input: CustomerRequest) => Effect.Effect<CustomerResponse>
}

/**
 * The ledger record kind and outbox kind of a claimed execution.
 *
 * @since 0.1.0
 */
export const executeOutboxKind = "customer.execute"

/**
 * What the ledger stores as a record's `acknowledgement`: the original state and error code, which
 * every duplicate delivery is answered with (D12).
 *
 * @since 0.1.0
 */
export const StoredAcknowledgement = Schema.Struct({
  state: Schema.Literal("accepted", "rejected"),
  errorCode: Schema.optionalWith(Code, { exact: true })
})

/**
 * @since 0.1.0
 */
export type StoredAcknowledgement = typeof StoredAcknowledgement.Type

const purposeByType: Readonly<Record<string, Purpose>> = {
  "service.customer_action.handshake": "handshake_request",
  "service.customer_action.execute": "dispatch_request",
  "service.customer_action.payment_reconciliation": "payment_reconciliation_request"
}

const jsonHeaders = { "content-type": "application/json" } as const

const errorResponse = (status: number, body: Record<string, unknown>): CustomerResponse => ({
  status,
  headers: { ...jsonHeaders },
  body: encodeBody(body)
})


const verificationResponse = (error: VerificationError | StorageError): CustomerResponse => {
  switch (error._tag) {
    case "InvalidShape":
      return errorResponse(400, { error: "invalid_body", issues: error.issues })
    case "MalformedBody":
      return errorResponse(400, { error: "malformed_body" })
    case "StorageError":
      return errorResponse(503, { error: "storage_unavailable" })
    default:
      return errorResponse(401, { error: snakeCaseTag(error._tag) })
  }
}

const typeOf = (json: unknown): string | undefined =>
  typeof json === "object" && json !== null && !Array.isArray(json) &&
    typeof (json as { readonly type?: unknown }).type === "string"
    ? (json as { readonly type: string }).type
    : undefined

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
const decodeStored = Schema.decodeUnknownOption(StoredAcknowledgement)
const decodeClaimed = Schema.decodeUnknownOption(ClaimedExecution)
const isObservation = Schema.is(PaymentObservation)

/**
 * Builds the handler once (verifier and services bound); call `handle` per request.
 *
 * @since 0.1.0
 */
export const makeCustomerHandler = (
  options: CustomerHandlerOptions
): Effect.Effect<CustomerHandler, never, Crypto | NonceStore | ActionLedger> =>
  Effect.gen(function*() {
    const verifier = yield* makeVerifier
    const signer = yield* makeSigner
    const crypto = yield* Crypto
    const ledger = yield* ActionLedger
    const { workspaceId } = options
    const connectionId = options.connectionId ?? "customer"
    const nonceScope = `customer:${workspaceId}`
    const keyring = keyringOf(options)
    const candidates = keyring.map((entry) => entry.keys)
    const payment = options.payment
    const accountReferenceHash = payment === undefined
      ? undefined
      : yield* crypto.sha256Hex(JSON.stringify(payment.providerAccountId))
    const paymentCapabilities = (revision: number): PaymentCapabilities | undefined =>
      payment === undefined || accountReferenceHash === undefined ? undefined : {
        connectedAccountReferenceHash: accountReferenceHash,
        connectionRevision: revision,
        livemode: payment.livemode,
        modes: payment.modes
      }

    /** Verifies with every configured pair (or only `only`), then decodes; names the pair that verified. */
    const verifyAndDecode = <A, I>(
      schema: Schema.Schema<A, I, never>,
      purpose: Purpose,
      input: CustomerRequest,
      only?: RevisionKeys
    ) =>
      Effect.gen(function*() {
        const entries = only === undefined ? keyring : [only]
        const { headers, keyIndex } = yield* verifier.verifyAny({
          purpose,
          keys: only === undefined ? candidates : [only.keys],
          headers: input.headers,
          body: input.body,
          nonceScope
        })
        const body = yield* decodeBody(schema, input.body)
        return { headers, body, entry: entries[keyIndex]! }
      })

    const signed = (keys: SigningKeys, status: number, purpose: Purpose, body: unknown): Effect.Effect<CustomerResponse> => {
      const bytes = encodeBody(body)
      return Effect.map(
        signer.sign({ purpose, keys, body: bytes }),
        (headers): CustomerResponse => ({ status, headers: { ...headers }, body: bytes })
      )
    }

    const handshake = (input: CustomerRequest): Effect.Effect<CustomerResponse, VerificationError | StorageError> => {
      // The revision header selects the pair; a revision not configured is refused, but only after
      // the request verified with some pair, so only the service learns which revisions exist.
      const asked = readHeader(input.headers, headerNames.connectionRevision)?.trim()
      const selected = asked === undefined ? undefined : keyring.find((entry) => String(entry.revision) === asked)
      return Effect.flatMap(
        verifyAndDecode(HandshakeRequest, "handshake_request", input, selected),
        ({ body, entry, headers }) => {
          if (body.challenge !== headers.nonce || body.workspaceId !== workspaceId) {
            return Effect.succeed(errorResponse(401, { error: "binding_mismatch" }))
          }
          if (asked !== undefined && selected === undefined) {
            return Effect.succeed(errorResponse(409, { error: "revision_mismatch" }))
          }
          const proof = paymentCapabilities(entry.revision)
          const ack: HandshakeAck = {
            challenge: body.challenge,
            connectionId: body.connectionId,
            protocolVersion,
            status: "ready",
            type: "service.customer_action.handshake_ack",
            workspaceId: body.workspaceId,
            ...(proof !== undefined ? { paymentCapabilities: proof } : {})
          }
          return signed(entry.keys, 200, "handshake_response", ack)
        }
      )
    }

    const acknowledge = (
      keys: SigningKeys,
      request: ExecutionRequest,
      nonce: string,
      stored: StoredAcknowledgement
    ): Effect.Effect<CustomerResponse> => {
      const echoed = {
        type: "service.customer_action.ack" as const,
        protocolVersion: protocolVersion as typeof protocolVersion,
        workspaceId: request.workspaceId,
        actionRequestId: request.actionRequestId,
        providerIdempotencyKey: request.providerIdempotencyKey,
        requestNonce: nonce
      }
      const ack: AcceptedAck | RejectedAck = stored.state === "accepted"
        ? { ...echoed, state: "accepted" }
        : { ...echoed, state: "rejected", ...(stored.errorCode !== undefined ? { errorCode: stored.errorCode } : {}) }
      return signed(keys, 202, "dispatch_response", ack)
    }

    const execute = (input: CustomerRequest): Effect.Effect<CustomerResponse, VerificationError | StorageError> =>
      Effect.gen(function*() {
        const { body: request, entry, headers } = yield* verifyAndDecode(ExecutionRequest, "dispatch_request", input)
        if (request.requestNonce !== headers.nonce || request.workspaceId !== workspaceId) {
          return errorResponse(401, { error: "binding_mismatch" })
        }
        const keyCheck = yield* Effect.either(
          Effect.provideService(
            checkIdempotencyKey({ header: readHeader(input.headers, headerNames.idempotencyKey), body: request }),
            Crypto,
            crypto
          )
        )
        if (keyCheck._tag === "Left") return errorResponse(401, { error: "idempotency_key_mismatch" })

        const verdict = options.precheck === undefined ? Option.none() : yield* options.precheck(request)
        const stored: StoredAcknowledgement = Option.match(verdict, {
          onNone: (): StoredAcknowledgement => ({ state: "accepted" }),
          onSome: (code): StoredAcknowledgement => ({ state: "rejected", errorCode: isCode(code) ? code : "rejected" })
        })
        const now = yield* Clock.currentTimeMillis
        const { requestNonce: _nonce, requestedAt: _requestedAt, ...claimed } = request
        const created = yield* ledger.create({
          record: {
            actionRequestId: request.actionRequestId,
            workspaceId: request.workspaceId,
            accountId: request.accountId,
            connectionId,
            revision: entry.revision,
            providerIdempotencyKey: request.providerIdempotencyKey,
            state: stored.state,
            request: claimed,
            acknowledgement: stored,
            sealedContinuation: null,
            createdAt: now
          },
          history: {
            at: now,
            trigger: "customer.execute_received",
            detail: stored.errorCode !== undefined ? { errorCode: stored.errorCode } : {}
          },
          ...(stored.state === "accepted"
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
          if (stored.state === "accepted" && options.onClaimed !== undefined) yield* options.onClaimed
          return yield* acknowledge(entry.keys, request, headers.nonce, stored)
        }

        // A duplicate: answer with the original acknowledgement, never creating work again, but only
        // for the same request (rule 3); the same key with other bindings is refused.
        const existing = yield* ledger.getByIdempotencyKey(request.providerIdempotencyKey)
        if (Option.isNone(existing)) return errorResponse(409, { error: "conflict" })
        const fields = differingFields(existing.value.request, claimed)
        if (fields.length > 0) return errorResponse(409, { error: "request_mismatch", fields })
        const original = decodeStored(existing.value.acknowledgement)
        if (Option.isNone(original)) return errorResponse(409, { error: "conflict" })
        return yield* acknowledge(entry.keys, request, headers.nonce, original.value)
      })

    const reconcile = (input: CustomerRequest): Effect.Effect<CustomerResponse, VerificationError | StorageError> =>
      Effect.gen(function*() {
        const { body: request, entry, headers } = yield* verifyAndDecode(
          PaymentReconciliationRequest,
          "payment_reconciliation_request",
          input
        )
        if (request.requestNonce !== headers.nonce || request.workspaceId !== workspaceId) {
          return errorResponse(401, { error: "binding_mismatch" })
        }
        const record = yield* ledger.getByIdempotencyKey(request.providerIdempotencyKey)
        if (Option.isNone(record)) return errorResponse(404, { error: "unknown_action" })
        const execution = decodeClaimed(record.value.request)
        if (
          record.value.actionRequestId !== request.actionRequestId || record.value.accountId !== request.accountId ||
          Option.isNone(execution)
        ) {
          return errorResponse(409, { error: "binding_mismatch" })
        }
        if (options.paymentReader === undefined) return errorResponse(501, { error: "reconciliation_unsupported" })
        const reading = yield* options.paymentReader.read({ request, execution: execution.value })
        const { requestedAt: _requestedAt, ...bindings } = request
        const observation = { ...bindings, type: "service.customer_action.payment_observation" as const, ...reading }
        if (!isObservation(observation)) return errorResponse(500, { error: "invalid_observation" })
        return yield* signed(entry.keys, 200, "payment_reconciliation_response", observation)
      })

    const handle = (input: CustomerRequest): Effect.Effect<CustomerResponse> =>
      Effect.gen(function*() {
        if (input.body.byteLength > maxRequestBytes) return errorResponse(413, { error: "body_too_large" })
        const untrusted = yield* Effect.option(parseJsonBody(input.body))
        const type = Option.getOrUndefined(Option.map(untrusted, typeOf))
        const purpose = type !== undefined && Object.hasOwn(purposeByType, type) ? purposeByType[type] : undefined
        if (purpose === undefined) return errorResponse(400, { error: "unsupported_type" })
        const run = purpose === "handshake_request"
          ? handshake(input)
          : purpose === "dispatch_request"
          ? execute(input)
          : reconcile(input)
        return yield* Effect.catchAll(run, (error) => Effect.succeed(verificationResponse(error)))
      }).pipe(
        Effect.catchAllDefect(() => Effect.succeed(errorResponse(500, { error: "internal_error" })))
      )

    return { handle }
  })
