/**
 * Dispatch end to end over real HTTP on loopback: the service's intake, outbox and dispatcher
 * against the customer kit, directly and behind a front that misbehaves on purpose. Every case
 * ends in the documented state, the kit queues the operation once, and a later good answer with
 * the same key resolves it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import { ActionLedger } from "../../../../core/ports/ActionLedger.ts"
import { type DeliveryResult, makeDispatcher, unreachableReasons } from "../../../../core/connector/Dispatcher.ts"
import { intake } from "../../../../core/connector/Intake.ts"
import { Outbox } from "../../../../core/ports/Outbox.ts"
import * as HttpTransport from "../../../../adapters/transport/HttpTransport.ts"
import { storageVariants } from "../../../support/storage.ts"
import {
  closedPort,
  connect,
  intakeInput,
  misbehavingModes,
  type Peer,
  type PeerMode,
  startPeer,
  workspaceId
} from "./support.ts"
import { uuidV7Millis, uuidV7Pattern } from "../../../support/uuid.ts"

let peer: Peer
beforeAll(async () => {
  peer = await startPeer({ slowMillis: 1_200 })
})
afterAll(() => peer.close())

const serviceLayer = (storage: (typeof storageVariants)[number]) =>
  Layer.mergeAll(
    storage.layer(),
    NodeCrypto.layer,
    HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 500 })
  )

const stateOf = (id: string) =>
  Effect.flatMap(ActionLedger, (ledger) => ledger.get(id)).pipe(Effect.map(Option.map((r) => r.state)))

/** Listens on `port` and relays every request to `target` unchanged: the endpoint at `port` is up again. */
const relayOn = (port: number, target: string): Promise<Server> =>
  new Promise((resolve, reject) => {
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(
            ([name, value]) => typeof value === "string" && !["host", "connection", "content-length"].includes(name)
          )
        ) as Record<string, string>
        fetch(target, { method: req.method ?? "POST", headers, body: Buffer.concat(chunks) }).then(
          async (answer) => {
            const body = Buffer.from(await answer.arrayBuffer())
            const back: Record<string, string> = {}
            answer.headers.forEach((value, name) => {
              if (!["connection", "keep-alive", "transfer-encoding", "content-length"].includes(name))
                back[name] = value
            })
            res.writeHead(answer.status, { ...back, "content-length": String(body.byteLength) })
            res.end(body)
          },
          () => res.destroy()
        )
      })
    })
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve(server))
  })

/** Stops a relay and drops its open connections: the endpoint is down again. */
const stopRelay = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })

/** A relay on `port` for the scope. */
const relayScoped = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(() => relayOn(port, peer.url)),
    (server) => Effect.promise(() => stopRelay(server))
  )

/** Connects the workspace to a loopback port with nothing listening on it (yet); answers the port. */
const connectRefused = Effect.gen(function* () {
  peer.mode = "good"
  const port = yield* Effect.promise(closedPort)
  yield* connect(`http://127.0.0.1:${port}/connector`)
  return port
})

/** Stretches a waiting delivery's backoff to ten minutes (as after many failed attempts), its last error kept. */
const waitLong = (actionRequestId: string) =>
  Effect.gen(function* () {
    const outbox = yield* Outbox
    const item = Option.getOrThrow(yield* outbox.findByKey("service.dispatch", actionRequestId))
    const leased = yield* outbox.lease({
      owner: "stretch",
      now: item.nextAttemptAt,
      leaseMillis: 1_000,
      limit: 1,
      kinds: ["service.dispatch"]
    })
    assert.deepStrictEqual(
      leased.map((l) => l.id),
      [item.id]
    )
    assert.isTrue(
      yield* outbox.reschedule({
        id: item.id,
        owner: "stretch",
        nextAttemptAt: Date.now() + 600_000,
        error: item.lastError!
      })
    )
    return item.lastError
  })

const dueAt = (actionRequestId: string) =>
  Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId)).pipe(
    Effect.map((item) => Option.getOrThrow(item).nextAttemptAt)
  )

/**
 * The real clock read `millis` ahead (its sleeps stay real): what is due within `millis` is due to
 * it. The dispatcher reads every time from its fiber's clock, so a round run on it is the round
 * `millis` later, without waiting them out.
 */
const ahead = (millis: number): Clock.Clock => {
  const real = Clock.make()
  const nanos = BigInt(millis) * 1_000_000n
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => real.unsafeCurrentTimeMillis() + millis,
    currentTimeMillis: Effect.sync(() => real.unsafeCurrentTimeMillis() + millis),
    unsafeCurrentTimeNanos: () => real.unsafeCurrentTimeNanos() + nanos,
    currentTimeNanos: Effect.sync(() => real.unsafeCurrentTimeNanos() + nanos),
    sleep: (duration) => real.sleep(duration)
  }
}

/** Delivers again once the first retry delay (at most one second) is over: 1.1 s later on the clock. */
const redeliver = (dispatcher: Effect.Effect.Success<ReturnType<typeof makeDispatcher>>) =>
  dispatcher.runOnce.pipe(Effect.withClock(ahead(1100)))

for (const storage of storageVariants) {
  describe.skipIf(!storage.available)(`dispatch (${storage.name})`, () => {
    it.live(
      "intake -> delivered -> accepted; the request is persisted with its outbox item first",
      () =>
        Effect.gen(function* () {
          peer.mode = "good"
          const before = yield* Effect.promise(() => peer.executions())
          yield* connect(peer.url)
          const before7 = Date.now()
          const { actionRequestId, state } = yield* intake(workspaceId, intakeInput())
          const after7 = Date.now()
          assert.strictEqual(state, "dispatching")
          const item = yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId))
          assert.isTrue(Option.isSome(item))
          // Both rows' keys are version 7 UUIDs of the intake time (time-ordered primary keys).
          for (const id of [actionRequestId, Option.getOrThrow(item).id]) {
            assert.match(id, uuidV7Pattern)
            const millis = uuidV7Millis(id)
            assert.isTrue(millis >= before7 && millis <= after7, `${id} is of ${millis}, not of the intake`)
          }
          const dispatcher = yield* makeDispatcher({ owner: "w1" })
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          assert.deepStrictEqual(yield* stateOf(actionRequestId), Option.some("accepted"))
          const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
          assert.deepStrictEqual(
            history.map((h) => [h.fromState, h.toState]),
            [
              [null, "dispatching"],
              ["dispatching", "accepted"]
            ]
          )
          assert.strictEqual(yield* Effect.promise(() => peer.executions()), before + 1)
          // Nothing is due any more.
          assert.strictEqual(yield* dispatcher.runOnce, 0)
        }).pipe(Effect.provide(serviceLayer(storage))),
      30_000
    )

    const ambiguous: ReadonlyArray<PeerMode> = [...misbehavingModes, "unsigned"]
    for (const mode of ambiguous) {
      it.live(
        `${mode}: unknown outcome, then the same key again resolves it with one execution`,
        () =>
          Effect.gen(function* () {
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
            const item = Option.getOrThrow(
              yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId))
            )
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
            assert.deepStrictEqual(
              history.map((h) => h.toState),
              ["dispatching", "unknown_outcome", "accepted"]
            )
          }).pipe(Effect.provide(serviceLayer(storage))),
        30_000
      )
    }

    it.live(
      "nothing listening: not sent, state unchanged, retried later",
      () =>
        Effect.gen(function* () {
          yield* connectRefused
          const dispatcher = yield* makeDispatcher({ owner: "w1" })
          const { actionRequestId } = yield* intake(workspaceId, intakeInput())
          yield* dispatcher.runOnce
          assert.deepStrictEqual(yield* stateOf(actionRequestId), Option.some("dispatching"))
          const item = Option.getOrThrow(
            yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId))
          )
          assert.strictEqual(item.attempts, 1)
          assert.strictEqual(item.lastError, "connect")
        }).pipe(Effect.provide(serviceLayer(storage))),
      30_000
    )

    it.live(
      "an endpoint that answers again: the deliveries waiting on it after it could not be reached are due at once",
      () =>
        Effect.gen(function* () {
          const executionsBefore = yield* Effect.promise(() => peer.executions())
          const port = yield* connectRefused
          const before = yield* makeDispatcher({ owner: "w1" })
          const { actionRequestId: waiting } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* before.runOnce, 1)
          assert.strictEqual(yield* waitLong(waiting), "connect")
          // The endpoint is up again, and a service started since (a new dispatcher) delivers a new action.
          yield* relayScoped(port)
          const after = yield* makeDispatcher({ owner: "w2" })
          const { actionRequestId: fresh } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* after.runOnce, 1)
          assert.deepStrictEqual(yield* stateOf(fresh), Option.some("accepted"))
          // Due now, not in ten minutes: the next round delivers it.
          assert.isAtMost(yield* dueAt(waiting), Date.now())
          assert.strictEqual(yield* after.runOnce, 1)
          assert.deepStrictEqual(yield* stateOf(waiting), Option.some("accepted"))
          assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore + 2)
        }).pipe(Effect.scoped, Effect.provide(serviceLayer(storage))),
      30_000
    )

    it.live(
      "an endpoint that stays unreachable is tried again every probeMillis with the delivery due soonest; once one is acknowledged the others are due",
      () =>
        Effect.gen(function* () {
          const port = yield* connectRefused
          const dispatcher = yield* makeDispatcher({ owner: "w1", probeMillis: 4_000 })
          const { actionRequestId: sooner } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          yield* waitLong(sooner)
          const { actionRequestId: later } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          yield* waitLong(later)
          // Nothing is due, and the first probe waits its interval.
          assert.strictEqual(yield* dispatcher.runOnce, 0)
          // 4.2 s later on the dispatcher's clock (`ahead`), then 8.4 s later.
          const [first, second] = [4_200, 8_400]
          const runAt = (millis: number) => dispatcher.runOnce.pipe(Effect.withClock(ahead(millis)))
          // Still down: one delivery is tried (the one due soonest), and it fails again.
          const laterDue = yield* dueAt(later)
          assert.strictEqual(yield* runAt(first), 1)
          assert.isAbove(yield* dueAt(sooner), Date.now() + first)
          assert.strictEqual(yield* dueAt(later), laterDue)
          assert.strictEqual(yield* runAt(first), 0)
          // Both wait ten minutes again; the endpoint is back up.
          yield* waitLong(sooner)
          yield* relayScoped(port)
          // The next probe is acknowledged, after an outage longer than probeMillis: the other is due too.
          assert.strictEqual(yield* runAt(second), 1)
          assert.deepStrictEqual(yield* stateOf(later), Option.some("accepted"))
          assert.isAtMost(yield* dueAt(sooner), Date.now() + second)
          assert.strictEqual(yield* runAt(second), 1)
          assert.deepStrictEqual(yield* stateOf(sooner), Option.some("accepted"))
        }).pipe(Effect.scoped, Effect.provide(serviceLayer(storage))),
      30_000
    )

    it.live(
      "unreachable for less than probeMillis (an endpoint shedding load): the deliveries waiting after it keep their backoff",
      () =>
        Effect.gen(function* () {
          const port = yield* connectRefused
          const dispatcher = yield* makeDispatcher({ owner: "w1", probeMillis: 60_000 })
          const relay = yield* Effect.promise(() => relayOn(port, peer.url))
          const { actionRequestId: first } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          assert.deepStrictEqual(yield* stateOf(first), Option.some("accepted"))
          yield* Effect.promise(() => stopRelay(relay))
          const { actionRequestId: waiting } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          assert.include(unreachableReasons, yield* waitLong(waiting))
          const due = yield* dueAt(waiting)
          yield* relayScoped(port)
          const { actionRequestId: fresh } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          assert.deepStrictEqual(yield* stateOf(fresh), Option.some("accepted"))
          assert.strictEqual(yield* dueAt(waiting), due)
          assert.strictEqual(yield* dispatcher.runOnce, 0)
        }).pipe(Effect.scoped, Effect.provide(serviceLayer(storage))),
      30_000
    )

    it.live(
      "a delivery waiting after a wrong answer keeps its backoff when another is acknowledged",
      () =>
        Effect.gen(function* () {
          yield* connect(peer.url)
          const dispatcher = yield* makeDispatcher({ owner: "w1", timeoutMillis: 500 })
          const { actionRequestId: waiting } = yield* intake(workspaceId, intakeInput())
          peer.mode = "wrong_signature"
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          peer.mode = "good"
          assert.strictEqual(yield* waitLong(waiting), "response_invalid_signature")
          const due = yield* dueAt(waiting)
          const { actionRequestId: fresh } = yield* intake(workspaceId, intakeInput())
          assert.strictEqual(yield* makeDispatcher({ owner: "w2" }).pipe(Effect.flatMap((d) => d.runOnce)), 1)
          assert.deepStrictEqual(yield* stateOf(fresh), Option.some("accepted"))
          assert.strictEqual(yield* dueAt(waiting), due)
          assert.strictEqual(yield* dispatcher.runOnce, 0)
          assert.deepStrictEqual(yield* stateOf(waiting), Option.some("unknown_outcome"))
        }).pipe(Effect.provide(serviceLayer(storage))),
      30_000
    )
  })
}

describe("dispatch: retries never change the key", () => {
  it.live(
    "every redelivery carries the same idempotency key with a fresh nonce, timestamp and signature",
    () =>
      Effect.gen(function* () {
        yield* connect(peer.url)
        const dispatcher = yield* makeDispatcher({ owner: "w1", timeoutMillis: 500 })
        const { actionRequestId } = yield* intake(workspaceId, intakeInput())
        const seenBefore = peer.seen.length
        peer.mode = "status_500"
        const results: Array<DeliveryResult> = []
        for (let i = 0; i < 3; i++) {
          const leased = yield* Effect.flatMap(Outbox, (o) =>
            o.lease({
              owner: "w1",
              now: Date.now() + 3_600_000 * (i + 1),
              leaseMillis: 30_000,
              limit: 10,
              kinds: ["service.dispatch"]
            })
          )
          for (const l of leased) results.push(yield* dispatcher.deliver(l))
        }
        peer.mode = "good"
        assert.deepStrictEqual(
          results.map((r) => r._tag),
          ["Ambiguous", "Ambiguous", "Ambiguous"]
        )
        const deliveries = peer.seen.slice(seenBefore)
        assert.strictEqual(deliveries.length, 3)
        assert.strictEqual(new Set(deliveries.map((d) => d.key)).size, 1)
        assert.strictEqual(new Set(deliveries.map((d) => d.nonce)).size, 3)
        assert.strictEqual(new Set(deliveries.map((d) => d.signature)).size, 3)
        assert.isTrue(deliveries.every((d) => d.requestNonce === d.nonce))
        assert.strictEqual(
          deliveries[0]!.key,
          Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId))).providerIdempotencyKey
        )
      }).pipe(
        Effect.provide(
          Layer.mergeAll(
            storageVariants[0]!.layer(),
            NodeCrypto.layer,
            HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 500 })
          )
        )
      ),
    30_000
  )
})
