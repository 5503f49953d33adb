/**
 * The kit's execution and completion delivery over real loopback HTTP: the kit served by
 * `node:http`, a loopback "service" that receives completions and misbehaves on purpose, and real
 * storage (memory, PGlite, PostgreSQL when DATABASE_URL is set).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { type HostExecutor, makeCustomerKit } from "../../../adapters/customer/Kit.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { ConnectorTransport } from "../../../core/ports/ConnectorTransport.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import * as Handler from "../../../core/customer/Handler.ts"
import * as Worker from "../../../core/customer/Worker.ts"
import type * as NonceStore from "../../../core/ports/NonceStore.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import { importSigningKeys } from "../../../core/protocol/Signing.ts"
import { backoffDelay } from "../../../core/protocol/Backoff.ts"
import { warnIfSkipped } from "../../support/postgres.ts"
import { storageVariants } from "../../support/storage.ts"
import {
  executionBody,
  executionDelivery,
  type Received,
  secrets,
  startService,
  storageLayer,
  succeeded,
  until,
  verifyCompletion as verifyReceived,
  workspaceId,
  wrongSecrets
} from "../../support/customer.ts"

const client = Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer)
const runClient = <A, E>(effect: Effect.Effect<A, E, Crypto | NonceStore.NonceStore>) =>
  Effect.runPromise(Effect.provide(effect, client))

const countingExecutor = (lookupAnswer?: (key: string) => Worker.ExecutionResult | undefined) => {
  const calls = { execute: 0, lookup: 0 }
  const executor: HostExecutor = {
    execute: async (request) => {
      calls.execute++
      return succeeded(request.actionRequestId)
    },
    lookup: async (key) => {
      calls.lookup++
      return lookupAnswer?.(key)
    }
  }
  return { calls, executor }
}

/** The kit behind a real `node:http` server, with fast retries. */
const startKit = async (
  storage: Layer.Layer<NonceStore.NonceStore | ActionLedger | Outbox, unknown>,
  serviceUrl: string,
  executor: HostExecutor,
  worker: { readonly executeTimeoutMillis?: number } = {}
) => {
  const kit = await makeCustomerKit({
    workspaceId,
    secrets,
    serviceUrl,
    executor,
    storage,
    allowInsecureServiceUrl: true,
    worker: { pollMillis: 50, backoff: { baseMillis: 20, capMillis: 200 }, ...worker }
  })
  const server = createServer(kit.nodeHandler)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/connector`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      await kit.dispose()
    }
  }
}

/** Signs and POSTs one execution delivery (fresh nonce) to the kit; the HTTP status. */
const deliver = async (kitUrl: string, body: Record<string, unknown>) => {
  const delivery = await runClient(Effect.flatMap(importSigningKeys(secrets), (keys) => executionDelivery(keys, body)))
  const response = await fetch(kitUrl, { method: "POST", headers: delivery.headers, body: delivery.body })
  await response.arrayBuffer()
  return response.status
}

const newBody = () => runClient(executionBody(globalThis.crypto.randomUUID()))

/** A quiet period of several poll intervals and backoff caps, to see that nothing more arrives. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 600))

const verifyCompletion = (received: Received, withSecrets = secrets) => runClient(verifyReceived(received, withSecrets))

const decoder = new TextDecoder()

for (const variant of storageVariants) {
  describe.skipIf(!variant.available)(`customer kit worker on ${variant.name}`, () => {
    it("an accepted execution runs once and its completion arrives signed with the completion secret", async () => {
      const service = await startService()
      const { calls, executor } = countingExecutor()
      const kit = await startKit(variant.layer(), service.url, executor)
      try {
        const body = await newBody()
        assert.strictEqual(await deliver(kit.url, body), 202)
        await until(() => service.received.length >= 1, "the completion")
        await settle()
        assert.strictEqual(calls.execute, 1)
        assert.strictEqual(calls.lookup, 0)
        assert.strictEqual(service.received.length, 1)
        const completion = await verifyCompletion(service.received[0]!)
        assert.deepStrictEqual(
          { ...completion, completionId: "", completedAt: "" },
          {
            type: "service.customer_action.completion",
            protocolVersion: 1,
            workspaceId,
            actionRequestId: body.actionRequestId,
            providerIdempotencyKey: body.providerIdempotencyKey,
            providerReference: "trial_ext_" + body.actionRequestId.slice(0, 8),
            completionId: "",
            completedAt: "",
            outcome: "succeeded",
            evidence: {
              entitlement: "trial",
              reasonCode: "trial_extended",
              source: "authenticated_completion",
              // The host's evidence unchanged: the kit adds no `accountId` (the spec's shape is enough).
              extensionDays: 14
            }
          }
        )
        // Signed with the completion secret, not the action signing secret.
        const otherCompletion = { actionSigning: secrets.actionSigning, completion: wrongSecrets.completion }
        const refused = await verifyCompletion(service.received[0]!, otherCompletion).then(
          () => "accepted",
          (e) => String(e)
        )
        assert.include(refused, "InvalidSignature")
        // A retry of the execution after completion: the original ack, no second run or completion.
        assert.strictEqual(await deliver(kit.url, body), 202)
        await settle()
        assert.strictEqual(calls.execute, 1)
        assert.strictEqual(service.received.length, 1)
      } finally {
        await kit.close()
        await service.close()
      }
    }, 60_000)

    it("redelivers the same bytes and completionId with fresh nonces through 500s and refused connections, until a 2xx, then never again", async () => {
      const service = await startService()
      service.state.status = 500
      const { calls, executor } = countingExecutor()
      const kit = await startKit(variant.layer(), service.url, executor)
      try {
        const body = await newBody()
        assert.strictEqual(await deliver(kit.url, body), 202)
        await until(() => service.received.length >= 3, "three refused deliveries")
        await service.down()
        const beforeOutage = service.received.length
        await settle()
        assert.strictEqual(service.received.length, beforeOutage)
        await service.up()
        await until(() => service.received.length >= beforeOutage + 2, "deliveries after the outage")
        service.state.status = 202
        const accepted = await new Promise<number>((resolve, reject) => {
          const at = service.received.length
          until(() => service.received.length > at, "a delivery answered 2xx").then(
            () => resolve(service.received.length),
            reject
          )
        })
        await settle()
        assert.strictEqual(service.received.length, accepted, "nothing is delivered after a 2xx")
        assert.strictEqual(calls.execute, 1)
        const first = service.received[0]!
        const nonces = new Set<string>()
        for (const r of service.received) {
          assert.deepStrictEqual(r.body, first.body)
          nonces.add(String(r.headers["x-service-customer-action-nonce"]))
          await verifyCompletion(r)
        }
        assert.strictEqual(nonces.size, service.received.length, "every attempt has a fresh nonce")
        assert.strictEqual(JSON.parse(decoder.decode(first.body)).actionRequestId, body.actionRequestId)
      } finally {
        await kit.close()
        await service.close()
      }
    }, 60_000)

    it("an execute that never returns holds one slot: an action claimed after it still runs and completes", async () => {
      const service = await startService()
      const hung = await newBody()
      const executed: Array<string> = []
      const executor: HostExecutor = {
        execute: (request) => {
          executed.push(request.actionRequestId)
          return request.actionRequestId === hung.actionRequestId
            ? new Promise<never>(() => {})
            : Promise.resolve(succeeded(request.actionRequestId))
        },
        lookup: async () => undefined
      }
      // The default time limit (60 s) is far beyond this test: only the free slots let it pass.
      const kit = await startKit(variant.layer(), service.url, executor)
      try {
        assert.strictEqual(await deliver(kit.url, hung), 202)
        await until(() => executed.includes(hung.actionRequestId), "the hung execute to start")
        const normal = await newBody()
        assert.strictEqual(await deliver(kit.url, normal), 202)
        await until(() => service.received.length >= 1, "the later action's completion")
        const completion = await verifyCompletion(service.received[0]!)
        assert.strictEqual(completion.actionRequestId, normal.actionRequestId)
        assert.strictEqual(completion.outcome, "succeeded")
        assert.deepStrictEqual(executed, [hung.actionRequestId, normal.actionRequestId])
      } finally {
        await kit.close()
        await service.close()
      }
    }, 60_000)

    it("an execute past its time limit is ambiguous: retried through lookup, which finds the run; never executed twice", async () => {
      const service = await startService()
      const calls = { execute: 0, lookup: 0 }
      const found: Worker.ExecutionResult = { ...succeeded("00000000"), providerReference: "found_by_lookup" }
      const executor: HostExecutor = {
        execute: () => (calls.execute++, new Promise<never>(() => {})),
        lookup: async () => (calls.lookup++, found)
      }
      const kit = await startKit(variant.layer(), service.url, executor, { executeTimeoutMillis: 100 })
      try {
        const body = await newBody()
        assert.strictEqual(await deliver(kit.url, body), 202)
        await until(() => service.received.length >= 1, "the completion after lookup")
        await settle()
        assert.deepStrictEqual(calls, { execute: 1, lookup: 1 })
        assert.strictEqual(service.received.length, 1)
        const completion = await verifyCompletion(service.received[0]!)
        assert.strictEqual(completion.actionRequestId, body.actionRequestId)
        assert.strictEqual(completion.providerReference, "found_by_lookup")
      } finally {
        await kit.close()
        await service.close()
      }
    }, 60_000)

    it("100 concurrent identical execution requests: one execute, one completion", async () => {
      const service = await startService()
      const { calls, executor } = countingExecutor()
      const kit = await startKit(variant.layer(), service.url, executor)
      try {
        const body = await newBody()
        const statuses = await Promise.all(Array.from({ length: 100 }, () => deliver(kit.url, body)))
        assert.deepStrictEqual(new Set(statuses), new Set([202]))
        await until(() => service.received.length >= 1, "the completion")
        await settle()
        assert.strictEqual(calls.execute, 1)
        assert.strictEqual(service.received.length, 1)
      } finally {
        await kit.close()
        await service.close()
      }
    }, 120_000)
  })
}
warnIfSkipped("customer kit worker")

/** The worker alone on memory storage; no completion is delivered here. */
const unusedTransport = Layer.succeed(ConnectorTransport, { post: () => Effect.dieMessage("no delivery in this test") })

const workerSetup = (executor: Worker.ActionExecutorService) =>
  Effect.gen(function* () {
    const keys = yield* importSigningKeys(secrets)
    const handler = yield* Handler.makeCustomerHandler({ workspaceId, keys })
    const worker = yield* Worker.make({ workspaceId, keys, serviceUrl: "https://service.example" })
    const body = yield* executionBody(globalThis.crypto.randomUUID())
    const response = yield* handler.handle(yield* executionDelivery(keys, body))
    assert.strictEqual(response.status, 202)
    return { worker, body }
  }).pipe(Effect.provide(Layer.mergeAll(unusedTransport, Layer.succeed(Worker.ActionExecutor, executor))))

/** Simulates a crash after the `executing` marker was written and before the completion commit. */
const markExecuting = (actionRequestId: string) =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    const record = Option.getOrThrow(yield* ledger.get(actionRequestId))
    const moved = yield* ledger.transition({
      actionRequestId,
      expectedVersion: record.version,
      toState: Worker.kitStates.executing,
      at: 0,
      history: { at: 0, trigger: "customer.execution_started", detail: {} }
    })
    assert.strictEqual(moved._tag, "Applied")
  })

const probeExecutor = (looked: Option.Option<Worker.ExecutionResult>) => {
  const calls = { execute: 0, lookup: 0 }
  const executor: Worker.ActionExecutorService = {
    execute: (request) => Effect.sync(() => (calls.execute++, succeeded(request.actionRequestId))),
    lookup: () => Effect.sync(() => (calls.lookup++, looked))
  }
  return { calls, executor }
}

const completionItem = (actionRequestId: string) =>
  Effect.flatMap(Outbox, (outbox) => outbox.findByKey(Worker.completeOutboxKind, actionRequestId))

const executeItem = (providerIdempotencyKey: string) =>
  Effect.map(
    Effect.flatMap(Outbox, (outbox) => outbox.findByKey(Handler.executeOutboxKind, providerIdempotencyKey)),
    Option.getOrThrow
  )

describe("customer kit worker after a possible earlier run", () => {
  it.effect("an item whose record says executing asks lookup, and does not execute when it ran", () =>
    Effect.gen(function* () {
      const found: Worker.ExecutionResult = { ...succeeded("00000000"), outcome: "failed" }
      const { calls, executor } = probeExecutor(Option.some(found))
      const { body, worker } = yield* workerSetup(executor)
      yield* markExecuting(body.actionRequestId)
      assert.strictEqual(yield* worker.executeDue, 1)
      assert.deepStrictEqual(calls, { execute: 0, lookup: 1 })
      const item = Option.getOrThrow(yield* completionItem(body.actionRequestId))
      const stored = JSON.parse((item.payload as { body: string }).body)
      assert.strictEqual(stored.outcome, "failed")
      // The spec's evidence, as the host reported it: the kit adds no `accountId` of its own.
      assert.deepStrictEqual(stored.evidence, found.evidence)
      assert.isUndefined(stored.evidence.accountId)
      const ledger = yield* ActionLedger
      assert.strictEqual(Option.getOrThrow(yield* ledger.get(body.actionRequestId)).state, Worker.kitStates.completing)
      assert.strictEqual(yield* worker.executeDue, 0)
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("lookup saying it never ran lets execute run once", () =>
    Effect.gen(function* () {
      const { calls, executor } = probeExecutor(Option.none())
      const { body, worker } = yield* workerSetup(executor)
      yield* markExecuting(body.actionRequestId)
      assert.strictEqual(yield* worker.executeDue, 1)
      assert.deepStrictEqual(calls, { execute: 1, lookup: 1 })
      assert.isTrue(Option.isSome(yield* completionItem(body.actionRequestId)))
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("a first run does not ask lookup; an executor defect is retried through lookup, which finds the run", () =>
    Effect.gen(function* () {
      const calls = { execute: 0, lookup: 0 }
      const found: Worker.ExecutionResult = { ...succeeded("00000000"), providerReference: "found_by_lookup" }
      const executor: Worker.ActionExecutorService = {
        execute: () => Effect.suspend(() => (calls.execute++, Effect.dieMessage("provider timed out"))),
        lookup: () => Effect.sync(() => (calls.lookup++, Option.some(found)))
      }
      const { body, worker } = yield* workerSetup(executor)
      assert.strictEqual(yield* worker.executeDue, 1)
      assert.deepStrictEqual(calls, { execute: 1, lookup: 0 })
      assert.isTrue(Option.isNone(yield* completionItem(body.actionRequestId)))
      const item = yield* executeItem(body.providerIdempotencyKey)
      assert.strictEqual(item.attempts, 1)
      assert.strictEqual(item.lastError, "executor_defect")
      // Not due before its backoff; due after it, and then retried through lookup.
      assert.strictEqual(yield* worker.executeDue, 0)
      yield* TestClock.adjust("10 minutes")
      assert.strictEqual(yield* worker.executeDue, 1)
      assert.deepStrictEqual(calls, { execute: 1, lookup: 1 })
      const stored = JSON.parse(
        (Option.getOrThrow(yield* completionItem(body.actionRequestId)).payload as { body: string }).body
      )
      assert.strictEqual(stored.providerReference, "found_by_lookup")
      const history = yield* (yield* ActionLedger).history(body.actionRequestId)
      assert.strictEqual(history.at(-1)!.trigger, "customer.completion_recorded_after_lookup")
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("an execute that never returns is abandoned at the default time limit and retried through lookup", () =>
    Effect.gen(function* () {
      const calls = { execute: 0, lookup: 0 }
      const started = yield* Deferred.make<void>()
      const executor: Worker.ActionExecutorService = {
        execute: () =>
          Effect.zipRight(
            Effect.sync(() => calls.execute++),
            Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
          ),
        lookup: (key) => Effect.sync(() => (calls.lookup++, Option.some(succeeded(key.slice(4)))))
      }
      const { body, worker } = yield* workerSetup(executor)
      const first = yield* Effect.fork(worker.executeDue)
      yield* Deferred.await(started)
      yield* TestClock.adjust(Worker.defaultExecuteTimeoutMillis - 1)
      assert.isTrue(Option.isNone(yield* Fiber.poll(first)), "still within the time limit")
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* Fiber.join(first), 1)
      const item = yield* executeItem(body.providerIdempotencyKey)
      assert.strictEqual(item.attempts, 1)
      assert.strictEqual(item.lastError, "execute_timeout")
      yield* TestClock.adjust("10 minutes")
      assert.strictEqual(yield* worker.executeDue, 1)
      assert.deepStrictEqual(calls, { execute: 1, lookup: 1 })
      assert.isTrue(Option.isSome(yield* completionItem(body.actionRequestId)))
    }).pipe(Effect.provide(storageLayer()))
  )

  it("backoff doubles from the base to the cap, with the upper half random", () => {
    const backoff = { baseMillis: 1_000, capMillis: 300_000 }
    assert.deepStrictEqual(
      [0, 1, 2, 3].map((n) => backoffDelay(backoff, n, 0)),
      [500, 1_000, 2_000, 4_000]
    )
    assert.strictEqual(backoffDelay(backoff, 0, 0.999999), 999)
    assert.strictEqual(backoffDelay(backoff, 30, 0), 150_000)
    assert.strictEqual(backoffDelay(backoff, 1_000, 0.999999), 299_999)
  })
})
