/**
 * Graceful shutdown in-process: closing the server's scope is what `runMain` does on SIGTERM or
 * SIGINT (it interrupts the main fiber). A request in flight at that moment still gets its answer;
 * meanwhile `/readyz` says 503 so a load balancer stops sending traffic; then the listener closes.
 * `test/runtimes.test.ts` checks the same with a real SIGTERM on Node, Bun and Deno.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Readiness from "../../core/ports/Readiness.ts"
import { adminKey, jsonHeaders, request, startServer, workspaceId } from "../support/http.ts"

const waitUntil = (condition: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => (condition() ? Effect.void : Effect.zipRight(Effect.sleep("10 millis"), waitUntil(condition))))

describe("graceful shutdown", () => {
  it.live("a slow in-flight request completes with 200 after shutdown starts; the listener then closes", () =>
    Effect.gen(function* () {
      const gate = yield* Effect.makeLatch(false)
      let checks = 0
      // The first readiness check is the slow request: it waits for the gate.
      const readiness = Layer.succeed(Readiness.Readiness, {
        check: Effect.suspend(() => (checks++ === 0 ? gate.await : Effect.void))
      })
      const scope = yield* Scope.make()
      const { url } = yield* Scope.extend(startServer({ readiness }), scope)

      const slow = fetch(`${url}/readyz`).then(async (response) => ({
        status: response.status,
        body: await response.json()
      }))
      yield* waitUntil(() => checks >= 1)

      const stopping = yield* Effect.fork(Scope.close(scope, Exit.void))
      let reply = yield* request(`${url}/readyz`)
      while (reply.status === 200) reply = yield* request(`${url}/readyz`)
      assert.strictEqual(reply.status, 503)
      assert.strictEqual(reply.json.code, "shutting_down")

      yield* Effect.sleep("100 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(stopping)), "shutdown waits for the in-flight request")
      yield* gate.open
      const completed = yield* Effect.promise(() => slow)
      assert.deepStrictEqual(completed, { status: 200, body: { status: "ready" } })

      yield* Fiber.join(stopping)
      const after = yield* Effect.promise(() =>
        fetch(`${url}/healthz`).then(
          () => "answered",
          () => "refused"
        )
      )
      assert.strictEqual(after, "refused")
    })
  )

  it.live("an ingest request in flight on the node:http fast path is answered before the server stops", () =>
    Effect.gen(function* () {
      const gate = yield* Effect.makeLatch(false)
      let blocking = false
      let lookups = 0
      const scope = yield* Scope.make()
      const { url } = yield* Scope.extend(
        startServer({
          server: "node",
          // Once armed, the next key lookup (the ingest request's) waits for the gate.
          store: (store) => ({
            ...store,
            findCached: (hash, now) => (blocking ? undefined : store.findCached(hash, now)),
            findByHash: (hash) =>
              Effect.suspend(() => {
                if (!blocking) return store.findByHash(hash)
                lookups++
                return Effect.zipRight(gate.await, store.findByHash(hash))
              })
          })
        }),
        scope
      )
      const created = yield* request(`${url}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
        method: "POST",
        headers: jsonHeaders(adminKey),
        body: JSON.stringify({ scope: "ingest" })
      })
      blocking = true
      const event = {
        event_name: "checkout_completed",
        account_id: "acct_1",
        timestamp: new Date().toISOString(),
        event_id: "c1"
      }
      const inFlight = fetch(`${url}/api/events/ingest`, {
        method: "POST",
        headers: jsonHeaders(created.json.secret),
        body: JSON.stringify(event)
      }).then((response) => response.status)
      yield* waitUntil(() => lookups >= 1)

      const stopping = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* Effect.sleep("100 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(stopping)), "shutdown waits for the in-flight ingest request")
      yield* gate.open
      assert.strictEqual(yield* Effect.promise(() => inFlight), 202)
      yield* Fiber.join(stopping)
    })
  )
})
