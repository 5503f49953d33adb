/**
 * Payments in the customer kit (spec "Payment continuation object", "Payment continuation rules",
 * "Payment observation", "Payment provider events", "Handler rules"): what a Payment action needs
 * beyond the generic claim, over the host's `PaymentProvider` (`PaymentProvider.ts`).
 *
 * - **Continuation.** For an accepted Payment action the kit creates the intent (the host's
 *   `plan` says what to charge) under the action's `providerIdempotencyKey` as the provider's
 *   idempotency key, with the action's bindings in its metadata, keeps the intent's reference and
 *   binding in the acknowledgement it stores with the claim, and answers with the spec's
 *   continuation object. A duplicate delivery is answered with the same intent (its client secret
 *   read back from the provider), never a second one. A subscription change pays its proration
 *   invoice (none owed: accepted without a continuation, applied at once); a recovery pays the open
 *   invoice the host names, only while it asks exactly the amount and currency the host binds
 *   (`nothing_to_recover`, `payment_not_offered` otherwise); both write the action's bindings on
 *   that invoice. A Payment action whose plan the host does not offer is rejected (`payment_not_offered`). A Payment action's completion comes from the
 *   provider's webhooks (`internal/paymentEvents.ts`), not from the host's executor.
 * - **Webhooks.** `internal/paymentEvents.ts`: verified, deduplicated by event id, reconciled
 *   against a fresh provider read, completions (`unknown` once after a declined attempt the
 *   customer may retry, `succeeded`, `failed`, then `reversed` after a full refund, of a one-time
 *   payment or of a subscription's initial invoice) committed with their delivery item and retried
 *   through the outbox.
 * - **Expiry.** The claim schedules the continuation's expiry: an offer still unpaid then is
 *   canceled at the provider and reported `failed` (`continuation_expired`).
 * - **Reconciliation reads.** `makePaymentReader`: the observation for the service's
 *   `payment_reconciliation` request, built from fresh provider reads and the newest verified event.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ActionLedgerService } from "../ports/ActionLedger.ts"
import type { PaymentContinuation } from "../protocol/messages/Continuation.ts"
import type { ExecutionRequest } from "../protocol/messages/Execution.ts"
import { familyRule } from "../protocol/OperationFamily.ts"
import { formatTimestamp, parseTimestamp } from "../protocol/Timestamp.ts"
import type { ClaimedExecution } from "./ClaimedExecution.ts"
import { lastVerifiedEvent, storedPaymentOf } from "./internal/paymentEvents.ts"
import { providerReferenceOf, type StoredPayment } from "./internal/paymentRecord.ts"
import { readPaymentState } from "./internal/paymentState.ts"
import {
  metadataKeys,
  type Metadata,
  PaymentProviderError,
  type PaymentProviderService,
  type ProrationBehavior
} from "./PaymentProvider.ts"
import { type PaymentReaderService, type PaymentReading, unknownReading } from "./Reconciliation.ts"

/**
 * The webhook route and worker step (`internal/paymentEvents.ts`).
 */
export {
  coveredEventTypes,
  makePaymentEventItem,
  makeWebhookIntake,
  maxWebhookBytes
} from "./internal/paymentEvents.ts"

export { paymentEventOutboxKind, StoredPayment } from "./internal/paymentRecord.ts"

/**
 * What to charge for one Payment action, decided by the host from the operation it received (its
 * price key, the account's billing customer): the kit never takes an amount from the browser.
 */
export type PaymentPlan =
  | {
      readonly mode: "one_time_purchase"
      readonly amountMinor: number
      /** Lower-case ISO 4217, as the provider writes it. */
      readonly currency: string
      readonly customerId?: string | null
    }
  | { readonly mode: "setup_only"; readonly customerId?: string | null }
  | {
      readonly mode: "new_subscription"
      readonly customerId: string
      readonly priceId: string
      readonly trialDays?: number | null
    }
  | {
      /** The account's subscription moved to `priceId`, prorated as `proration` (default `always_invoice`). */
      readonly mode: "existing_subscription_change"
      readonly subscriptionId: string
      readonly priceId: string
      readonly proration?: ProrationBehavior
    }
  | {
      /**
       * The account's open invoice paid. The host states the amount and currency it expects to
       * collect: an invoice that no longer asks for exactly that is not offered (`payment_not_offered`),
       * one that is no longer open is `nothing_to_recover`.
       */
      readonly mode: "recover_payment"
      readonly invoiceId: string
      readonly amountMinor: number
      readonly currency: string
    }

/**
 * The kit's payment parts: the provider, the plan for each Payment action and how long a
 * continuation is offered.
 */
export interface PaymentSettings {
  readonly provider: PaymentProviderService
  /**
   * The plan for a Payment action; `None` rejects it (`payment_not_offered`). A plan that needs the
   * provider (the account's customer) and cannot reach it fails: 503, nothing claimed.
   */
  readonly plan: (request: ClaimedExecution) => Effect.Effect<Option.Option<PaymentPlan>, PaymentProviderError>
  /**
   * How long a continuation is offered (default 50 minutes): at most an hour after the service
   * receives it, with room for the 5 minutes of clock skew either way the protocol allows.
   */
  readonly continuationMillis?: number
  /**
   * The provider account proven now (`ProviderAccount.ts`). While it is `None` the provider cannot
   * be used: a Payment action the host offers answers 503 and claims nothing, so the service
   * retries it; never `accepted` without a continuation. Absent: the provider is taken as usable.
   */
  readonly account?: Effect.Effect<Option.Option<string>>
}

/**
 * The default continuation lifetime: 50 minutes.
 */
export const defaultContinuationMillis = 50 * 60_000

/**
 * What the claim does for a Payment action: nothing (not a Payment action), reject it, or the
 * intent created with its continuation.
 */
export type PreparedPayment =
  | { readonly _tag: "NotPayment" }
  | { readonly _tag: "Rejected"; readonly errorCode: string }
  | {
      readonly _tag: "Prepared"
      readonly payment: StoredPayment
      /** Absent when nothing is to be paid now (a subscription change that owes nothing): accepted as is. */
      readonly continuation: PaymentContinuation | undefined
    }

/**
 * The claim's payment hooks (used by `internal/executionClaim.ts`).
 */
export interface PaymentClaim {
  /**
   * Decides whether a claimed action is a Payment and, if so, creates its provider objects and the
   * continuation the browser completes.
   */
  readonly prepare: (request: ExecutionRequest) => Effect.Effect<PreparedPayment, PaymentProviderError>
  /** The continuation of a stored payment for a duplicate delivery; `None` once it has expired. */
  readonly present: (payment: StoredPayment) => Effect.Effect<Option.Option<PaymentContinuation>, PaymentProviderError>
}

/** The action's bindings, written on every provider object the kit creates. */
const metadataOf = (request: ExecutionRequest): Metadata => ({
  [metadataKeys.workspaceId]: request.workspaceId,
  [metadataKeys.accountId]: request.accountId,
  [metadataKeys.actionRequestId]: request.actionRequestId,
  [metadataKeys.actionId]: request.action.id,
  [metadataKeys.providerIdempotencyKey]: request.providerIdempotencyKey,
  [metadataKeys.decisionId]: request.binding.decisionId,
  [metadataKeys.journeyId]: request.binding.journeyId,
  [metadataKeys.offerId]: request.binding.offerId,
  [metadataKeys.publishedVersionId]: request.binding.publishedVersionId
})

const isPlanValid = (plan: PaymentPlan): boolean =>
  (plan.mode !== "one_time_purchase" && plan.mode !== "recover_payment") ||
  (Number.isSafeInteger(plan.amountMinor) && plan.amountMinor > 0 && /^[a-z]{3}$/.test(plan.currency))

/**
 * Builds the claim's payment hooks over the host's settings.
 */
export const makePaymentClaim = (settings: PaymentSettings): PaymentClaim => {
  const { provider } = settings
  const lifetime = Math.min(settings.continuationMillis ?? defaultContinuationMillis, 55 * 60_000)
  const continuationOf = (
    intent: "payment" | "setup",
    clientSecret: string,
    expiresAt: string
  ): PaymentContinuation => ({
    kind: "provider_payment_element",
    intent,
    clientSecret,
    publishableKey: provider.publishableKey,
    connectedAccountId: provider.connectedAccountId,
    expiresAt,
    allowRedirects: "never"
  })

  const prepare = (request: ExecutionRequest): Effect.Effect<PreparedPayment, PaymentProviderError> =>
    Effect.gen(function* () {
      // A family absent from the table is no Payment family the kit knows: the host's own
      // operation ("The customer backend executes only the exact `action.operation` it receives").
      const family = familyRule(request.action.operation.family)
      const mode = family._tag === "Right" ? family.right.payment?.mode : undefined
      if (mode === undefined) return { _tag: "NotPayment" } as const
      const { requestNonce: _nonce, requestedAt: _at, ...claimed } = request
      const plan = yield* settings.plan(claimed)
      if (Option.isNone(plan) || plan.value.mode !== mode || !isPlanValid(plan.value)) {
        return { _tag: "Rejected", errorCode: "payment_not_offered" } as const
      }
      // An offered mode with no proven provider account: not performable now (503, nothing claimed).
      if (settings.account !== undefined && Option.isNone(yield* settings.account)) {
        return yield* new PaymentProviderError({
          operation: "retrieve_account",
          reason: "unavailable",
          code: "account_unproven"
        })
      }
      const now = yield* Clock.currentTimeMillis
      const expiresAt = formatTimestamp(now + lifetime)
      const metadata = metadataOf(request)
      const idempotencyKey = request.providerIdempotencyKey
      /**
       * The prepared payment: what is stored with the claim, and the continuation that confirms
       * `clientSecret` (none when nothing is to be paid now: then its expiry, the settlement from a
       * fresh read, is due at once).
       */
      const prepared = (
        payment: Omit<StoredPayment, "mode" | "connectedAccountId" | "expiresAt">,
        clientSecret: string | null
      ): PreparedPayment => ({
        _tag: "Prepared",
        payment: {
          ...payment,
          mode,
          connectedAccountId: provider.connectedAccountId,
          expiresAt: clientSecret === null ? formatTimestamp(now) : expiresAt
        },
        continuation: clientSecret === null ? undefined : continuationOf(payment.intent, clientSecret, expiresAt)
      })
      const chosen = plan.value
      switch (chosen.mode) {
        case "one_time_purchase": {
          const customerId = chosen.customerId ?? null
          const intent = yield* provider.createPaymentIntent({
            amountMinor: chosen.amountMinor,
            currency: chosen.currency,
            customerId,
            metadata,
            idempotencyKey
          })
          if (intent.clientSecret === null) return yield* Effect.dieMessage("payment intent without a client secret")
          return prepared(
            {
              intent: "payment",
              intentId: intent.id,
              subscriptionId: null,
              initialInvoiceId: null,
              customerId,
              amountMinor: chosen.amountMinor,
              currency: chosen.currency
            },
            intent.clientSecret
          )
        }
        case "setup_only": {
          const customerId = chosen.customerId ?? null
          const setup = yield* provider.createSetupIntent({ customerId, metadata, idempotencyKey })
          if (setup.clientSecret === null) return yield* Effect.dieMessage("setup intent without a client secret")
          return prepared(
            {
              intent: "setup",
              intentId: setup.id,
              subscriptionId: null,
              initialInvoiceId: null,
              customerId,
              amountMinor: null,
              currency: null
            },
            setup.clientSecret
          )
        }
        case "new_subscription": {
          const created = yield* provider.createSubscription({
            customerId: chosen.customerId,
            priceId: chosen.priceId,
            trialDays: chosen.trialDays ?? null,
            metadata,
            idempotencyKey
          })
          return prepared(
            {
              intent: created.intent,
              intentId: created.intentId,
              subscriptionId: created.subscription.id,
              initialInvoiceId: created.subscription.latestInvoiceId,
              customerId: chosen.customerId,
              amountMinor: null,
              currency: null
            },
            created.clientSecret
          )
        }
        case "existing_subscription_change": {
          const changed = yield* provider.changeSubscription({
            subscriptionId: chosen.subscriptionId,
            priceId: chosen.priceId,
            proration: chosen.proration ?? "always_invoice",
            metadata,
            idempotencyKey
          })
          // The proration invoice is the one this action pays; none, and no secret, when nothing is owed now.
          return prepared(
            {
              intent: "payment",
              intentId: changed.intentId,
              subscriptionId: changed.subscription.id,
              initialInvoiceId: changed.invoiceId,
              customerId: changed.subscription.customerId,
              amountMinor: null,
              currency: null
            },
            changed.clientSecret
          )
        }
        case "recover_payment": {
          const found = yield* provider.retrieveInvoicePayment(chosen.invoiceId)
          const invoice = found.invoice
          if (invoice.status !== "open" || found.clientSecret === null || found.intentId === null)
            return { _tag: "Rejected", errorCode: "nothing_to_recover" } as const
          // The amount binding: the invoice still asks for exactly what the host means to collect.
          if (invoice.amountDueMinor !== chosen.amountMinor || invoice.currency.toLowerCase() !== chosen.currency)
            return { _tag: "Rejected", errorCode: "payment_not_offered" } as const
          // The invoice carries this action's bindings, so its events reach this action.
          yield* provider.bindInvoice({ invoiceId: invoice.id, metadata, idempotencyKey })
          return prepared(
            {
              intent: "payment",
              intentId: found.intentId,
              subscriptionId: invoice.subscriptionId,
              initialInvoiceId: invoice.id,
              customerId: invoice.customerId,
              amountMinor: chosen.amountMinor,
              currency: chosen.currency
            },
            found.clientSecret
          )
        }
      }
    })

  const present = (payment: StoredPayment): Effect.Effect<Option.Option<PaymentContinuation>, PaymentProviderError> =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const expiresAt = parseTimestamp(payment.expiresAt)
      if (expiresAt === undefined || expiresAt <= now || payment.intentId === null) return Option.none()
      const clientSecret =
        payment.intent === "setup"
          ? (yield* provider.retrieveSetupIntent(payment.intentId)).clientSecret
          : (yield* provider.retrievePaymentIntent(payment.intentId)).clientSecret
      return clientSecret === null
        ? Option.none()
        : Option.some(continuationOf(payment.intent, clientSecret, payment.expiresAt))
    })

  return { prepare, present }
}

/**
 * The kit's payment reader over the provider: for the service's `payment_reconciliation` request,
 * what the provider reports now for the action's intent (or subscription), with the newest
 * verified webhook event ("A verified result requires a matching signed provider event and a fresh
 * state read"). A provider that cannot answer gives an honest `unknown` read now.
 */
export const makePaymentReader = (options: {
  readonly provider: PaymentProviderService
  readonly ledger: ActionLedgerService
}): PaymentReaderService => ({
  read: ({ request }) =>
    Effect.gen(function* () {
      const record = yield* options.ledger.getByIdempotencyKey(request.providerIdempotencyKey)
      const payment = Option.flatMap(record, storedPaymentOf)
      const unknown = (readAt: number): PaymentReading =>
        unknownReading(
          request,
          Option.match(payment, { onNone: () => request.providerIdempotencyKey, onSome: providerReferenceOf }),
          readAt
        )
      if (Option.isNone(record) || Option.isNone(payment)) return unknown(yield* Clock.currentTimeMillis)
      const eventId = lastVerifiedEvent(yield* options.ledger.history(record.value.actionRequestId))
      const state = yield* Effect.either(readPaymentState(options.provider, payment.value, record.value.accountId))
      const readAt = yield* Clock.currentTimeMillis
      if (state._tag === "Left") return unknown(readAt)
      const { declined: _declined, mismatch: _mismatch, paymentStatus, ...rest } = state.right
      return {
        ...rest,
        paymentStatus: paymentStatus === null ? null : paymentStatus.slice(0, 64),
        eventId,
        eventSignatureVerified: eventId !== null,
        stateReadAt: formatTimestamp(readAt)
      }
    }).pipe(
      Effect.catchAll(() =>
        Effect.map(
          Clock.currentTimeMillis,
          (now): PaymentReading => unknownReading(request, request.providerIdempotencyKey, now)
        )
      )
    )
})
