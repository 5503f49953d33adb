/**
 * Dispatch end to end over real HTTP on loopback: the service's intake, outbox and dispatcher
 * against the customer kit, directly and behind a front that misbehaves on purpose. Every case
 * ends in the documented state, the kit queues the operation once, and a later good answer with
 * the same key resolves it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import { ActionLedger } from "../../../../core/ports/ActionLedger.ts"
import { type DeliveryResult, makeDispatcher } from "../../../../core/connector/Dispatcher.ts"
import { intake } from "../../../../core/connector/Intake.ts"
import { Outbox } from "../../../../core/ports/Outbox.ts"
import * as HttpTransport from "../../../../adapters/transport/HttpTransport.ts"
import { storageVariants } from "../../../support/storage.ts"
import { closedPort, connect, intakeInput, misbehavingModes, type Peer, type PeerMode, startPeer, workspaceId } from "./support.ts"

let peer: Peer
beforeAll(async () => {
  peer = await startPeer({ slowMillis: 1_200 })
})
afterAll(() => peer.close())

const serviceLayer = (storage: (typeof storageVariants)[number]) =>
  Layer.mergeAll(storage.layer(), NodeCrypto.layer, HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 500 }))

const stateOf = (id: string) =>
  Effect.flatMap(ActionLedger, (ledger) => ledger.get(id)).pipe(Effect.map(Option.map((r) => r.state)))

/** Waits out the first retry delay (at most one second) and delivers again. */
const redeliver = (dispatcher: Effect.Effect.Success<ReturnType<typeof makeDispatcher>>) =>
  Effect.gen(function*() {
    yield* Effect.sleep("1100 millis")
    return yield* dispatcher.runOnce
  })

for (const storage of storageVariants) {
  describe.skipIf(!storage.available)(`dispatch (${storage.name})`, () => {
    it.live("intake -> delivered -> accepted; the request is persisted with its outbox item first", () =>
      Effect.gen(function*() {
        peer.mode = "good"
        const before = yield* Effect.promise(() => peer.executions())
        yield* connect(peer.url)
        const { actionRequestId, state } = yield* intake(workspaceId, intakeInput())
        assert.strictEqual(state, "dispatching")
        const item = yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId))
        assert.isTrue(Option.isSome(item))
        const dispatcher = yield* makeDispatcher({ owner: "w1" })
        assert.strictEqual(yield* dispatcher.runOnce, 1)
        assert.deepStrictEqual(yield* stateOf(actionRequestId), Option.some("accepted"))
        const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
        assert.deepStrictEqual(history.map((h) => [h.fromState, h.toState]), [[null, "dispatching"], ["dispatching", "accepted"]])
        assert.strictEqual(yield* Effect.promise(() => peer.executions()), before + 1)
        // Nothing is due any more.
        assert.strictEqual(yield* dispatcher.runOnce, 0)
      }).pipe(Effect.provide(serviceLayer(storage))), 30_000)

    const ambiguous: ReadonlyArray<PeerMode> = [...misbehavingModes, "unsigned"]
    for (const mode of ambiguous) {
      it.live(`${mode}: unknown outcome, then the same key again resolves it with one execution`, () =>
        Effect.gen(function*() {
          yield* connect(peer.url)
          const dispatcher = yield* makeDispatcher({ owner: "w1", timeoutMillis: 500 })
          const { actionRequestId } = yield* intake(workspaceId, intakeInput())
          const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
          peer.mode = mode
          const executionsBefore = yield* Effect.promise(() => peer.executions())
          const requestsBefore = peer.requests
          yield* dispatcher.runOnce
          assert.deepStrictEqual(yield* stateOf(actionRequestId), Option.some("unknown_outcome"))
          assert.strictEqual(peer.requests, requestsBefore + 1)
          const item = Option.getOrThrow(yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId)))
          assert.strictEqual(item.attempts, 1)
          assert.isNull(item.completedAt)
          peer.mode = "good"
          assert.strictEqual(yield* redeliver(dispatcher), 1)
          assert.deepStrictEqual(yield* stateOf(actionRequestId), Option.some("accepted"))
          const after = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
          assert.strictEqual(after.providerIdempotencyKey, record.providerIdempotencyKey)
          // The front reached the kit on the first delivery in every mode but redirect; either way one execution.
          assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore + 1)
          const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
          assert.deepStrictEqual(history.map((h) => h.toState), ["dispatching", "unknown_outcome", "accepted"])
        }).pipe(Effect.provide(serviceLayer(storage))), 30_000)
    }

    it.live("nothing listening: not sent, state unchanged, retried later", () =>
      Effect.gen(function*() {
        const port = yield* Effect.promise(closedPort)
        yield* connect(`http://127.0.0.1:${port}/connector`)
        const dispatcher = yield* makeDispatcher({ owner: "w1" })
        const { actionRequestId } = yield* intake(workspaceId, intakeInput())
        yield* dispatcher.runOnce
        assert.deepStrictEqual(yield* stateOf(actionRequestId), Option.some("dispatching"))
        const item = Option.getOrThrow(yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId)))
        assert.strictEqual(item.attempts, 1)
        assert.strictEqual(item.lastError, "connect")
      }).pipe(Effect.provide(serviceLayer(storage))), 30_000)
  })
}

describe("dispatch: retries never change the key", () => {
  it.live("every redelivery carries the same idempotency key with a fresh nonce, timestamp and signature", () =>
    Effect.gen(function*() {
      yield* connect(peer.url)
      const dispatcher = yield* makeDispatcher({ owner: "w1", timeoutMillis: 500 })
      const { actionRequestId } = yield* intake(workspaceId, intakeInput())
      const seenBefore = peer.seen.length
      peer.mode = "status_500"
      const results: Array<DeliveryResult> = []
      for (let i = 0; i < 3; i++) {
        const leased = yield* Effect.flatMap(Outbox, (o) =>
          o.lease({ owner: "w1", now: Date.now() + 3_600_000 * (i + 1), leaseMillis: 30_000, limit: 10, kinds: ["service.dispatch"] }))
        for (const l of leased) results.push(yield* dispatcher.deliver(l))
      }
      peer.mode = "good"
      assert.deepStrictEqual(results.map((r) => r._tag), ["Ambiguous", "Ambiguous", "Ambiguous"])
      const deliveries = peer.seen.slice(seenBefore)
      assert.strictEqual(deliveries.length, 3)
      assert.strictEqual(new Set(deliveries.map((d) => d.key)).size, 1)
      assert.strictEqual(new Set(deliveries.map((d) => d.nonce)).size, 3)
      assert.strictEqual(new Set(deliveries.map((d) => d.signature)).size, 3)
      assert.isTrue(deliveries.every((d) => d.requestNonce === d.nonce))
      assert.strictEqual(deliveries[0]!.key, Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId))).providerIdempotencyKey)
    }).pipe(Effect.provide(Layer.mergeAll(storageVariants[0]!.layer(), NodeCrypto.layer, HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 500 })))), 30_000)
})
