/**
 * One delivery attempt of a persisted completion (spec "Rules for execution handling on the
 * customer side" 8): the stored body's exact bytes, signed per attempt with the completion secret
 * of the revision its action was claimed under ("A redelivery reuses the same body and ID with a
 * fresh nonce, timestamp and signature"). On 2xx the item is marked done and the record moved to
 * `completed` in ONE write (`ActionLedger.transition` with `completeOutboxItem`), so no crash can
 * leave a delivered completion's record in `completing`; anything else is rescheduled with backoff,
 * or after the service's `Retry-After` on a 429 or 503.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ActionLedgerService } from "../../ports/ActionLedger.ts"
import type { ConnectorTransportService, TransportFailure } from "../../ports/ConnectorTransport.ts"
import type { OutboxItem, OutboxService } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { retryAfterMillis } from "../../protocol/Backoff.ts"
import type { Signer } from "../../protocol/Signing.ts"
import { completionKeysFor, type RevisionKeys } from "../Keyring.ts"
import { completeOutboxKind, kitStates } from "./kitRecord.ts"
import type { LeasedItemEnds } from "./leasedItem.ts"
import * as FastDecode from "../../protocol/FastDecode.ts"

const DeliveryPayload = Schema.Struct({
  actionRequestId: Schema.String,
  completionId: Schema.String,
  body: Schema.String,
  /** The revision whose completion secret signs it (absent in items written before revisions). */
  revision: Schema.optional(Schema.Number)
})
const decodeDeliveryPayload = FastDecode.decodeUnknownOption(DeliveryPayload)

const encoder = new TextEncoder()

const failureText = (failure: TransportFailure): string => `transport_${failure.reason}`

/**
 * Builds the step that attempts one leased `customer.complete` item once, posting to `url`.
 */
export const makeDeliverItem = (options: {
  readonly ledger: ActionLedgerService
  readonly signer: Signer
  readonly transport: ConnectorTransportService
  readonly keyring: ReadonlyArray<RevisionKeys>
  readonly url: string
  readonly ends: LeasedItemEnds
}): ((item: OutboxItem) => Effect.Effect<void, StorageError>) => {
  const { keyring, ledger, signer, transport, url } = options
  const { done, owner, reschedule } = options.ends

  const deliverItem = (item: OutboxItem): Effect.Effect<void, StorageError> =>
    Effect.gen(function* () {
      const payload = decodeDeliveryPayload(item.payload)
      if (Option.isNone(payload)) return yield* reschedule(item, "undecodable_completion")
      const bytes = encoder.encode(payload.value.body)
      const entry = completionKeysFor(keyring, payload.value.revision, item)
      if (entry === undefined) return yield* reschedule(item, "no_keys")
      const headers = yield* signer.sign({ purpose: "completion", keys: entry.keys, body: bytes })
      const response = yield* Effect.either(transport.post({ url, headers: { ...headers }, body: bytes }))
      if (Either.isLeft(response)) return yield* reschedule(item, failureText(response.left))
      const status = response.right.status
      if (status < 200 || status > 299) {
        const hint =
          status === 429 || status === 503
            ? retryAfterMillis(response.right.headers["retry-after"], yield* Clock.currentTimeMillis)
            : undefined
        return yield* reschedule(item, `status_${status}`, hint)
      }
      const record = yield* ledger.get(payload.value.actionRequestId)
      if (Option.isSome(record) && record.value.state === kitStates.completing) {
        const now = yield* Clock.currentTimeMillis
        const moved = yield* ledger.transition({
          actionRequestId: record.value.actionRequestId,
          expectedVersion: record.value.version,
          toState: kitStates.completed,
          at: now,
          history: {
            at: now,
            trigger: "customer.completion_delivered",
            detail: { completionId: payload.value.completionId, status }
          },
          completeOutboxItem: { id: item.id, owner }
        })
        if (moved._tag === "Applied") return
      }
      // Not (or no longer) `completing`: only the item is finished.
      yield* done(item)
    })

  return deliverItem
}

/**
 * Builds the repair of records left in `completing` although their completion was delivered: a
 * kit that marked the delivery done and the record `completed` in two writes (before they became
 * one) could be killed between them. Each `completing` record of the workspace whose completion
 * item is done moves to `completed`; the number moved. Safe beside live workers: a record still
 * being delivered has an open item, and each move is a versioned transition.
 */
export const makeRecoverDelivered = (options: {
  readonly ledger: ActionLedgerService
  readonly outbox: OutboxService
  readonly workspaceId: string
}): Effect.Effect<number, StorageError> => {
  const { ledger, outbox, workspaceId } = options
  const pageSize = 100
  return Effect.gen(function* () {
    let moved = 0
    let after: { readonly createdAt: number; readonly actionRequestId: string } | undefined
    for (;;) {
      const page = yield* ledger.list({
        workspaceId,
        state: kitStates.completing,
        limit: pageSize,
        ...(after !== undefined ? { after } : {})
      })
      for (const record of page) {
        const item = yield* outbox.findByKey(completeOutboxKind, record.actionRequestId)
        if (Option.isNone(item) || item.value.completedAt === null) continue
        const now = yield* Clock.currentTimeMillis
        const result = yield* ledger.transition({
          actionRequestId: record.actionRequestId,
          expectedVersion: record.version,
          toState: kitStates.completed,
          at: now,
          history: {
            at: now,
            trigger: "customer.completion_delivered",
            detail: { recovered: true, deliveredAt: item.value.completedAt }
          }
        })
        if (result._tag === "Applied") moved++
      }
      if (page.length < pageSize) return moved
      const last = page[page.length - 1]!
      after = { createdAt: last.createdAt, actionRequestId: last.actionRequestId }
    }
  })
}
