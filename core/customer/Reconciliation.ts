/**
 * Independent payment reconciliation on the customer side (spec "Payment reconciliation request",
 * "Payment observation", rule 8 of "What the service does"): the service reads the payment state
 * back; the kit verifies the request, finds the claimed action by its key and asks the host's
 * `PaymentReader` what the payment provider says now. The kit, not the reader, echoes the
 * bindings, nonce and expected terms, so a reader can never answer for another action.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { PaymentMode } from "../protocol/messages/Common.ts"
import type { PaymentObservation, PaymentReconciliationRequest } from "../protocol/messages/Reconciliation.ts"
import { paymentRule } from "../protocol/OperationFamily.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import type { ClaimedExecution } from "./ClaimedExecution.ts"

/**
 * What the reader reports: the observation without the echoed bindings.
 */
export type PaymentReading = Omit<
  PaymentObservation,
  | "type"
  | "protocolVersion"
  | "workspaceId"
  | "accountId"
  | "actionRequestId"
  | "actionVersionId"
  | "offerVersionId"
  | "mode"
  | "providerIdempotencyKey"
  | "providerReferenceHash"
  | "requestNonce"
  | "expected"
>

/**
 * The host's read of its payment provider for one action. It must read the provider's current
 * state (not a cached success claim) and never fail: a state it cannot read is `outcome: "unknown"`.
 */
export interface PaymentReaderService {
  /**
   * Reads the provider's current state for one action the service reconciles; `unknown` when it
   * cannot tell, never fails.
   */
  readonly read: (input: {
    readonly request: PaymentReconciliationRequest
    readonly execution: ClaimedExecution
  }) => Effect.Effect<PaymentReading>
}

/**
 * The service tag of the host's payment reader, which answers the service's reconciliation reads.
 */
export class PaymentReader extends Context.Tag("@accord/core/customer/PaymentReader")<
  PaymentReader,
  PaymentReaderService
>() {}

/**
 * The provider object a reading that knows nothing (`outcome: "unknown"`) names: the one the mode's
 * family is read from first (`OperationFamily.ts`).
 */
export const unknownReadingIntent = (mode: PaymentMode): PaymentReading["intent"] => paymentRule(mode).read.intents[0]

/**
 * An honest `unknown` reading at `readAt`: nothing observed, nothing charged, the intent the mode's
 * read names first.
 */
export const unknownReading = (
  request: PaymentReconciliationRequest,
  providerReference: string,
  readAt: number
): PaymentReading => ({
  providerReference,
  eventId: null,
  eventSignatureVerified: false,
  stateReadAt: formatTimestamp(readAt),
  customerBound: false,
  intent: unknownReadingIntent(request.mode),
  paymentStatus: null,
  subscriptionState: null,
  invoicePaid: null,
  methodAttached: false,
  chargedAmountMinor: 0,
  chargedCurrency: null,
  refundedAmountMinor: 0,
  outcome: "unknown"
})

export interface MemoryPaymentReader extends PaymentReaderService {
  /** Sets what the "provider" reports for a key. */
  readonly set: (providerIdempotencyKey: string, reading: PaymentReading) => void
}

/**
 * A reader over an in-memory table, for tests and examples. A key with no reading reports an
 * `unknown` outcome read now.
 */
export const makeMemory = (): MemoryPaymentReader => {
  const readings = new Map<string, PaymentReading>()
  return {
    set: (key, reading) => void readings.set(key, reading),
    read: ({ request }) =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) =>
          readings.get(request.providerIdempotencyKey) ?? unknownReading(request, request.providerIdempotencyKey, now)
      )
  }
}

/** A `PaymentReader` over payments recorded in this process's memory, for tests and examples. */
export const layerMemory: Layer.Layer<PaymentReader> = Layer.sync(PaymentReader, makeMemory)
