/**
 * The service's payment reconciliation reads against the customer kit over real HTTP on loopback,
 * behind a front that misbehaves on purpose: a read whose observation is missing, unsigned,
 * wrongly signed, stale, reshaped, redirected, late or echoes another binding judges nothing, keeps
 * the action `pending` without a history entry and is read again; the next good read verifies it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import * as HttpTransport from "../../../../adapters/transport/HttpTransport.ts"
import { ActionLedger } from "../../../../core/ports/ActionLedger.ts"
import { makeCompletionReceiver } from "../../../../core/connector/CompletionIntake.ts"
import { makeDispatcher } from "../../../../core/connector/Dispatcher.ts"
import { intake } from "../../../../core/connector/Intake.ts"
import { makeReconciler, type ReadResult } from "../../../../core/connector/Reconciler.ts"
import type { PaymentReading } from "../../../../core/customer/Reconciliation.ts"
import type { PaymentReconciliationRequest } from "../../../../core/protocol/messages/Reconciliation.ts"
import { connectorSecretRef, SecretVault } from "../../../../core/ports/SecretVault.ts"
import { Outbox } from "../../../../core/ports/Outbox.ts"
import { formatTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { storageVariants } from "../../../support/storage.ts"
import {
  chargedReading,
  connect,
  type Peer,
  type PeerMode,
  enablePaymentModes,
  paymentIntakeInput,
  providerReferenceOf,
  signedCompletion,
  startPeer,
  workspaceId
} from "../dispatch/support.ts"

let peer: Peer
/** What the provider says about the payment now; `refunded` when the test has refunded it. */
let refunded = false
/** Replaces the reader's answer for one test. */
let script:
  | ((request: PaymentReconciliationRequest, reading: PaymentReading) => Effect.Effect<PaymentReading>)
  | undefined
beforeAll(async () => {
  peer = await startPeer({
    slowMillis: 1_200,
    paymentReader: {
      read: ({ request }) => {
        const charged = chargedReading(request)
        const reading: PaymentReading = refunded
          ? { ...charged, refundedAmountMinor: charged.chargedAmountMinor, outcome: "reversed" }
          : charged
        return script === undefined ? Effect.succeed(reading) : script(request, reading)
      }
    }
  })
})
afterAll(() => peer.close())

const storage = storageVariants[0]!
const serviceLayer = () =>
  Layer.mergeAll(
    storage.layer(),
    NodeCrypto.layer,
    HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 500 })
  )

/** The kit's signed completion of the action, received by the service. */
const complete = (actionRequestId: string, key: string, outcome: "succeeded" | "reversed", completionId: string) =>
  Effect.flatMap(makeCompletionReceiver, (receive) =>
    Effect.flatMap(
      signedCompletion({
        type: "service.customer_action.completion",
        protocolVersion: 1,
        workspaceId,
        actionRequestId,
        providerIdempotencyKey: key,
        providerReference: providerReferenceOf(actionRequestId),
        completionId,
        completedAt: formatTimestamp(Date.now()),
        outcome,
        evidence: {
          entitlement: "addon_purchased",
          reasonCode: outcome === "succeeded" ? "charged" : "refunded",
          source: "provider_event"
        }
      }),
      receive
    )
  )

/** A Payment action accepted by the kit, with its `succeeded` completion received: pending, a read queued. */
const pendingPayment = Effect.gen(function* () {
  peer.mode = "good"
  refunded = false
  script = undefined
  yield* enablePaymentModes(yield* connect(peer.url))
  const { actionRequestId } = yield* intake(workspaceId, paymentIntakeInput())
  const dispatcher = yield* makeDispatcher({ owner: "d1" })
  assert.strictEqual(yield* dispatcher.runOnce, 1)
  const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
  assert.strictEqual(record.state, "accepted")
  const receipt = yield* complete(actionRequestId, record.providerIdempotencyKey, "succeeded", `cmp_${actionRequestId}`)
  assert.strictEqual(receipt.state, "pending")
  return actionRequestId
})

/** The live clock moved `millis` ahead. */
const shifted = (millis: number): Clock.Clock => {
  const live = Clock.make()
  const nanos = BigInt(millis) * 1_000_000n
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => live.unsafeCurrentTimeMillis() + millis,
    currentTimeMillis: Effect.sync(() => live.unsafeCurrentTimeMillis() + millis),
    unsafeCurrentTimeNanos: () => live.unsafeCurrentTimeNanos() + nanos,
    currentTimeNanos: Effect.sync(() => live.unsafeCurrentTimeNanos() + nanos),
    sleep: (duration) => live.sleep(duration)
  }
}

/** Leases the due reads and performs them. */
const readDue = Effect.gen(function* () {
  const reconciler = yield* makeReconciler({ owner: "r1", timeoutMillis: 500 })
  const leased = yield* reconciler.lease(10)
  return yield* Effect.forEach(leased, reconciler.read)
})

const reconciliationEntries = (actionRequestId: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId)),
    (history) => history.filter((h) => h.trigger === "reconciliation")
  )

describe("payment reconciliation reads", () => {
  it.live(
    "good: the signed observation matches and the action is verified; the read is done",
    () =>
      Effect.gen(function* () {
        const id = yield* pendingPayment
        const results = yield* readDue
        assert.deepStrictEqual(
          results.map((r) => (r._tag === "Judged" ? r.judgement : r)),
          [{ verdict: "verified", reason: "charge_matches", retry: false }]
        )
        assert.strictEqual(Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id))).state, "verified")
        const [entry] = yield* reconciliationEntries(id)
        assert.strictEqual(entry!.fromState, "pending")
        assert.strictEqual(entry!.toState, "verified")
        const item = Option.getOrThrow(
          yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.reconcile", `${id}:cmp_${id}`))
        )
        assert.isNotNull(item.completedAt)
        assert.deepStrictEqual(yield* readDue, [], "nothing is read again")
      }).pipe(Effect.provide(serviceLayer())),
    30_000
  )

  it.live(
    "a verified payment reported reversed stays verified until the read confirms a full refund, then is reversed",
    () =>
      Effect.gen(function* () {
        const id = yield* pendingPayment
        yield* readDue
        const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id)))
        assert.strictEqual(record.state, "verified")
        const receipt = yield* complete(id, record.providerIdempotencyKey, "reversed", `cmp_refund_${id}`)
        assert.strictEqual(receipt.state, "verified", "unchanged until read")
        refunded = true
        const [result] = yield* readDue
        assert.deepStrictEqual(result!._tag === "Judged" ? result!.judgement : result, {
          verdict: "reversed",
          reason: "full_refund",
          retry: false
        })
        assert.strictEqual(Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id))).state, "reversed")
        const entries = yield* reconciliationEntries(id)
        assert.deepStrictEqual(
          entries.map((e) => [e.fromState, e.toState, (e.detail as { reversal?: boolean }).reversal ?? false]),
          [
            ["pending", "verified", false],
            ["verified", "reversed", true]
          ]
        )
      }).pipe(Effect.provide(serviceLayer())),
    30_000
  )

  it.live(
    "a read still failing 24 hours after it was queued stops, with a reconciliation_abandoned entry",
    () =>
      Effect.gen(function* () {
        const id = yield* pendingPayment
        peer.mode = "status_500"
        const [result] = yield* Effect.withClock(readDue, shifted(24 * 3_600_000 + 60_000))
        assert.deepStrictEqual(result, { _tag: "Failed", reason: "status_500" })
        const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id)))
        assert.strictEqual(record.state, "pending", "the payment claim is not promoted")
        const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(id))
        assert.deepStrictEqual(history.at(-1)!.trigger, "reconciliation_abandoned")
        assert.deepStrictEqual(history.at(-1)!.detail, { attempts: 1, lastReason: "status_500" })
        const item = Option.getOrThrow(
          yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.reconcile", `${id}:cmp_${id}`))
        )
        assert.isNotNull(item.completedAt)
      }).pipe(Effect.provide(serviceLayer())),
    30_000
  )

  it.live(
    "a revision whose secrets are retired is not read again: reconciliation_abandoned at once",
    () =>
      Effect.gen(function* () {
        const id = yield* pendingPayment
        const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id)))
        const vault = yield* SecretVault
        assert.isTrue(yield* vault.retire(connectorSecretRef(record.connectionId, record.revision, "actionSigning")))
        const requests = peer.requests
        const [result] = yield* readDue
        assert.deepStrictEqual(result, { _tag: "Failed", reason: "secrets_unavailable", final: true })
        assert.strictEqual(peer.requests, requests, "nothing was sent")
        const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(id))
        assert.deepStrictEqual(
          [history.at(-1)!.trigger, history.at(-1)!.toState],
          ["reconciliation_abandoned", "pending"]
        )
        const item = Option.getOrThrow(
          yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.reconcile", `${id}:cmp_${id}`))
        )
        assert.isNotNull(item.completedAt)
      }).pipe(Effect.provide(serviceLayer())),
    30_000
  )

  it.live(
    "two reads of one action at once: a verdict on an older reading than one already recorded is dropped",
    () =>
      Effect.gen(function* () {
        const id = yield* pendingPayment
        const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id)))
        // A second `succeeded` completion queues a second read while the first is still queued.
        assert.strictEqual(
          (yield* complete(id, record.providerIdempotencyKey, "succeeded", `cmp_again_${id}`)).state,
          "pending"
        )
        // The first read reaches the customer, finds the payment succeeded and answers only after
        // the second read (made after the first reached the customer) found it fully refunded and
        // its verdict was recorded.
        const secondRecorded = yield* Deferred.make<void>()
        let calls = 0
        script = (request, reading) =>
          calls++ === 0
            ? Effect.as(Deferred.await(secondRecorded), reading)
            : Effect.succeed({
                ...reading,
                outcome: "reversed",
                refundedAmountMinor: request.expected?.amountMinor ?? 0
              })
        const reconciler = yield* makeReconciler({ owner: "r1", timeoutMillis: 2_000 })
        const leased = yield* reconciler.lease(10)
        assert.strictEqual(leased.length, 2)
        const first = yield* Effect.fork(reconciler.read(leased[0]!))
        // Later by the clock than the first read's request: the reads are ordered by when each was made.
        while (calls === 0) yield* Effect.sleep("5 millis")
        yield* Effect.sleep("2 millis")
        const second = yield* reconciler.read(leased[1]!)
        yield* Deferred.succeed(secondRecorded, undefined)
        const results = [yield* Fiber.join(first), second]
        assert.deepStrictEqual(
          results.map((r) => (r._tag === "Judged" ? r.judgement.verdict : r._tag)),
          ["verified", "reversed"]
        )
        // The newer reading (refunded) stands: the older success does not verify the payment.
        assert.strictEqual(Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id))).state, "pending")
        const entries = yield* reconciliationEntries(id)
        assert.deepStrictEqual(
          entries.map((e) => (e.detail as { verdict: string }).verdict),
          ["reversed"]
        )
      }).pipe(Effect.provide(serviceLayer())),
    30_000
  )

  const cases: ReadonlyArray<readonly [PeerMode, string]> = [
    ["wrong_signature", "response_invalid_signature"],
    ["unsigned", "response_"],
    ["stale_response", "response_stale_timestamp"],
    ["extra_field", "response_invalid_shape"],
    ["other_key", "response_binding_mismatch"],
    ["status_500", "status_500"],
    ["redirect", "status_302"],
    ["reset_after_read", "reset"],
    ["slow", "timeout"]
  ]
  for (const [mode, reason] of cases) {
    it.live(
      `${mode}: nothing judged, the action stays pending, the read is retried and then verifies`,
      () =>
        Effect.gen(function* () {
          const id = yield* pendingPayment
          peer.mode = mode
          const [result] = (yield* readDue) as ReadonlyArray<ReadResult>
          assert.strictEqual(result!._tag, "Failed")
          assert.isTrue(result!._tag === "Failed" && result!.reason.startsWith(reason), JSON.stringify(result))
          assert.strictEqual(Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id))).state, "pending")
          assert.deepStrictEqual(yield* reconciliationEntries(id), [])
          const item = Option.getOrThrow(
            yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.reconcile", `${id}:cmp_${id}`))
          )
          assert.strictEqual(item.attempts, 1)
          assert.isNull(item.completedAt)
          peer.mode = "good"
          yield* Effect.sleep("1100 millis")
          const [again] = yield* readDue
          assert.isTrue(again!._tag === "Judged" && again!.judgement.verdict === "verified", JSON.stringify(again))
          assert.strictEqual(Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(id))).state, "verified")
        }).pipe(Effect.provide(serviceLayer())),
      30_000
    )
  }
})
