/**
 * One delivery attempt of a persisted completion (spec "Rules for execution handling on the
 * customer side" 8): the stored body's exact bytes, signed per attempt with the completion secret
 * of the revision its action was claimed under ("A redelivery reuses the same body and ID with a
 * fresh nonce, timestamp and signature"); 2xx completes the item and moves the record to
 * `completed`; anything else is rescheduled with backoff.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ActionLedgerService } from "../../ports/ActionLedger.ts"
import type { ConnectorTransportService, TransportFailure } from "../../ports/ConnectorTransport.ts"
import type { OutboxItem } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import type { Signer } from "../../protocol/Signing.ts"
import { completionKeysFor, type RevisionKeys } from "../Keyring.ts"
import { kitStates } from "./kitRecord.ts"
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
  const { done, reschedule } = options.ends

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
      if (status < 200 || status > 299) return yield* reschedule(item, `status_${status}`)
      yield* done(item)
      const record = yield* ledger.get(payload.value.actionRequestId)
      if (Option.isSome(record) && record.value.state === kitStates.completing) {
        const now = yield* Clock.currentTimeMillis
        yield* ledger.transition({
          actionRequestId: record.value.actionRequestId,
          expectedVersion: record.value.version,
          toState: kitStates.completed,
          at: now,
          history: {
            at: now,
            trigger: "customer.completion_delivered",
            detail: { completionId: payload.value.completionId, status }
          }
        })
      }
    })

  return deliverItem
}
