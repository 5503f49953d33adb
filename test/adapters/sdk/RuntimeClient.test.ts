/**
 * The runtime SDK's status client against a scripted loopback server that answers as the runtime
 * status route does (`ETag`, `Retry-After` until final, 304 for a current `If-None-Match`): what the
 * client sends on each read, that it waits the hint before the next read (on the `TestClock`), that
 * it stops once the hint is gone, and how a refusal and a failure that passes end a read. The route
 * itself is pinned against the real server in test/adapters/http/routes/RuntimeStatus.test.ts.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { make, type RuntimeActionStatus, type RuntimeRefused } from "../../../adapters/sdk/RuntimeClient.ts"

const id = "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8"

interface Seen {
  readonly ifNoneMatch: string | undefined
  readonly prefer: string | undefined
  readonly authorization: string | undefined
}

interface Scripted {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: unknown
}

/** A loopback server answering the scripted replies in order (the last one again after the end). */
const scripted = (replies: ReadonlyArray<Scripted>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const seen: Array<Seen> = []
      const server = createServer((req: IncomingMessage, res: ServerResponse) => {
        const reply = replies[Math.min(seen.length, replies.length - 1)]!
        seen.push({
          ifNoneMatch: req.headers["if-none-match"],
          prefer: req.headers["prefer"] as string | undefined,
          authorization: req.headers["authorization"]
        })
        const body = reply.body === undefined ? "" : JSON.stringify(reply.body)
        res
          .writeHead(reply.status, {
            ...(body === ""
              ? {}
              : { "content-type": reply.status >= 400 ? "application/problem+json" : "application/json" }),
            ...reply.headers
          })
          .end(body)
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, seen }
    }),
    ({ server }) =>
      Effect.promise(async () => {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      })
  )

const status = (state: string): RuntimeActionStatus => ({
  actionRequestId: id,
  state,
  mayAdvance: state === "verified"
})

/** Real time passes (the client's HTTP is real; its sleeps are on the TestClock). */
const settle = (millis = 150) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

const until = (condition: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200 && !condition(); i++) yield* settle(10)
    assert.isTrue(condition(), "the client did not make the expected request")
  })

describe("RuntimeClient", () => {
  it.scoped("polls conditionally, waits each hint, and stops once the service sends none", () =>
    Effect.gen(function* () {
      const server = yield* scripted([
        { status: 200, headers: { etag: `"2"`, "retry-after": "5" }, body: status("accepted") },
        { status: 304, headers: { etag: `"2"`, "retry-after": "5" } },
        { status: 200, headers: { etag: `"4"` }, body: status("verified") }
      ])
      const changes: Array<string> = []
      const client = make({ serviceUrl: server.url, runtimeToken: "acc_rts_token", maxDelayMillis: 60_000 })
      const polling = yield* Effect.fork(client.untilFinal(id, (s) => changes.push(s.state)))
      yield* until(() => server.seen.length === 1)
      // Less than the hint: no second read.
      yield* TestClock.adjust("4 seconds")
      yield* settle()
      assert.strictEqual(server.seen.length, 1)
      yield* TestClock.adjust("4 seconds")
      yield* until(() => server.seen.length === 2)
      yield* TestClock.adjust("8 seconds")
      const final = yield* Fiber.join(polling)
      assert.deepStrictEqual(final, status("verified"))
      assert.deepStrictEqual(changes, ["accepted", "verified"], "a 304 is no change")
      assert.deepStrictEqual(
        server.seen.map((s) => s.ifNoneMatch),
        [undefined, `"2"`, `"2"`]
      )
      assert.isTrue(server.seen.every((s) => s.authorization === "Bearer acc_rts_token"))
      assert.isTrue(
        server.seen.every((s) => s.prefer === undefined),
        "no long poll unless asked"
      )
    })
  )

  it.scoped("with waitSeconds, every conditional read asks for a long poll", () =>
    Effect.gen(function* () {
      const server = yield* scripted([
        { status: 200, headers: { etag: `"2"`, "retry-after": "1" }, body: status("accepted") },
        { status: 200, headers: { etag: `"3"` }, body: status("failed") }
      ])
      const client = make({ serviceUrl: server.url, runtimeToken: "acc_rts_token", waitSeconds: 20 })
      const first = yield* client.read(id)
      const second = yield* client.read(id, first)
      assert.deepStrictEqual(
        server.seen.map((s) => [s.ifNoneMatch, s.prefer]),
        [
          [undefined, undefined],
          [`"2"`, "wait=20"]
        ]
      )
      assert.strictEqual(first.pollAfterMillis, 1000)
      assert.isUndefined(second.pollAfterMillis)
      assert.isTrue(second.changed)
      assert.strictEqual(second.status.state, "failed")
    })
  )

  it.scoped("a 304 answers the previous status again, unchanged", () =>
    Effect.gen(function* () {
      const server = yield* scripted([
        { status: 200, headers: { etag: `"2"`, "retry-after": "3" }, body: status("pending") },
        { status: 304, headers: { etag: `"2"`, "retry-after": "7" } }
      ])
      const client = make({ serviceUrl: server.url, runtimeToken: "acc_rts_token" })
      const first = yield* client.read(id)
      const again = yield* client.read(id, first)
      assert.isFalse(again.changed)
      assert.deepStrictEqual(again.status, first.status)
      assert.strictEqual(again.etag, `"2"`)
      assert.strictEqual(again.pollAfterMillis, 7000)
    })
  )

  it.scoped("a refusal ends the read with its problem code, without a retry", () =>
    Effect.gen(function* () {
      const server = yield* scripted([
        { status: 404, body: { status: 404, code: "not_found", title: "Not Found", detail: "no such action" } }
      ])
      const client = make({ serviceUrl: server.url, runtimeToken: "acc_rts_token" })
      const refused = (yield* Effect.flip(client.read(id))) as RuntimeRefused
      assert.strictEqual(refused._tag, "RuntimeRefused")
      assert.strictEqual(refused.code, "not_found")
      assert.strictEqual(server.seen.length, 1)
      assert.notInclude(JSON.stringify(refused), "acc_rts_token")
    })
  )

  it.scoped("a failure that passes (503) is retried with backoff", () =>
    Effect.gen(function* () {
      const server = yield* scripted([
        { status: 503, body: { status: 503, code: "storage_unavailable", title: "Unavailable", detail: "later" } },
        { status: 200, headers: { etag: `"1"` }, body: status("verified") }
      ])
      const client = make({ serviceUrl: server.url, runtimeToken: "acc_rts_token", baseDelayMillis: 100 })
      const reading = yield* Effect.fork(client.read(id))
      yield* until(() => server.seen.length === 1)
      yield* TestClock.adjust("1 second")
      const read = yield* Fiber.join(reading)
      assert.strictEqual(read.status.state, "verified")
      assert.strictEqual(server.seen.length, 2)
    })
  )
})
