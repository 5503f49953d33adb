/**
 * Dispatch outcomes beyond the happy path, over real HTTP against the customer kit on loopback:
 * a signed rejection, a provider reference (stored hashed only), payment continuations (allowed
 * only on a Payment action whose mode the current capability evidence of the current revision
 * includes; sealed before storage; kept when a completion overtook the acknowledgement), many
 * workers sharing one outbox, giving up after the delivery deadline, and a worker stopping with
 * its scope.
 */
import { createHash } from "node:crypto"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import * as HttpTransport from "../../../../adapters/transport/HttpTransport.ts"
import { ActionLedger } from "../../../../core/ports/ActionLedger.ts"
import { CapabilityRegistry } from "../../../../core/ports/CapabilityRegistry.ts"
import { Cipher } from "../../../../core/protocol/Cipher.ts"
import type { ConnectionStore } from "../../../../core/ports/ConnectionStore.ts"
import type { CatalogStore } from "../../../../core/ports/CatalogStore.ts"
import type { SecretVault } from "../../../../core/ports/SecretVault.ts"
import { makeCompletionReceiver } from "../../../../core/connector/CompletionIntake.ts"
import type { ActionIntake } from "../../../../core/connector/Action.ts"
import { makeDispatcher, runDispatcher, runningLeaseMillis } from "../../../../core/connector/Dispatcher.ts"
import { intake } from "../../../../core/connector/Intake.ts"
import type { PaymentMode } from "../../../../core/protocol/messages/Common.ts"
import * as DispatchSignal from "../../../../core/ports/DispatchSignal.ts"
import * as MemoryDispatchSignal from "../../../../adapters/memory/DispatchSignal.ts"
import { Outbox } from "../../../../core/ports/Outbox.ts"
import { storageVariants } from "../../../support/storage.ts"
import {
  closedPort,
  connect,
  connectionId,
  enablePaymentModes,
  intakeInput,
  paymentIntakeInput,
  type Peer,
  signedCompletion,
  startPeer,
  testContinuation,
  workspaceId
} from "./support.ts"

let peer: Peer
beforeAll(async () => {
  peer = await startPeer({ rejectAccounts: new Map([["acct_reject", "plan_locked"]]) })
})
afterAll(() => peer.close())

// No test here waits for a delivery to time out. The peer answers from this process, whose thread
// PGlite holds while a statement runs: with a dozen deliveries in flight on a loaded machine, an
// answer can take seconds, and a tight time-out would turn it into an unknown outcome.
const serviceLayer = (storage: (typeof storageVariants)[number]) =>
  Layer.mergeAll(
    storage.layer(),
    NodeCrypto.layer,
    HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 10_000 })
  )

const recordOf = (id: string) => Effect.flatMap(ActionLedger, (l) => l.get(id)).pipe(Effect.map(Option.getOrThrow))
const historyOf = (id: string) => Effect.flatMap(ActionLedger, (l) => l.history(id))
const itemOf = (id: string) =>
  Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", id)).pipe(Effect.map(Option.getOrThrow))

const enableModes = (revision: number, modes: ReadonlyArray<PaymentMode>) => enablePaymentModes(revision, modes)

/** The real clock moved by `offsetMillis`. */
const shiftedClock = (offsetMillis: number): Clock.Clock => {
  const base = Clock.make()
  const nanos = BigInt(offsetMillis) * 1_000_000n
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + offsetMillis,
    unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + nanos,
    currentTimeMillis: Effect.sync(() => base.unsafeCurrentTimeMillis() + offsetMillis),
    currentTimeNanos: Effect.sync(() => base.unsafeCurrentTimeNanos() + nanos),
    sleep: base.sleep
  }
}

for (const storage of storageVariants) {
  describe.skipIf(!storage.available)(`dispatch outcomes (${storage.name})`, () => {
    it.live(
      "a signed rejection: rejected with its error code, settled, nothing executed",
      () =>
        Effect.gen(function* () {
          peer.mode = "good"
          yield* connect(peer.url)
          const executionsBefore = yield* Effect.promise(() => peer.executions())
          const { actionRequestId } = yield* intake(workspaceId, intakeInput("acct_reject"))
          const dispatcher = yield* makeDispatcher({ owner: "w1" })
          yield* dispatcher.runOnce
          const record = yield* recordOf(actionRequestId)
          assert.strictEqual(record.state, "rejected")
          assert.deepStrictEqual(record.acknowledgement, { state: "rejected", errorCode: "plan_locked" })
          const history = yield* historyOf(actionRequestId)
          assert.deepStrictEqual((history[1]!.detail as Record<string, unknown>)["errorCode"], "plan_locked")
          assert.isNotNull((yield* itemOf(actionRequestId)).completedAt)
          assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore)
          // Nothing is redelivered.
          assert.strictEqual(yield* dispatcher.runOnce, 0)
        }).pipe(Effect.provide(serviceLayer(storage))),
      30_000
    )

    it.live(
      "an acknowledgement carrying a providerReference: only its SHA-256 is stored, in the acknowledgement and the history",
      () =>
        Effect.gen(function* () {
          peer.mode = "good"
          yield* connect(peer.url)
          const { actionRequestId } = yield* intake(workspaceId, intakeInput())
          peer.mode = "provider_reference"
          const dispatcher = yield* makeDispatcher({ owner: "w1" })
          yield* dispatcher.runOnce.pipe(Effect.ensuring(Effect.sync(() => (peer.mode = "good"))))
          const record = yield* recordOf(actionRequestId)
          const history = yield* historyOf(actionRequestId)
          const hash = createHash("sha256").update(peer.providerReference, "utf8").digest("hex")
          assert.strictEqual(record.state, "accepted")
          assert.deepStrictEqual(record.acknowledgement, { state: "accepted", providerReferenceHash: hash })
          assert.strictEqual((history.at(-1)!.detail as Record<string, unknown>)["providerReferenceHash"], hash)
          assert.notInclude(JSON.stringify([record, history]), peer.providerReference)
        }).pipe(Effect.provide(serviceLayer(storage))),
      30_000
    )

    it.live(
      "many workers on one outbox: every action delivered exactly once",
      () =>
        Effect.gen(function* () {
          peer.mode = "good"
          yield* connect(peer.url)
          const executionsBefore = yield* Effect.promise(() => peer.executions())
          const seenBefore = peer.seen.length
          const ids = yield* Effect.forEach(
            Array.from({ length: 40 }, (_, i) => i),
            (i) => Effect.map(intake(workspaceId, intakeInput(`acct_many_${i}`)), (c) => c.actionRequestId)
          )
          const workers = yield* Effect.forEach(["w1", "w2", "w3"], (owner) =>
            makeDispatcher({ owner, batchSize: 7, concurrency: 4 })
          )
          // All three lease and deliver concurrently until nothing is left.
          yield* Effect.forEach(
            workers,
            (w) =>
              Effect.gen(function* () {
                while ((yield* w.runOnce) > 0) {
                  /* keep leasing */
                }
              }),
            { concurrency: "unbounded", discard: true }
          )
          for (const id of ids) assert.strictEqual((yield* recordOf(id)).state, "accepted")
          const deliveries = peer.seen.slice(seenBefore)
          assert.strictEqual(deliveries.length, ids.length)
          assert.strictEqual(new Set(deliveries.map((d) => d.key)).size, ids.length)
          assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore + ids.length)
        }).pipe(Effect.provide(serviceLayer(storage))),
      60_000
    )
  })
}

describe("payment continuations", () => {
  const layer = () => serviceLayer(storageVariants[0]!)

  const deliverWithContinuation = (
    input: ActionIntake,
    setup: (revision: number) => Effect.Effect<unknown, unknown, CapabilityRegistry>,
    afterIntake: Effect.Effect<unknown, unknown, ConnectionStore | SecretVault | CatalogStore> = Effect.void,
    /**
     * Runs while the customer holds the request, after the payment gate let it through and before
     * its acknowledgement is processed: the continuation check decides on what holds then.
     */
    whileDelivering?: (
      revision: number
    ) => Effect.Effect<unknown, unknown, CapabilityRegistry | ConnectionStore | SecretVault | CatalogStore>
  ) =>
    Effect.gen(function* () {
      peer.mode = "good"
      const revision = yield* connect(peer.url)
      yield* setup(revision)
      const { actionRequestId } = yield* intake(workspaceId, input)
      yield* afterIntake
      peer.mode = "continuation"
      if (whileDelivering !== undefined) {
        const runtime = yield* Effect.runtime<CapabilityRegistry | ConnectionStore | SecretVault | CatalogStore>()
        peer.beforeAnswer = () => Runtime.runPromise(runtime)(Effect.asVoid(Effect.orDie(whileDelivering(revision))))
      }
      const dispatcher = yield* makeDispatcher({ owner: "w1" })
      const result = yield* dispatcher.runOnce.pipe(
        Effect.ensuring(
          Effect.sync(() => {
            peer.mode = "good"
            peer.beforeAnswer = undefined
          })
        )
      )
      assert.strictEqual(result, 1)
      return { actionRequestId, record: yield* recordOf(actionRequestId), history: yield* historyOf(actionRequestId) }
    })

  const reasonOf = (history: ReadonlyArray<{ readonly detail: unknown }>) =>
    (history[history.length - 1]!.detail as Record<string, unknown>)["reason"]

  it.live(
    "allowed on a Payment action whose mode is enabled for the current revision: accepted, continuation sealed to the action",
    () =>
      Effect.gen(function* () {
        const { actionRequestId, history, record } = yield* deliverWithContinuation(paymentIntakeInput(), (r) =>
          enableModes(r, ["one_time_purchase"])
        )
        assert.strictEqual(record.state, "accepted")
        assert.isNotNull(record.sealedContinuation)
        const cipher = yield* Cipher
        const opened = JSON.parse(yield* cipher.open(record.sealedContinuation!, `continuation:${actionRequestId}`))
        assert.strictEqual(opened.kind, "provider_payment_element")
        assert.strictEqual(opened.allowRedirects, "never")
        // Bound to this action: it does not open as another action's continuation.
        const elsewhere = yield* Effect.exit(
          cipher.open(record.sealedContinuation!, "continuation:8d0f2b4c-6e8a-4c0d-9f3b-5c7e9a1d3f5b")
        )
        assert.isTrue(Exit.isFailure(elsewhere))
        // The client secret is stored nowhere in the clear.
        assert.notInclude(JSON.stringify([record.acknowledgement, record.sealedContinuation, history]), "_secret_")
        assert.strictEqual(
          (history[history.length - 1]!.detail as Record<string, unknown>)["continuation"],
          "stored_encrypted"
        )
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "a completion that moved the action on before its acknowledgement was processed: acknowledgement and sealed continuation still stored, state kept",
    () =>
      Effect.gen(function* () {
        const receive = yield* makeCompletionReceiver
        const receipts: Array<string> = []
        // The kit has claimed the request; its completion reaches the service before the acknowledgement does.
        peer.beforeAnswer = (execution) =>
          Effect.runPromise(
            Effect.flatMap(
              signedCompletion({
                type: "service.customer_action.completion",
                protocolVersion: 1,
                workspaceId,
                actionRequestId: execution.actionRequestId,
                providerIdempotencyKey: execution.providerIdempotencyKey,
                providerReference: "pi_early_1",
                completionId: `cmp_${execution.actionRequestId}`,
                completedAt: new Date().toISOString(),
                outcome: "succeeded",
                evidence: { entitlement: "addon", reasonCode: "paid", source: "provider_event", accountId: "acct_42" }
              }),
              receive
            )
          ).then((receipt) => void receipts.push(receipt.state))
        const { actionRequestId, history, record } = yield* deliverWithContinuation(paymentIntakeInput(), (r) =>
          enableModes(r, ["one_time_purchase"])
        ).pipe(Effect.ensuring(Effect.sync(() => (peer.beforeAnswer = undefined))))
        assert.deepStrictEqual(receipts, ["pending"])
        assert.strictEqual(record.state, "pending")
        assert.deepStrictEqual(record.acknowledgement, { state: "accepted" })
        const opened = JSON.parse(
          yield* (yield* Cipher).open(record.sealedContinuation!, `continuation:${actionRequestId}`)
        )
        assert.strictEqual(opened.kind, "provider_payment_element")
        assert.deepStrictEqual(
          history.map((h) => [h.trigger, h.fromState, h.toState]),
          [
            ["intake", null, "dispatching"],
            ["completion", "dispatching", "pending"],
            ["acknowledgement", "pending", "pending"]
          ]
        )
        const late = history.at(-1)!.detail as Record<string, unknown>
        assert.deepStrictEqual(
          [late["state"], late["continuation"], late["unchanged"]],
          ["accepted", "stored_encrypted", "already_accepted"]
        )
        assert.isNotNull((yield* itemOf(actionRequestId)).completedAt)
        assert.notInclude(JSON.stringify([record.acknowledgement, history]), "_secret_")
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "without current capability evidence: an invalid response, unknown outcome, nothing stored",
    () =>
      Effect.gen(function* () {
        // The evidence is removed (an acknowledgement without proof) while the customer holds the request.
        const { history, record } = yield* deliverWithContinuation(
          paymentIntakeInput(),
          (r) => enableModes(r, ["one_time_purchase"]),
          Effect.void,
          (r) => Effect.flatMap(CapabilityRegistry, (registry) => registry.clear(connectionId, r))
        )
        assert.strictEqual(record.state, "unknown_outcome")
        assert.isNull(record.sealedContinuation)
        assert.strictEqual(reasonOf(history), "response_continuation_payment_capability_missing")
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "evidence for another mode only: unknown outcome",
    () =>
      Effect.gen(function* () {
        // A newer proof for another mode only replaces the evidence while the customer holds the request.
        const { history, record } = yield* deliverWithContinuation(
          paymentIntakeInput(),
          (r) => enableModes(r, ["one_time_purchase"]),
          Effect.void,
          (r) => enableModes(r, ["setup_only"])
        )
        assert.strictEqual(record.state, "unknown_outcome")
        assert.strictEqual(reasonOf(history), "response_continuation_payment_mode_not_enabled")
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "a proof of another provider connection while the customer holds the request: the gate's reason, unknown outcome",
    () =>
      Effect.gen(function* () {
        // The same verdict as before every delivery: the evidence must prove the provider connection
        // generation the action was taken under ("Change of either connection ... the proof is invalidated").
        const { history, record } = yield* deliverWithContinuation(
          paymentIntakeInput(),
          (r) => enableModes(r, ["one_time_purchase"]),
          Effect.void,
          (r) => enablePaymentModes(r, ["one_time_purchase"], "gen-2")
        )
        assert.strictEqual(record.state, "unknown_outcome")
        assert.isNull(record.sealedContinuation)
        assert.strictEqual(reasonOf(history), "response_continuation_provider_connection_changed")
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "on a non-Payment action: unknown outcome",
    () =>
      Effect.gen(function* () {
        const { history, record } = yield* deliverWithContinuation(intakeInput(), (r) =>
          enableModes(r, ["one_time_purchase"])
        )
        assert.strictEqual(record.state, "unknown_outcome")
        assert.strictEqual(reasonOf(history), "response_continuation_not_a_payment_action")
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "a setup intent for a one-time purchase: unknown outcome",
    () =>
      Effect.gen(function* () {
        const before = peer.continuation
        peer.continuation = (request) => testContinuation(request.actionRequestId, "setup")
        const { history, record } = yield* deliverWithContinuation(paymentIntakeInput(), (r) =>
          enableModes(r, ["one_time_purchase"])
        ).pipe(Effect.ensuring(Effect.sync(() => (peer.continuation = before))))
        assert.strictEqual(record.state, "unknown_outcome")
        assert.strictEqual(reasonOf(history), "response_continuation_intent_does_not_fit_mode")
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "an action bound to a revision that is no longer current: unknown outcome",
    () =>
      Effect.gen(function* () {
        const { history, record } = yield* deliverWithContinuation(
          paymentIntakeInput(),
          (r) => enableModes(r, ["one_time_purchase"]),
          Effect.void,
          // A newer revision is activated after the action was bound to the old one (and sent).
          () => connect(peer.url)
        )
        assert.strictEqual(record.state, "unknown_outcome")
        assert.strictEqual(reasonOf(history), "response_continuation_revision_not_current")
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "an expired continuation: the acknowledgement is invalid, unknown outcome",
    () =>
      Effect.gen(function* () {
        const before = peer.continuation
        peer.continuation = (request) => ({
          ...testContinuation(request.actionRequestId, "payment"),
          expiresAt: new Date(Date.now() - 1_000).toISOString()
        })
        const { history, record } = yield* deliverWithContinuation(paymentIntakeInput(), (r) =>
          enableModes(r, ["one_time_purchase"])
        ).pipe(Effect.ensuring(Effect.sync(() => (peer.continuation = before))))
        assert.strictEqual(record.state, "unknown_outcome")
        assert.strictEqual(reasonOf(history), "response_invalid_shape")
      }).pipe(Effect.provide(layer())),
    30_000
  )
})

describe("giving up and stopping", () => {
  const layer = () => serviceLayer(storageVariants[0]!)

  it.live(
    "past the 24-hour deadline an ambiguous action stays unknown_outcome, its history says delivery stopped",
    () =>
      Effect.gen(function* () {
        yield* connect(peer.url)
        const { actionRequestId } = yield* intake(workspaceId, intakeInput())
        peer.mode = "status_500"
        const dispatcher = yield* makeDispatcher({ owner: "w1" })
        const leased = yield* Effect.flatMap(Outbox, (o) =>
          o.lease({ owner: "w1", now: Date.now(), leaseMillis: 30_000, limit: 10, kinds: ["service.dispatch"] })
        )
        const result = yield* dispatcher
          .deliver(leased[0]!)
          .pipe(
            Effect.withClock(shiftedClock(25 * 3_600_000)),
            Effect.ensuring(Effect.sync(() => (peer.mode = "good")))
          )
        assert.strictEqual(result._tag, "Ambiguous")
        assert.strictEqual((yield* recordOf(actionRequestId)).state, "unknown_outcome")
        const history = yield* historyOf(actionRequestId)
        assert.deepStrictEqual(
          history.map((h) => h.trigger),
          ["intake", "delivery_ambiguous", "delivery_abandoned"]
        )
        assert.isNotNull((yield* itemOf(actionRequestId)).completedAt)
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "past the deadline with nothing ever sent: still dispatching, delivery stopped",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(closedPort)
        yield* connect(`http://127.0.0.1:${port}/connector`)
        const { actionRequestId } = yield* intake(workspaceId, intakeInput())
        const dispatcher = yield* makeDispatcher({ owner: "w1" })
        yield* dispatcher.runOnce.pipe(Effect.withClock(shiftedClock(25 * 3_600_000)))
        assert.strictEqual((yield* recordOf(actionRequestId)).state, "dispatching")
        const history = yield* historyOf(actionRequestId)
        assert.deepStrictEqual(
          history.map((h) => h.trigger),
          ["intake", "delivery_abandoned"]
        )
        assert.deepStrictEqual(history[1]!.detail, { attempts: 1, lastReason: "connect" })
      }).pipe(Effect.provide(layer())),
    30_000
  )

  it.live(
    "a running dispatcher delivers when intake wakes it (DispatchSignal) and stops when its scope closes",
    () =>
      Effect.gen(function* () {
        peer.mode = "good"
        yield* connect(peer.url)
        const scope = yield* Scope.make()
        // Polling once a minute: only the intake's signal can make the delivery happen in time.
        yield* runDispatcher({ owner: "bg", idleMillis: 60_000 }).pipe(Scope.extend(scope))
        const first = yield* intake(workspaceId, intakeInput())
        for (let i = 0; i < 100 && (yield* recordOf(first.actionRequestId)).state !== "accepted"; i++)
          yield* Effect.sleep("20 millis")
        assert.strictEqual((yield* recordOf(first.actionRequestId)).state, "accepted")
        yield* Scope.close(scope, Exit.void)
        const second = yield* intake(workspaceId, intakeInput())
        yield* Effect.sleep("300 millis")
        assert.strictEqual((yield* recordOf(second.actionRequestId)).state, "dispatching")
        assert.isNull((yield* itemOf(second.actionRequestId)).leaseOwner)
      }).pipe(Effect.provide(Layer.merge(layer(), MemoryDispatchSignal.layerMemory))),
    30_000
  )

  it.live(
    "a running dispatcher renews the lease of a delivery that outlasts it: no other worker takes the action meanwhile",
    () =>
      Effect.gen(function* () {
        peer.mode = "good"
        yield* connect(peer.url)
        const runtime = yield* Effect.runtime<never>()
        const release = yield* Effect.makeLatch(false)
        let held = 0
        peer.beforeAnswer = () => {
          held++
          return Runtime.runPromise(runtime)(release.await)
        }
        const scope = yield* Scope.make()
        // A 1 s lease, renewed every third of it while the delivery waits for its answer.
        // Polling once a minute: its own lease statements do not take the item again meanwhile.
        yield* runDispatcher({ owner: "bg", leaseMillis: 1_000, timeoutMillis: 10_000, idleMillis: 60_000 }).pipe(
          Scope.extend(scope)
        )
        const { actionRequestId } = yield* intake(workspaceId, intakeInput())
        for (let i = 0; i < 100 && held === 0; i++) yield* Effect.sleep("20 millis")
        assert.strictEqual(held, 1)
        // Two and a half lease lengths later the item is still this dispatcher's, its lease ahead of now.
        yield* Effect.sleep("2500 millis")
        const item = yield* itemOf(actionRequestId)
        assert.strictEqual(item.leaseOwner, "bg")
        assert.isAbove(item.leaseExpiresAt!, Date.now())
        const taken = yield* Effect.flatMap(Outbox, (o) =>
          o.lease({ owner: "other", now: Date.now(), leaseMillis: 1_000, limit: 10, kinds: ["service.dispatch"] })
        )
        assert.deepStrictEqual(taken, [])
        yield* release.open
        for (let i = 0; i < 100 && (yield* recordOf(actionRequestId)).state !== "accepted"; i++)
          yield* Effect.sleep("20 millis")
        assert.strictEqual((yield* recordOf(actionRequestId)).state, "accepted")
        assert.isNotNull((yield* itemOf(actionRequestId)).completedAt)
        yield* Scope.close(scope, Exit.void)
      }).pipe(
        Effect.ensuring(Effect.sync(() => (peer.beforeAnswer = undefined))),
        Effect.provide(Layer.merge(layer(), MemoryDispatchSignal.layerMemory))
      ),
    30_000
  )

  it.live(
    "intake hands a new action to a free slot of a dispatcher that takes from intake, created leased to it; with no free slot it is created unleased",
    () =>
      Effect.gen(function* () {
        peer.mode = "good"
        yield* connect(peer.url)
        const answered = yield* Effect.makeLatch(false)
        const runtime = yield* Effect.runtime<never>()
        let held = 0
        peer.beforeAnswer = () => {
          held++
          return Runtime.runPromise(runtime)(answered.await)
        }
        const scope = yield* Scope.make()
        // One slot, polling once a minute, wake-ups muted: only the handoff can start a delivery in time.
        yield* runDispatcher({ owner: "bg", concurrency: 1, idleMillis: 60_000, takeFromIntake: true }).pipe(
          Scope.extend(scope)
        )
        const first = yield* intake(workspaceId, intakeInput())
        for (let i = 0; i < 100 && held === 0; i++) yield* Effect.sleep("20 millis")
        // Created leased to the dispatcher, no attempt counted.
        const firstItem = yield* itemOf(first.actionRequestId)
        assert.deepStrictEqual(
          [firstItem.leaseOwner, firstItem.attempts, firstItem.createdAt],
          ["bg", 0, (yield* recordOf(first.actionRequestId)).createdAt]
        )
        assert.strictEqual(firstItem.leaseExpiresAt, firstItem.createdAt + runningLeaseMillis)
        // The only slot is busy: the next action is created for a lease to find.
        const second = yield* intake(workspaceId, intakeInput())
        assert.isNull((yield* itemOf(second.actionRequestId)).leaseOwner)
        yield* answered.open
        for (let i = 0; i < 100 && (yield* recordOf(first.actionRequestId)).state !== "accepted"; i++)
          yield* Effect.sleep("20 millis")
        assert.strictEqual((yield* recordOf(first.actionRequestId)).state, "accepted")
        assert.isNotNull((yield* itemOf(first.actionRequestId)).completedAt)
        const key = (yield* recordOf(first.actionRequestId)).providerIdempotencyKey
        assert.strictEqual(peer.seen.filter((seen) => seen.key === key).length, 1)
        yield* Scope.close(scope, Exit.void)
        // Its scope closed, the dispatcher takes nothing more from intake.
        const third = yield* intake(workspaceId, intakeInput())
        assert.isNull((yield* itemOf(third.actionRequestId)).leaseOwner)
      }).pipe(
        Effect.ensuring(Effect.sync(() => (peer.beforeAnswer = undefined))),
        Effect.provide(
          Layer.merge(
            layer(),
            Layer.effect(
              DispatchSignal.DispatchSignal,
              Effect.map(MemoryDispatchSignal.make, (signal) => ({ ...signal, wake: Effect.void }))
            )
          )
        )
      ),
    30_000
  )
})
