/**
 * The kit worker's leases and completion delivery under failure, on every storage the kit runs on
 * (memory, PGlite, PostgreSQL when DATABASE_URL is set), with the test clock:
 *
 * - a dead worker's execution is taken over once its short lease has run out, never before;
 * - a live worker's heartbeat keeps its execution however long the host call runs;
 * - a worker that stops gives its execution back due at once, and the next run asks `lookup` first;
 * - a delivered completion finishes its item and its record in one write; records left
 *   `completing` by an older kit killed between the two are repaired;
 * - a 503 or 429 with `Retry-After` is retried after the service's hint, not the backoff's tail.
 */
import { assert, describe } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as HttpTransport from "../../../adapters/transport/HttpTransport.ts"
import * as Handler from "../../../core/customer/Handler.ts"
import * as Worker from "../../../core/customer/Worker.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import { backoffDelay, hintedDelay } from "../../../core/protocol/Backoff.ts"
import { importSigningKeys, type SigningKeys } from "../../../core/protocol/Signing.ts"
import {
  executionBody,
  executionDelivery,
  secrets,
  startService,
  succeeded,
  workspaceId
} from "../../support/customer.ts"
import { onOneStore } from "../../../adapters/testing/internal/oneStore.ts"
import { storageVariants } from "../../support/storage.ts"

const lease = Worker.defaultLeaseMillis
const late = 1_000_000_000_000
const backoff = { baseMillis: 1_000, capMillis: 300_000 }

/** A host whose `execute` waits for `release` (when given); counts its calls. */
const host = (release?: Deferred.Deferred<void>) => {
  const calls = { execute: 0, lookup: 0 }
  const started = Effect.runSync(Deferred.make<void>())
  const executor: Worker.ActionExecutorService = {
    execute: (request) =>
      Effect.gen(function* () {
        calls.execute++
        yield* Deferred.succeed(started, undefined)
        if (release !== undefined) yield* Deferred.await(release)
        return succeeded(request.actionRequestId)
      }),
    lookup: () => Effect.sync(() => (calls.lookup++, Option.none()))
  }
  return { calls, executor, started }
}

const settings = (keys: SigningKeys, serviceUrl = "http://127.0.0.1:9") => ({
  workspaceId,
  keys,
  serviceUrl,
  pollMillis: 50,
  backoff
})

/** Claims one execution through the handler; its body. */
const claim = Effect.gen(function* () {
  const keys = yield* importSigningKeys(secrets)
  const handler = yield* Handler.makeCustomerHandler({ workspaceId, keys })
  const body = yield* executionBody(globalThis.crypto.randomUUID())
  const response = yield* handler.handle(yield* executionDelivery(keys, body))
  assert.strictEqual(response.status, 202)
  return { body, keys }
})

const executeItemOf = (key: string) =>
  Effect.map(
    Effect.flatMap(Outbox, (outbox) => outbox.findByKey(Handler.executeOutboxKind, key)),
    Option.getOrThrow
  )
const completionItemOf = (actionRequestId: string) =>
  Effect.map(
    Effect.flatMap(Outbox, (outbox) => outbox.findByKey(Worker.completeOutboxKind, actionRequestId)),
    Option.getOrThrow
  )
const stateOf = (actionRequestId: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (ledger) => ledger.get(actionRequestId)),
    (record) => Option.getOrThrow(record).state
  )

/** Waits (real time, bounded) until `condition` holds: a storage write of another fiber has landed. */
const eventually = <E, R>(condition: Effect.Effect<boolean, E, R>, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      if (yield* condition) return
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    assert.fail(`not reached: ${what}`)
  })

for (const variant of storageVariants) {
  describe.skipIf(!variant.available)(`customer kit worker leases on ${variant.name}`, () => {
    onOneStore(
      () =>
        Layer.mergeAll(
          variant.layer(),
          NodeCrypto.layer,
          HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 2_000 })
        ),
      (it) => {
        // One store and one test clock for both tests (PGlite takes seconds to boot). The delivery
        // scenarios run first and leave no execution due; the execution scenarios run at times
        // from `late`, each leaving nothing due for the next.
        it.scoped("deliveries: done and completed in one write, Retry-After followed, stuck records repaired", () =>
          Effect.gen(function* () {
            // a delivered completion finishes its item and moves the record to completed together
            yield* Effect.scoped(
              Effect.gen(function* () {
                const service = yield* Effect.acquireRelease(
                  Effect.promise(() => startService()),
                  (s) => Effect.promise(s.close)
                )
                const { body, keys } = yield* claim
                const { executor } = host()
                const worker = yield* Effect.provideService(
                  Worker.make(settings(keys, service.url)),
                  Worker.ActionExecutor,
                  executor
                )
                assert.strictEqual(yield* worker.executeDue, 1)
                assert.strictEqual(yield* worker.deliverDue, 1)
                assert.strictEqual(service.received.length, 1)
                const item = yield* completionItemOf(body.actionRequestId)
                assert.isNotNull(item.completedAt)
                assert.strictEqual(yield* stateOf(body.actionRequestId), Worker.kitStates.completed)
                const history = yield* (yield* ActionLedger).history(body.actionRequestId)
                assert.strictEqual(history.at(-1)!.trigger, "customer.completion_delivered")
                assert.strictEqual(history.at(-1)!.at, item.completedAt)
              })
            )
            // a 503 with Retry-After is retried after the service's hint, not after the backoff so far
            yield* Effect.scoped(
              Effect.gen(function* () {
                const service = yield* Effect.acquireRelease(
                  Effect.promise(() => startService()),
                  (s) => Effect.promise(s.close)
                )
                yield* TestClock.setTime(1_000_000)
                const { body, keys } = yield* claim
                const { executor } = host()
                const worker = yield* Effect.provideService(
                  Worker.make(settings(keys, service.url)),
                  Worker.ActionExecutor,
                  executor
                )
                assert.strictEqual(yield* worker.executeDue, 1)
                // Failures without a hint back off exponentially: 4 attempts, the next ceiling 16 s.
                service.state.status = 503
                for (let i = 0; i < 4; i++) {
                  yield* TestClock.adjust("10 minutes")
                  assert.strictEqual(yield* worker.deliverDue, 1)
                }
                // Then the service says when it is back.
                service.state.headers = { "retry-after": "1" }
                yield* TestClock.adjust("10 minutes")
                assert.strictEqual(yield* worker.deliverDue, 1)
                const now = yield* TestClock.currentTimeMillis
                const item = yield* completionItemOf(body.actionRequestId)
                assert.strictEqual(item.attempts, 5)
                assert.strictEqual(item.lastError, "status_503")
                const waited = item.nextAttemptAt - now
                assert.isAtLeast(waited, hintedDelay(backoff, 1_000, 0))
                assert.isAtMost(waited, hintedDelay(backoff, 1_000, 0.999999))
                assert.isBelow(waited, backoffDelay(backoff, 4, 0), "shorter than the backoff's next wait")
                // Due after the hint, and delivered once the service answers 2xx.
                service.state.status = 200
                yield* TestClock.adjust(waited)
                assert.strictEqual(yield* worker.deliverDue, 1)
                assert.strictEqual(yield* stateOf(body.actionRequestId), Worker.kitStates.completed)
              })
            )
            // a record left completing after its completion was delivered is closed; one still delivering is not
            yield* Effect.scoped(
              Effect.gen(function* () {
                const stuck = yield* claim
                const open = yield* claim
                const { executor } = host()
                const worker = yield* Effect.provideService(
                  Worker.make(settings(stuck.keys)),
                  Worker.ActionExecutor,
                  executor
                )
                assert.strictEqual(yield* worker.executeDue, 2)
                // An older kit marked the delivery done and was killed before moving the record.
                const outbox = yield* Outbox
                const leased = yield* outbox.lease({
                  owner: "old-kit",
                  now: yield* TestClock.currentTimeMillis,
                  leaseMillis: lease,
                  limit: 10,
                  kinds: [Worker.completeOutboxKind]
                })
                const stuckItem = leased.find(
                  (item) => (item.payload as { actionRequestId: string }).actionRequestId === stuck.body.actionRequestId
                )!
                assert.isTrue(
                  yield* outbox.complete({
                    id: stuckItem.id,
                    owner: "old-kit",
                    now: yield* TestClock.currentTimeMillis
                  })
                )
                assert.strictEqual(yield* stateOf(stuck.body.actionRequestId), Worker.kitStates.completing)
                assert.strictEqual(yield* worker.recoverDelivered, 1)
                assert.strictEqual(yield* stateOf(stuck.body.actionRequestId), Worker.kitStates.completed)
                assert.strictEqual(yield* stateOf(open.body.actionRequestId), Worker.kitStates.completing)
                assert.strictEqual(yield* worker.recoverDelivered, 0)
              })
            )
          })
        )

        it.scoped(
          "executions: an expired lease is taken over, a live one is not, the heartbeat extends it, a stopped worker gives it back",
          () =>
            Effect.gen(function* () {
              // an expired lease is taken over, a live one is not
              yield* Effect.scoped(
                Effect.gen(function* () {
                  yield* TestClock.setTime(late)
                  const { body, keys } = yield* claim
                  const outbox = yield* Outbox
                  // A worker leased it and died (it never ran, never renewed).
                  const taken = yield* outbox.lease({
                    owner: "customer-worker:dead",
                    now: late,
                    leaseMillis: lease,
                    limit: 10,
                    kinds: [Handler.executeOutboxKind]
                  })
                  assert.strictEqual(taken.length, 1)
                  const { calls, executor } = host()
                  const next = yield* Effect.provideService(
                    Worker.make(settings(keys)),
                    Worker.ActionExecutor,
                    executor
                  )
                  yield* TestClock.setTime(late + lease - 1)
                  assert.strictEqual(yield* next.executeDue, 0, "a live lease is not taken over")
                  yield* TestClock.setTime(late + lease)
                  assert.strictEqual(yield* next.executeDue, 1, "an expired lease is taken over")
                  assert.strictEqual(calls.execute, 1)
                  assert.strictEqual(yield* stateOf(body.actionRequestId), Worker.kitStates.completing)
                })
              )
              // the heartbeat keeps a live worker's execution for as long as the host call runs
              yield* Effect.scoped(
                Effect.gen(function* () {
                  yield* TestClock.setTime(late * 2)
                  const { body, keys } = yield* claim
                  const release = yield* Deferred.make<void>()
                  const first = host(release)
                  const scope = yield* Scope.make()
                  yield* Effect.provideService(
                    Scope.extend(Worker.start({ ...settings(keys), pollMillis: 3_600_000 }), scope),
                    Worker.ActionExecutor,
                    first.executor
                  )
                  yield* Deferred.await(first.started)
                  const other = host()
                  const rival = yield* Effect.provideService(
                    Worker.make(settings(keys)),
                    Worker.ActionExecutor,
                    other.executor
                  )
                  const beat = Math.floor(lease / 3)
                  // Two leases long: each beat renews the lease to a full lease from that beat.
                  for (let i = 0; i < 6; i++) {
                    yield* TestClock.adjust(beat)
                    const now = yield* TestClock.currentTimeMillis
                    yield* eventually(
                      Effect.map(
                        executeItemOf(body.providerIdempotencyKey),
                        (item) => item.leaseExpiresAt !== null && item.leaseExpiresAt >= now + lease - beat
                      ),
                      "the heartbeat renewed the lease"
                    )
                    assert.strictEqual(yield* rival.executeDue, 0, "a renewed lease is not taken over")
                  }
                  assert.strictEqual(other.calls.execute + other.calls.lookup, 0)
                  yield* Deferred.succeed(release, undefined)
                  yield* eventually(
                    Effect.map(stateOf(body.actionRequestId), (state) => state === Worker.kitStates.completing),
                    "the first worker recorded its completion"
                  )
                  assert.strictEqual(first.calls.execute, 1)
                  yield* Scope.close(scope, Exit.void)
                })
              )
              // a worker that stops gives its execution back due at once; the next run asks lookup first
              yield* Effect.scoped(
                Effect.gen(function* () {
                  yield* TestClock.setTime(late * 3)
                  const { body, keys } = yield* claim
                  const first = host(yield* Deferred.make<void>())
                  const scope = yield* Scope.make()
                  yield* Effect.provideService(
                    Scope.extend(Worker.start(settings(keys)), scope),
                    Worker.ActionExecutor,
                    first.executor
                  )
                  yield* Deferred.await(first.started)
                  yield* Scope.close(scope, Exit.void)
                  const item = yield* executeItemOf(body.providerIdempotencyKey)
                  assert.deepStrictEqual([item.leaseOwner, item.attempts, item.lastError], [null, 1, "worker_stopped"])
                  const next = host()
                  const worker = yield* Effect.provideService(
                    Worker.make(settings(keys)),
                    Worker.ActionExecutor,
                    next.executor
                  )
                  // No clock moved: the lease was given back, not waited out.
                  assert.strictEqual(yield* worker.executeDue, 1)
                  assert.deepStrictEqual(next.calls, { execute: 1, lookup: 1 })
                })
              )
            })
        )
      }
    )
  })
}
