/**
 * The customer endpoint's payment reconciliation answer (spec "Payment reconciliation request":
 * "For Payment actions the service additionally reads the payment state back from the customer
 * backend (independent reconciliation)"): a read bound to an action the kit claimed (its action
 * request, account and idempotency key), answered with the host's signed `payment_observation`;
 * without a payment reader the kit answers 501 `reconciliation_unsupported`.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ActionLedgerService } from "../../ports/ActionLedger.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { PaymentObservation, PaymentReconciliationRequest } from "../../protocol/messages/Reconciliation.ts"
import type { VerificationError } from "../../protocol/Verification.ts"
import { ClaimedExecution } from "../ClaimedExecution.ts"
import type { PaymentReaderService } from "../Reconciliation.ts"
import { type ParsedRequest, type CustomerResponse, type EndpointExchange, errorResponse } from "./endpoint.ts"
import * as FastDecode from "../../protocol/FastDecode.ts"

const decodeClaimed = FastDecode.decodeUnknownOption(ClaimedExecution)
const isObservation = FastDecode.is(PaymentObservation)

export const makeReconciliationAnswer = (options: {
  readonly workspaceId: string
  readonly paymentReader: PaymentReaderService | undefined
  readonly ledger: ActionLedgerService
  readonly exchange: EndpointExchange
}): ((input: ParsedRequest) => Effect.Effect<CustomerResponse, VerificationError | StorageError>) => {
  const { ledger, workspaceId } = options
  const { signed, verifyAndDecode } = options.exchange

  return (input: ParsedRequest): Effect.Effect<CustomerResponse, VerificationError | StorageError> =>
    Effect.gen(function* () {
      const {
        body: request,
        entry,
        headers
      } = yield* verifyAndDecode(PaymentReconciliationRequest, "payment_reconciliation_request", input)
      if (request.requestNonce !== headers.nonce || request.workspaceId !== workspaceId) {
        return errorResponse(401, { error: "binding_mismatch" })
      }
      const record = yield* ledger.getByIdempotencyKey(request.providerIdempotencyKey)
      if (Option.isNone(record)) return errorResponse(404, { error: "unknown_action" })
      const execution = decodeClaimed(record.value.request)
      if (
        record.value.actionRequestId !== request.actionRequestId ||
        record.value.accountId !== request.accountId ||
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
}
