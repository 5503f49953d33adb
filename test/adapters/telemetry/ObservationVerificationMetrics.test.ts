/**
 * `accord_customer_response_verification_failures_total{message="observation"}`: a payment
 * reconciliation read whose signed observation does not verify (a wrong signature, a stale
 * timestamp from a misbehaving front over real HTTP) is counted under its reason, in the same
 * registry `GET /metrics` exports; a good read counts nothing.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as HttpTransport from "../../../adapters/transport/HttpTransport.ts"
import { makeCompletionReceiver } from "../../../core/connector/CompletionIntake.ts"
import { makeDispatcher } from "../../../core/connector/Dispatcher.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { makeReconciler } from "../../../core/connector/Reconciler.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import * as Metrics from "../../../core/telemetry/Metrics.ts"
import {
  chargedReading,
  connect,
  enablePaymentModes,
  paymentIntakeInput,
  type Peer,
  providerReferenceOf,
  signedCompletion,
  startPeer,
  workspaceId
} from "../../core/connector/dispatch/support.ts"
import { storageVariants } from "../../support/storage.ts"

let peer: Peer
beforeAll(async () => {
  peer = await startPeer({ paymentReader: { read: ({ request }) => Effect.succeed(chargedReading(request)) } })
})
afterAll(() => peer.close())

const serviceLayer = () =>
  Layer.mergeAll(
    storageVariants[0]!.layer(),
    NodeCrypto.layer,
    HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 1_000 })
  )

const counted = (reason: string) =>
  Effect.map(
    Metric.value(
      Metric.tagged(
        Metric.tagged(Metrics.customerResponseVerificationFailures, "message", "observation"),
        "reason",
        reason
      )
    ),
    (state) => state.count
  )

/** A Payment action accepted by the kit with its `succeeded` completion received: a read is queued. */
const pendingPayment = Effect.gen(function* () {
  peer.mode = "good"
  yield* enablePaymentModes(yield* connect(peer.url))
  const { actionRequestId } = yield* intake(workspaceId, paymentIntakeInput())
  assert.strictEqual(yield* (yield* makeDispatcher({ owner: "d1" })).runOnce, 1)
  const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
  const receive = yield* makeCompletionReceiver
  const receipt = yield* receive(
    yield* signedCompletion({
      type: "service.customer_action.completion",
      protocolVersion: 1,
      workspaceId,
      actionRequestId,
      providerIdempotencyKey: record.providerIdempotencyKey,
      providerReference: providerReferenceOf(actionRequestId),
      completionId: `cmp_${actionRequestId}`,
      completedAt: formatTimestamp(Date.now()),
      outcome: "succeeded",
      evidence: { entitlement: "addon_purchased", reasonCode: "charged", source: "provider_event" }
    })
  )
  assert.strictEqual(receipt.state, "pending")
})

const readDue = Effect.gen(function* () {
  const reconciler = yield* makeReconciler({ owner: "r1", timeoutMillis: 1_000 })
  return yield* Effect.forEach(yield* reconciler.lease(10), reconciler.read)
})

describe("customer response verification failures: observations", () => {
  for (const [mode, reason] of [
    ["wrong_signature", "invalid_signature"],
    ["stale_response", "stale_timestamp"]
  ] as const) {
    it.live(
      `${mode}: counted under message=observation, reason=${reason}; a good read counts nothing`,
      () =>
        Effect.gen(function* () {
          yield* pendingPayment
          const before = yield* counted(reason)
          peer.mode = mode
          const [failed] = yield* readDue
          assert.strictEqual(failed!._tag, "Failed")
          assert.strictEqual((yield* counted(reason)) - before, 1)
          peer.mode = "good"
          yield* Effect.sleep("1100 millis")
          const [judged] = yield* readDue
          assert.strictEqual(judged!._tag, "Judged")
          assert.strictEqual((yield* counted(reason)) - before, 1)
        }).pipe(Effect.ensuring(Effect.sync(() => (peer.mode = "good"))), Effect.provide(serviceLayer())),
      30_000
    )
  }
})
