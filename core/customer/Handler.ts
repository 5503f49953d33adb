/**
 * The customer kit's inbound endpoint (spec "Rules for execution handling on the customer side" 1–5,
 * "Authentication"; docs/decisions.md "Raw body bytes", "Signing input", "Execution nonce and
 * retries"): one route that answers the service's handshake and execution requests.
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
 * With `payments` (`Payments.ts`), an accepted Payment action's acknowledgement carries the spec's
 * payment continuation (the intent created before the claim; a duplicate gets the same one), and
 * reconciliation reads are answered from the payment provider.
 *
 * The public module composes the one route over its parts in `internal/`: authentication and
 * responses (`endpoint.ts`), the handshake answer (`handshakeAnswer.ts`), the execution claim and
 * acknowledgement (`executionClaim.ts`) and the reconciliation answer (`reconciliationAnswer.ts`).
 *
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { ActionLedger } from "../ports/ActionLedger.ts"
import { Crypto, CryptoSync } from "../ports/Crypto.ts"
import type { ExecutionRequest } from "../protocol/messages/Execution.ts"
import type { NonceStore } from "../ports/NonceStore.ts"
import { makeSigner, type Purpose } from "../protocol/Signing.ts"
import type { PaymentReaderService } from "./Reconciliation.ts"
import { makePaymentClaim, makePaymentReader, type PaymentSettings } from "./Payments.ts"
import { makeVerifier, readHeader } from "../protocol/Verification.ts"
import { isJsonContentType, parseJsonBytes, parseJsonSyntax } from "../protocol/Json.ts"
import { type KeyOptions, keyringOf } from "./Keyring.ts"
import {
  type CustomerRequest,
  type CustomerResponse,
  type ParsedRequest,
  errorResponse,
  makeEndpointExchange,
  verificationResponse
} from "./internal/endpoint.ts"
import { makeExecutionClaim } from "./internal/executionClaim.ts"
import { makeHandshakeAnswer, type PaymentProofSettings } from "./internal/handshakeAnswer.ts"
import { makeReconciliationAnswer } from "./internal/reconciliationAnswer.ts"

/**
 * The endpoint's request (headers and raw body bytes) and response (`internal/endpoint.ts`).
 */
export type { CustomerRequest, CustomerResponse } from "./internal/endpoint.ts"

/**
 * The outbox kind of a claimed execution and the acknowledgement the ledger stores with it
 * (`internal/executionClaim.ts`).
 */
export { executeOutboxKind, StoredAcknowledgement } from "./internal/executionClaim.ts"

/**
 * Everything but the keys (see `CustomerHandlerOptions`).
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
   * host's payment handler supports and its connected provider account. As an effect, the proof
   * now: `None` sends none (the kit's, while its provider account is unproven, `ProviderAccount.ts`).
   */
  readonly payment?: PaymentProofSettings | Effect.Effect<Option.Option<PaymentProofSettings>>
  /**
   * Answers payment reconciliation reads; without it (and without `payments`) they get 501
   * `reconciliation_unsupported`.
   */
  readonly paymentReader?: PaymentReaderService
  /**
   * Payment actions over the host's payment provider (`Payments.ts`): a continuation in the
   * acknowledgement, and, unless `paymentReader` is given, reconciliation reads from the provider.
   */
  readonly payments?: PaymentSettings
  /** Run after an execution was claimed (the kit wakes its worker). */
  readonly onClaimed?: Effect.Effect<void>
}

/**
 * The settings plus the keys: `keys` with the connection `revision` they belong to (default 0,
 * "the initial revision is zero"), or `revisions`, one pair per revision. A handshake whose
 * revision header names a revision not configured is refused (409 `revision_mismatch`).
 */
export type CustomerHandlerOptions = CustomerHandlerSettings & KeyOptions

/**
 * The largest request body the endpoint reads: 64 KiB, as the transport's response cap
 * (docs/decisions.md, "Outbound calls"); larger gets 413 `body_too_large`. The HTTP adapters stop
 * reading there.
 */
export const maxRequestBytes = 64 * 1024

/**
 * The kit's endpoint as a function: one signed request from the service in, the signed answer out.
 */
export interface CustomerHandler {
  /** Verifies, claims and answers one request; never fails (refusals are answers). */
  readonly handle: (input: CustomerRequest) => Effect.Effect<CustomerResponse>
}

const purposeByType: Readonly<Record<string, Purpose>> = {
  "service.customer_action.handshake": "handshake_request",
  "service.customer_action.execute": "dispatch_request",
  "service.customer_action.payment_reconciliation": "payment_reconciliation_request"
}

const typeOf = (json: unknown): string | undefined =>
  typeof json === "object" &&
  json !== null &&
  !Array.isArray(json) &&
  typeof (json as { readonly type?: unknown }).type === "string"
    ? (json as { readonly type: string }).type
    : undefined

/**
 * Builds the handler once (verifier and services bound); call `handle` per request.
 */
export const makeCustomerHandler = (
  options: CustomerHandlerOptions
): Effect.Effect<CustomerHandler, never, Crypto | NonceStore | ActionLedger> =>
  Effect.gen(function* () {
    const verifier = yield* makeVerifier
    const signer = yield* makeSigner
    const crypto = yield* Crypto
    const ledger = yield* ActionLedger
    const { workspaceId } = options
    const connectionId = options.connectionId ?? "customer"
    const nonceScope = `customer:${workspaceId}`
    const keyring = keyringOf(options)
    const exchange = makeEndpointExchange({ verifier, signer, keyring, nonceScope })
    const proof = options.payment
    const handshake = yield* makeHandshakeAnswer({
      workspaceId,
      keyring,
      payment:
        proof === undefined
          ? Effect.succeed(Option.none())
          : Effect.isEffect(proof)
            ? proof
            : Effect.succeed(Option.some(proof)),
      crypto,
      exchange
    })
    const execute = makeExecutionClaim({
      workspaceId,
      connectionId,
      precheck: options.precheck,
      onClaimed: options.onClaimed,
      payment: options.payments === undefined ? undefined : makePaymentClaim(options.payments),
      crypto,
      cryptoSync: Option.getOrUndefined(yield* Effect.serviceOption(CryptoSync)),
      ledger,
      exchange
    })
    const paymentReader =
      options.paymentReader ??
      (options.payments === undefined ? undefined : makePaymentReader({ provider: options.payments.provider, ledger }))
    const reconcile = makeReconciliationAnswer({ workspaceId, paymentReader, ledger, exchange })

    const handle = (input: CustomerRequest): Effect.Effect<CustomerResponse> =>
      Effect.suspend(() => {
        if (input.body.byteLength > maxRequestBytes)
          return Effect.succeed(errorResponse(413, { error: "body_too_large" }))
        if (!isJsonContentType(readHeader(input.headers, "content-type"))) {
          return Effect.succeed(errorResponse(415, { error: "unsupported_media_type" }))
        }
        // The message type picks the purpose (and so the secret) before anything is verified. The
        // strict parse (duplicate keys, unstorable text: 400) is taken once, here; when it refuses, a
        // syntax-only parse reads the type. Nothing but the type is read before verification: the
        // strict result is decoded, or its refusal answered, only once the body verified ("verify
        // the raw body, then parse").
        const parsed = parseJsonBytes(input.body)
        const untrusted = Either.isRight(parsed) ? parsed : parseJsonSyntax(input.body)
        const type = Either.isRight(untrusted) ? typeOf(untrusted.right) : undefined
        const purpose = type !== undefined && Object.hasOwn(purposeByType, type) ? purposeByType[type] : undefined
        if (purpose === undefined) return Effect.succeed(errorResponse(400, { error: "unsupported_type" }))
        const request: ParsedRequest = { headers: input.headers, body: input.body, parsed }
        const run =
          purpose === "handshake_request"
            ? handshake(request)
            : purpose === "dispatch_request"
              ? execute(request)
              : reconcile(request)
        return Effect.catchAll(run, (error) => Effect.succeed(verificationResponse(error)))
      }).pipe(Effect.catchAllDefect(() => Effect.succeed(errorResponse(500, { error: "internal_error" }))))

    return { handle }
  })
