/**
 * The connector metrics recorded at the port boundary (`adapters/telemetry/Instrumented.ts`), on the
 * memory ledger and outbox and a real loopback HTTP peer: an applied `delivery_ambiguous` transition
 * counts an unknown outcome, an applied completion counts under the resulting state, a stale one
 * counts nothing, a reschedule counts a retry, and an outbound call is in flight while it waits.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Instrumented from "../../../adapters/telemetry/Instrumented.ts"
import * as HttpTransport from "../../../adapters/transport/HttpTransport.ts"
import * as ActionLedger from "../../../core/ports/ActionLedger.ts"
import * as MemoryActionLedger from "../../../adapters/memory/ActionLedger.ts"
import { ConnectorTransport } from "../../../core/ports/ConnectorTransport.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import * as Metrics from "../../../core/telemetry/Metrics.ts"

const value = (metric: Metric.Metric<any, any, any>) =>
  Effect.map(Metric.value(metric), (state: any) => Number(state.count ?? state.value))

const record = (id: string) => ({
  actionRequestId: id,
  workspaceId: "ws",
  accountId: "acct",
  connectionId: "conn",
  revision: 1,
  providerIdempotencyKey: `idem-${id}`,
  state: "dispatched",
  request: {},
  acknowledgement: null,
  sealedContinuation: null,
  createdAt: 0
})

const ports = Effect.map(
  Layer.build(Layer.map(MemoryActionLedger.layerMemory, Instrumented.instrument)),
  (context) => ({
    ledger: Context.get(context, ActionLedger.ActionLedger),
    outbox: Context.get(context, Outbox)
  })
)

describe("Instrumented ports", () => {
  it.scoped("ledger: unknown outcomes and completions by state, only when applied", () =>
    Effect.gen(function* () {
      const { ledger } = yield* ports
      const completed = Metric.tagged(Metrics.completions, "state", "completed")
      const [unknown0, completed0] = [yield* value(Metrics.dispatchUnknownOutcomes), yield* value(completed)]
      yield* ledger.create({ record: record("a1"), history: { at: 0, trigger: "intake", detail: {} } })
      const ambiguous = yield* ledger.transition({
        actionRequestId: "a1",
        expectedVersion: 1,
        toState: "unknown",
        at: 1,
        history: { at: 1, trigger: "delivery_ambiguous", detail: {} }
      })
      assert.strictEqual(ambiguous._tag, "Applied")
      assert.strictEqual((yield* value(Metrics.dispatchUnknownOutcomes)) - unknown0, 1)
      // Stale (wrong version): nothing written, nothing counted.
      yield* ledger.transition({
        actionRequestId: "a1",
        expectedVersion: 1,
        toState: "completed",
        at: 2,
        history: { at: 2, trigger: "completion", detail: {} }
      })
      assert.strictEqual((yield* value(completed)) - completed0, 0)
      yield* ledger.transition({
        actionRequestId: "a1",
        expectedVersion: 2,
        toState: "completed",
        at: 2,
        history: { at: 2, trigger: "completion", detail: {} }
      })
      assert.strictEqual((yield* value(completed)) - completed0, 1)
      assert.strictEqual((yield* value(Metrics.dispatchUnknownOutcomes)) - unknown0, 1)
    })
  )

  it.scoped("outbox: a reschedule that holds the lease counts a retry; one that lost it does not", () =>
    Effect.gen(function* () {
      const { outbox } = yield* ports
      const retries0 = yield* value(Metrics.dispatchRetries)
      yield* outbox.enqueue({
        id: "o1",
        kind: "execution",
        dedupeKey: "d1",
        payload: {},
        nextAttemptAt: 0,
        createdAt: 0
      })
      const [leased] = yield* outbox.lease({ owner: "me", now: 0, leaseMillis: 60_000, limit: 1 })
      assert.strictEqual(leased?.id, "o1")
      assert.isFalse(yield* outbox.reschedule({ id: "o1", owner: "someone-else", nextAttemptAt: 10, error: "x" }))
      assert.strictEqual((yield* value(Metrics.dispatchRetries)) - retries0, 0)
      assert.isTrue(yield* outbox.reschedule({ id: "o1", owner: "me", nextAttemptAt: 10, error: "timeout" }))
      assert.strictEqual((yield* value(Metrics.dispatchRetries)) - retries0, 1)
    })
  )

  it.scoped("transport: a call is in flight while its peer has not answered", () =>
    Effect.gen(function* () {
      const answer = yield* Deferred.make<void>()
      const arrived = yield* Deferred.make<void>()
      const server = yield* Effect.acquireRelease(
        Effect.async<Server>((resume) => {
          const peer = createServer((request, response) => {
            request.resume()
            Deferred.unsafeDone(arrived, Effect.void)
            Effect.runPromise(Deferred.await(answer)).then(() =>
              response.writeHead(200, { "content-type": "application/json" }).end("{}")
            )
          })
          peer.listen(0, "127.0.0.1", () => resume(Effect.succeed(peer)))
        }),
        (peer) => Effect.async<void>((resume) => void peer.close(() => resume(Effect.void)))
      )
      const port = (server.address() as AddressInfo).port
      const context = yield* Layer.build(
        Layer.map(HttpTransport.layer({ allowInsecure: true }), Instrumented.instrument)
      )
      const transport = Context.get(context, ConnectorTransport)
      const before = yield* value(Metrics.dispatchInFlight)
      const call = yield* Effect.fork(
        transport.post({ url: `http://127.0.0.1:${port}/connector`, headers: {}, body: new TextEncoder().encode("{}") })
      )
      yield* Deferred.await(arrived)
      assert.strictEqual((yield* value(Metrics.dispatchInFlight)) - before, 1)
      yield* Deferred.succeed(answer, undefined)
      yield* Fiber.join(call)
      assert.strictEqual((yield* value(Metrics.dispatchInFlight)) - before, 0)
    })
  )
})
