/**
 * Provider webhooks on the customer side (spec "Payment provider events", "Handler rules" 1–6,
 * "Authentication" 7), in two steps:
 *
 * 1. `makeWebhookIntake`: the webhook route. The provider adapter verifies the signature over the
 *    unmodified raw body with the webhook signing secret; a bad or missing signature, a stale
 *    timestamp or a body that is not a JSON event gets 400 and nothing is recorded. A verified event
 *    of a covered type is recorded as an outbox item whose dedupe key is the event id ("Deduplicate
 *    event IDs": a redelivery finds it and does nothing twice) and acknowledged 200; a verified
 *    event of a type the handler does not cover, or of the other environment (a test event at live
 *    keys), is acknowledged 200 and ignored, so the provider does not retry it for days.
 * 2. `makePaymentEventItem`: the worker's step for one recorded event. It reads the event's object
 *    back from the provider and finds the action through the metadata the kit wrote at creation
 *    (never through the webhook body: "an unverified webhook is [not] payment evidence"), checks
 *    the bindings (workspace, account, action, the very intent), records the verified event in the
 *    action's history, reads the payment's state now (`paymentState.ts`) and commits at most the
 *    completions that state calls for, each in one ledger write with its delivery item:
 *    - nothing final reported yet and the payment succeeded (or was refunded after succeeding): a
 *      `succeeded` completion; a payment canceled: `failed`;
 *    - nothing reported yet and the last attempt declined (`payment_intent.payment_failed`,
 *      `invoice.payment_failed`, `setup_intent.setup_failed`, read back as a declined intent the
 *      customer may retry): one `unknown` completion (`payment_declined`), which leaves the
 *      service's action unresolved, not failed; the customer may retry the same intent with another
 *      method until the continuation expires, and a later success is still reported `succeeded`;
 *    - `succeeded` reported and everything charged refunded (a one-time purchase's charge, or the
 *      charge of a subscription's initial invoice): a `reversed` completion with its own
 *      `completionId` (a partial refund sends nothing: it "stays inconclusive").
 * 3. The continuation's expiry (`makeExpiryItem`, scheduled at the claim for `expiresAt`): an offer
 *    still unpaid when it expires is ended at the provider (the intent, or the incomplete
 *    subscription, is canceled, a subscription change's proration invoice voided, so a late
 *    attempt cannot charge; a recovery's invoice stays owed) and reported `failed`
 *    (`continuation_expired`); one that succeeded meanwhile is reported `succeeded`; one the
 *    provider cannot cancel yet (processing) is looked at again later.
 *    The invoice a recovery or a change pays carries the action's bindings itself, so its events
 *    (`invoice.paid`, `invoice.payment_failed`, its intent's and charge's) reach that action, while
 *    the subscription's own invoices still reach the action that made the subscription.
 *    Because the decision is made from the provider's current state and the completions already
 *    recorded, duplicate and out-of-order events change nothing: a `payment_failed` after
 *    `succeeded` finds the payment succeeded; a refund seen before the success is applied once the
 *    success is. A renewal invoice (not the subscription's initial one) is ignored. A provider that
 *    cannot answer reschedules the event with backoff; an object it does not know is ignored.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ActionLedgerService, ActionRecord, HistoryEntry } from "../../ports/ActionLedger.ts"
import type { CryptoService } from "../../ports/Crypto.ts"
import type { OutboxItem, OutboxService } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { toHex } from "../../protocol/Hex.ts"
import { Completion } from "../../protocol/messages/Completion.ts"
import type { CompletionOutcome } from "../../protocol/messages/Completion.ts"
import { protocolVersion } from "../../protocol/Signing.ts"
import { formatTimestamp } from "../../protocol/Timestamp.ts"
import { readHeader } from "../../protocol/Verification.ts"
import {
  metadataKeys,
  type Metadata,
  type PaymentIntentView,
  type PaymentProviderError,
  type PaymentProviderService
} from "../PaymentProvider.ts"
import { type CustomerRequest, type CustomerResponse, errorResponse } from "./endpoint.ts"
import { completionOutboxItem } from "./kitRecord.ts"
import type { LeasedItemEnds } from "./leasedItem.ts"
import { paymentEventOutboxKind, paymentEventTrigger, providerReferenceOf, StoredPayment } from "./paymentRecord.ts"
import { readPaymentState } from "./paymentState.ts"
import * as FastDecode from "../../protocol/FastDecode.ts"

/**
 * The event types the handler covers, for `setup_only`, `one_time_purchase` and `new_subscription`:
 * the spec's table, plus `invoice.paid` (an initial invoice paid outside a payment, e.g. by credit)
 * and `customer.subscription.updated` / `.deleted` (the subscription became active, or ended
 * unpaid), each reconciled like the others from a fresh read of the subscription.
 */
export const coveredEventTypes: ReadonlySet<string> = new Set([
  "setup_intent.succeeded",
  "setup_intent.canceled",
  "setup_intent.setup_failed",
  "payment_intent.succeeded",
  "payment_intent.canceled",
  "payment_intent.payment_failed",
  "invoice.payment_succeeded",
  "invoice.paid",
  "invoice.payment_failed",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "charge.refunded"
])

/**
 * The largest webhook body read: 256 KiB (provider events are far smaller).
 */
export const maxWebhookBytes = 256 * 1024

const EventPayload = Schema.Struct({ eventId: Schema.String, type: Schema.String, objectId: Schema.String })

/**
 * The type of the kit's own item for a continuation's expiry, in the payment event queue (never a
 * provider event type: the intake never records it).
 */
export const continuationExpiredType = "accord.continuation_expired"

/**
 * The expiry item of a claimed Payment action, due when its continuation expires (written with the
 * claim, `executionClaim.ts`).
 */
export const expiryOutboxItem = (actionRequestId: string, now: number, expiresAt: number) => ({
  id: `${actionRequestId}:payment_expiry`,
  kind: paymentEventOutboxKind,
  dedupeKey: `expiry:${actionRequestId}`,
  payload: { eventId: `expiry:${actionRequestId}`, type: continuationExpiredType, objectId: actionRequestId },
  nextAttemptAt: Math.max(now, expiresAt),
  createdAt: now
})
const decodeEventPayload = FastDecode.decodeUnknownOption(EventPayload)
const decodeStoredPayment = FastDecode.decodeUnknownOption(Schema.Struct({ payment: StoredPayment }))
const validCompletion = FastDecode.is(Completion)

/**
 * The stored payment of a record (its acknowledgement's `payment`), if any.
 */
export const storedPaymentOf = (record: ActionRecord): Option.Option<StoredPayment> =>
  Option.map(decodeStoredPayment(record.acknowledgement), (stored) => stored.payment)

/**
 * The id of the newest verified event recorded for the action, if any.
 */
export const lastVerifiedEvent = (history: ReadonlyArray<HistoryEntry>): string | null => {
  for (const entry of [...history].reverse()) {
    const detail = entry.detail as { readonly eventId?: unknown } | null
    if (entry.trigger === paymentEventTrigger && typeof detail?.eventId === "string") return detail.eventId
  }
  return null
}

/** The outcomes of the completions already recorded for the action (`unknown` included). */
const recordedOutcomes = (history: ReadonlyArray<HistoryEntry>): ReadonlyArray<string> =>
  history.flatMap((entry) => {
    const detail = entry.detail as { readonly outcome?: unknown } | null
    return entry.trigger.startsWith("customer.completion_recorded") && typeof detail?.outcome === "string"
      ? [detail.outcome]
      : []
  })

/**
 * Builds the webhook route's handler.
 */
export const makeWebhookIntake = (options: {
  readonly provider: PaymentProviderService
  readonly outbox: OutboxService
  readonly onRecorded?: Effect.Effect<void>
}): ((input: CustomerRequest) => Effect.Effect<CustomerResponse>) => {
  const { outbox, provider } = options
  return (input) =>
    Effect.gen(function* () {
      if (input.body.byteLength > maxWebhookBytes) return errorResponse(413, { error: "body_too_large" })
      const verified = yield* Effect.either(
        provider.verifyWebhook({
          body: input.body,
          signature: readHeader(input.headers, provider.webhookSignatureHeader)
        })
      )
      if (verified._tag === "Left") return errorResponse(400, { error: verified.left.reason })
      const event = verified.right
      // A type not covered, or an event of the other environment (test vs live) than the keys: 2xx, ignored.
      if (!coveredEventTypes.has(event.type) || event.livemode !== provider.livemode) {
        return errorResponse(200, { received: true, ignored: true })
      }
      const now = yield* Clock.currentTimeMillis
      const recorded = yield* Effect.either(
        outbox.enqueue({
          id: `payment_event:${event.id}`,
          kind: paymentEventOutboxKind,
          dedupeKey: event.id,
          payload: { eventId: event.id, type: event.type, objectId: event.objectId },
          nextAttemptAt: now,
          createdAt: now
        })
      )
      // Not recorded: the provider retries the delivery.
      if (recorded._tag === "Left") return errorResponse(503, { error: "storage_unavailable" })
      if (recorded.right && options.onRecorded !== undefined) yield* options.onRecorded
      return errorResponse(200, { received: true, duplicate: !recorded.right })
    }).pipe(Effect.catchAllDefect(() => Effect.succeed(errorResponse(500, { error: "internal_error" }))))
}

interface Located {
  readonly metadata: Metadata
  /** The object the stored payment must name: the intent, or the subscription. */
  readonly intentId: string | null
  readonly subscriptionId: string | null
  /** The subscription's invoice the event is about (it must be the initial one). */
  readonly invoiceId: string | null
  /** An invoice that is not the subscription's initial one. */
  readonly renewal: boolean
}

/**
 * An invoice's action: the one whose bindings the invoice itself carries (the kit writes them on
 * the invoice a recovery or a subscription change pays: that very invoice is the action's), else
 * the one that made its subscription (the subscription's metadata), for which an invoice other
 * than the initial one is a renewal.
 */
const locateInvoice = (
  provider: PaymentProviderService,
  invoiceId: string
): Effect.Effect<Located | undefined, PaymentProviderError> =>
  Effect.gen(function* () {
    const invoice = yield* provider.retrieveInvoice(invoiceId)
    if (invoice.metadata[metadataKeys.providerIdempotencyKey] !== undefined) {
      return {
        metadata: invoice.metadata,
        intentId: null,
        subscriptionId: invoice.subscriptionId,
        invoiceId: invoice.id,
        renewal: false
      }
    }
    if (invoice.subscriptionId === null) return undefined
    const subscription = yield* provider.retrieveSubscription(invoice.subscriptionId)
    return {
      metadata: subscription.metadata,
      intentId: null,
      subscriptionId: subscription.id,
      invoiceId: invoice.id,
      renewal: invoice.billingReason !== "subscription_create"
    }
  })

/**
 * A payment intent: its own metadata when the kit created it; else the invoice it pays (a
 * subscription invoice's intent carries no kit metadata), named by the charge or the intent on
 * older API versions, looked up through the provider's invoice payments on newer ones.
 */
const locateIntent = (
  provider: PaymentProviderService,
  intent: PaymentIntentView,
  invoiceHint: string | null
): Effect.Effect<Located | undefined, PaymentProviderError> =>
  Effect.gen(function* () {
    const own: Located = {
      metadata: intent.metadata,
      intentId: intent.id,
      subscriptionId: null,
      invoiceId: null,
      renewal: false
    }
    if (intent.metadata[metadataKeys.providerIdempotencyKey] !== undefined) return own
    const invoiceId = invoiceHint ?? intent.invoiceId ?? (yield* provider.findInvoiceOfPaymentIntent(intent.id))
    return invoiceId === null ? own : yield* locateInvoice(provider, invoiceId)
  })

const locate = (
  provider: PaymentProviderService,
  type: string,
  objectId: string
): Effect.Effect<Located | undefined, PaymentProviderError> =>
  Effect.gen(function* () {
    const [family] = type.split(".")
    switch (family) {
      case "payment_intent":
        return yield* locateIntent(provider, yield* provider.retrievePaymentIntent(objectId), null)
      case "charge": {
        const charge = yield* provider.retrieveCharge(objectId)
        if (charge.paymentIntentId === null)
          return charge.invoiceId === null ? undefined : yield* locateInvoice(provider, charge.invoiceId)
        return yield* locateIntent(
          provider,
          yield* provider.retrievePaymentIntent(charge.paymentIntentId),
          charge.invoiceId
        )
      }
      case "setup_intent": {
        const setup = yield* provider.retrieveSetupIntent(objectId)
        return { metadata: setup.metadata, intentId: setup.id, subscriptionId: null, invoiceId: null, renewal: false }
      }
      case "invoice":
        return yield* locateInvoice(provider, objectId)
      case "customer": {
        // `customer.subscription.*`: the subscription itself carries the kit's metadata.
        if (!type.startsWith("customer.subscription.")) return undefined
        const subscription = yield* provider.retrieveSubscription(objectId)
        return {
          metadata: subscription.metadata,
          intentId: null,
          subscriptionId: subscription.id,
          invoiceId: null,
          renewal: false
        }
      }
      default:
        return undefined
    }
  })

/**
 * Builds the worker's step for one recorded provider event.
 */
export const makePaymentEventItem = (options: {
  readonly ledger: ActionLedgerService
  readonly crypto: CryptoService
  readonly provider: PaymentProviderService
  readonly ends: LeasedItemEnds
  readonly onPersisted: Effect.Effect<unknown>
}): ((item: OutboxItem) => Effect.Effect<void, StorageError>) => {
  const { crypto, ledger, onPersisted, provider } = options
  const { done, reschedule } = options.ends

  const ignore = (item: OutboxItem, reason: string) =>
    Effect.zipRight(Effect.logInfo(`customer kit: provider event ignored (${reason})`), done(item))

  /** The outbox item of each completion: one first (`succeeded`/`failed`), one reversal, one decline notice. */
  const slotOf = (outcome: CompletionOutcome) =>
    outcome === "reversed" ? "reversed" : outcome === "unknown" ? "declined" : "complete"

  /** Commits one completion and its delivery item; `None` when the record changed meanwhile. */
  const recordCompletion = (
    record: ActionRecord,
    payment: StoredPayment,
    outcome: CompletionOutcome,
    reasonCode: string
  ) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const completionId = "cmp_" + toHex(yield* crypto.randomBytes(16))
      const entitlement = outcome === "succeeded" || outcome === "reversed" ? payment.mode : ""
      const body = {
        type: "service.customer_action.completion" as const,
        protocolVersion,
        workspaceId: record.workspaceId,
        actionRequestId: record.actionRequestId,
        providerIdempotencyKey: record.providerIdempotencyKey,
        providerReference: providerReferenceOf(payment),
        completionId,
        completedAt: formatTimestamp(now),
        outcome,
        evidence: { entitlement, reasonCode, source: "provider_event", accountId: record.accountId }
      }
      if (!validCompletion(body)) return yield* Effect.dieMessage("customer kit: invalid payment completion")
      const slot = slotOf(outcome)
      const written = yield* ledger.transition({
        actionRequestId: record.actionRequestId,
        expectedVersion: record.version,
        toState: "completing",
        at: now,
        history: { at: now, trigger: "customer.completion_recorded_from_provider", detail: { completionId, outcome } },
        outbox: completionOutboxItem(record, { completionId, body, now }, slot)
      })
      return written._tag === "Applied" ? Option.some(written.record) : Option.none()
    })

  /**
   * Ends an expired offer at the provider, so a late attempt cannot charge: a new subscription is
   * canceled, a change's proration invoice voided (the subscription stays as it was), an intent
   * canceled. A recovery's invoice stays open: the debt is the host's, not the offer's.
   */
  const endOffer = (stored: StoredPayment): Effect.Effect<void, PaymentProviderError> => {
    switch (stored.mode) {
      case "recover_payment":
        return Effect.void
      case "existing_subscription_change":
        return stored.initialInvoiceId === null
          ? Effect.void
          : Effect.asVoid(provider.voidInvoice(stored.initialInvoiceId))
      default:
        return stored.subscriptionId !== null
          ? Effect.asVoid(provider.cancelSubscription(stored.subscriptionId))
          : stored.intentId === null
            ? Effect.void
            : stored.intent === "setup"
              ? Effect.asVoid(provider.cancelSetupIntent(stored.intentId))
              : Effect.asVoid(provider.cancelPaymentIntent(stored.intentId))
    }
  }

  /**
   * Commits what the provider's state calls for, given the completions already recorded: at most
   * one first outcome, one decline notice before it, one reversal after a success. `expired`: the
   * continuation has expired, and a payment still unpaid is ended (`failed`).
   */
  const settle = (
    item: OutboxItem,
    initial: ActionRecord,
    stored: StoredPayment,
    history: ReadonlyArray<HistoryEntry>,
    expired: boolean
  ) =>
    Effect.gen(function* () {
      let record = initial
      let state = yield* readPaymentState(provider, stored, record.accountId)
      const outcomes = recordedOutcomes(history)
      const reported = outcomes.includes("succeeded") || outcomes.includes("failed")
      if (expired && !reported && state.outcome === "pending") {
        // The offer is over: end it at the provider so a late attempt cannot charge, then read again.
        const ended = yield* Effect.either(endOffer(stored))
        if (ended._tag === "Left" && ended.left.reason === "unavailable")
          return yield* reschedule(item, "provider_unavailable")
        state = yield* readPaymentState(provider, stored, record.accountId)
        // A recovery's invoice is still owed (it is not the kit's to forgive): the offer is over all the same.
        if (stored.mode === "recover_payment" && state.outcome === "pending")
          state = { ...state, outcome: "failed", declined: false }
        // Not cancelable and not settled (processing): looked at again later.
        if (state.outcome === "pending") return yield* reschedule(item, "payment_processing")
      }
      let persisted = false
      let succeeded = outcomes.includes("succeeded")
      if (!reported) {
        const first: readonly [CompletionOutcome, string] | undefined =
          state.outcome === "succeeded" || state.outcome === "reversed" || state.outcome === "partially_reversed"
            ? ["succeeded", "provider_confirmed"]
            : state.outcome === "failed"
              ? ["failed", state.mismatch ?? (expired ? "continuation_expired" : "payment_canceled")]
              : state.declined && !outcomes.includes("unknown")
                ? ["unknown", "payment_declined"]
                : undefined
        if (first !== undefined) {
          const written = yield* recordCompletion(record, stored, first[0], first[1])
          if (Option.isNone(written)) return yield* reschedule(item, "stale_record")
          record = written.value
          persisted = true
          succeeded = first[0] === "succeeded"
        }
      }
      if (succeeded && state.outcome === "reversed" && !outcomes.includes("reversed")) {
        const written = yield* recordCompletion(record, stored, "reversed", "full_refund")
        if (Option.isNone(written)) return yield* reschedule(item, "stale_record")
        persisted = true
      }
      yield* done(item)
      if (persisted) yield* onPersisted
    })

  const apply = (item: OutboxItem, eventId: string, type: string, objectId: string) =>
    Effect.gen(function* () {
      const located = yield* locate(provider, type, objectId)
      if (located === undefined) return yield* ignore(item, "no_object")
      const key = located.metadata[metadataKeys.providerIdempotencyKey]
      if (key === undefined) return yield* ignore(item, "not_an_accord_payment")
      const found = yield* ledger.getByIdempotencyKey(key)
      if (Option.isNone(found)) return yield* ignore(item, "unknown_action")
      let record = found.value
      const payment = storedPaymentOf(record)
      if (Option.isNone(payment)) return yield* ignore(item, "no_stored_payment")
      const stored = payment.value
      // The original binding: this workspace, account and action, and the very object created for it.
      if (
        located.metadata[metadataKeys.workspaceId] !== record.workspaceId ||
        located.metadata[metadataKeys.accountId] !== record.accountId ||
        located.metadata[metadataKeys.actionRequestId] !== record.actionRequestId ||
        (located.subscriptionId !== null
          ? located.subscriptionId !== stored.subscriptionId
          : located.invoiceId !== null
            ? located.invoiceId !== stored.initialInvoiceId
            : located.intentId !== stored.intentId)
      ) {
        return yield* ignore(item, "binding_mismatch")
      }
      // "Later renewals create no further Funnel conversion."
      if (
        located.renewal ||
        (located.invoiceId !== null &&
          stored.initialInvoiceId !== null &&
          located.invoiceId !== stored.initialInvoiceId)
      ) {
        return yield* ignore(item, "renewal_invoice")
      }
      const history = yield* ledger.history(record.actionRequestId)
      if (lastVerifiedEvent(history) !== eventId) {
        const now = yield* Clock.currentTimeMillis
        const noted = yield* ledger.transition({
          actionRequestId: record.actionRequestId,
          expectedVersion: record.version,
          toState: record.state,
          at: now,
          history: { at: now, trigger: paymentEventTrigger, detail: { eventId, type } }
        })
        if (noted._tag !== "Applied") return yield* reschedule(item, "stale_record")
        record = noted.record
      }
      yield* settle(item, record, stored, history, false)
    })

  /** The continuation expired: the action the item names, settled with `expired`. */
  const expire = (item: OutboxItem, actionRequestId: string) =>
    Effect.gen(function* () {
      const found = yield* ledger.get(actionRequestId)
      if (Option.isNone(found)) return yield* ignore(item, "unknown_action")
      const payment = storedPaymentOf(found.value)
      if (Option.isNone(payment)) return yield* ignore(item, "no_stored_payment")
      yield* settle(item, found.value, payment.value, yield* ledger.history(actionRequestId), true)
    })

  return (item: OutboxItem): Effect.Effect<void, StorageError> =>
    Effect.gen(function* () {
      const payload = decodeEventPayload(item.payload)
      if (Option.isNone(payload)) return yield* ignore(item, "undecodable_event")
      const { eventId, objectId, type } = payload.value
      // Only an outage may pass: an object the provider does not know, or a call it refuses, is ignored.
      yield* Effect.catchTag(
        type === continuationExpiredType ? expire(item, objectId) : apply(item, eventId, type, objectId),
        "PaymentProviderError",
        (error) =>
          error.reason === "unavailable"
            ? reschedule(item, "provider_unavailable")
            : ignore(item, `provider_${error.reason}`)
      )
    })
}
