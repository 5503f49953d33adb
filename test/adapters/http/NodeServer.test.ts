import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { connect, type Socket } from "node:net"
import * as Drain from "../../../adapters/http/Drain.ts"
import { FastRoutes } from "../../../adapters/http/NodeIngest.ts"
import * as NodeServer from "../../../adapters/http/NodeServer.ts"
import { fixtureTrialRef } from "../../support/deliveries.ts"
import { adminKey, jsonHeaders, request, startServer, workspaceId } from "../../support/http.ts"

// The fast route answers `/fast` itself; everything else goes to the app once it is served.
const fast = Layer.succeed(FastRoutes, (request, response) => {
  if (request.url !== "/fast") return false
  response.writeHead(200, { "content-type": "text/plain" }).end("fast")
  return true
})

const withDrain = Layer.merge(fast, Drain.layer)

/** A raw client socket: `send` writes, `text()` is all it has read, `closed` resolves when it ends. */
const rawClient = (port: number) =>
  Effect.acquireRelease(
    Effect.async<{ socket: Socket; text: () => string; closed: Promise<void> }>((resume) => {
      const socket = connect(port, "127.0.0.1")
      let received = ""
      socket.setEncoding("utf8").on("data", (chunk: string) => {
        received += chunk
      })
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()))
      socket.once("error", () => undefined)
      socket.once("connect", () => resume(Effect.succeed({ socket, text: () => received, closed })))
    }),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )

/** The server of `layer` with `app` served, and its port. */
const serving = (app: HttpApp.Default, limits: Partial<NodeServer.ConnectionLimits> = {}) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      Layer.provideMerge(NodeServer.layerServer({ port: 0, host: "127.0.0.1" }, limits), withDrain)
    )
    const server = Context.get(context, HttpServer.HttpServer)
    yield* server.serve(app)
    return { port: (server.address as HttpServer.TcpAddress).port, drain: Context.get(context, Drain.Drain) }
  })

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) })
    return { status: response.status, headers: response.headers, body: await response.text() }
  })

describe("NodeServer.layerServer", () => {
  it.scoped(
    "answers 503 not_serving (a problem, retry-after: 1) before the app is served and after it stops; the fast routes all along; once stopped, every answer closes its connection",
    () =>
      Effect.gen(function* () {
        const context = yield* Layer.build(
          Layer.provide(NodeServer.layerServer({ port: 0, host: "127.0.0.1" }), withDrain)
        )
        const server = Context.get(context, HttpServer.HttpServer)
        assert.strictEqual(server.address._tag, "TcpAddress")
        const url = `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}`

        // Listening, not yet serving: answered at once, never left hanging.
        const before = yield* get(`${url}/readyz`)
        assert.strictEqual(before.status, 503)
        assert.strictEqual(before.headers.get("content-type"), "application/problem+json")
        assert.strictEqual(before.headers.get("retry-after"), "1")
        const problem = JSON.parse(before.body)
        assert.strictEqual(problem.code, "not_serving")
        assert.strictEqual(problem.status, 503)
        assert.strictEqual((yield* get(`${url}/fast`)).body, "fast")

        // Served: the app answers.
        const serving = yield* Scope.make()
        yield* server.serve(Effect.succeed(HttpServerResponse.text("app"))).pipe(Scope.extend(serving))
        const during = yield* get(`${url}/readyz`)
        assert.strictEqual(during.status, 200)
        assert.strictEqual(during.body, "app")
        assert.strictEqual((yield* get(`${url}/fast`)).body, "fast")

        assert.strictEqual(during.headers.get("connection"), "keep-alive")

        // No longer served (the server still listens, about to close): 503 again, and every answer,
        // the fast route's too, closes its connection.
        yield* Scope.close(serving, Exit.void)
        const after = yield* get(`${url}/readyz`)
        assert.strictEqual(after.status, 503)
        assert.strictEqual(JSON.parse(after.body).code, "not_serving")
        assert.strictEqual(after.headers.get("connection"), "close")
        const fastAfter = yield* get(`${url}/fast`)
        assert.strictEqual(fastAfter.body, "fast")
        assert.strictEqual(fastAfter.headers.get("connection"), "close")
      })
  )

  it.scoped("an answer written before the body was read closes the connection, so a trickling body holds nothing", () =>
    Effect.gen(function* () {
      const { port } = yield* serving(Effect.succeed(HttpServerResponse.text("refused", { status: 401 })))
      const client = yield* rawClient(port)
      // the headers promise 1 MB; the client sends a few bytes and then nothing
      client.socket.write("PUT /catalog HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{")
      yield* Effect.promise(() => client.closed)
      assert.match(client.text(), /^HTTP\/1\.1 401/)
      assert.match(client.text(), /\r\nconnection: close\r\n/i)
    })
  )

  it.scoped("an answer after the whole body keeps the connection for the next request", () =>
    Effect.gen(function* () {
      const { port } = yield* serving(
        Effect.map(
          Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => request.text),
          (body) => HttpServerResponse.text(`read ${body.length} bytes`)
        ).pipe(Effect.orDie)
      )
      const first = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/x`, { method: "POST", body: "{}" }).then((r) => r.headers.get("connection"))
      )
      assert.strictEqual(first, "keep-alive")
    })
  )

  it.scoped("slow headers are cut off by the headers timeout", () =>
    Effect.gen(function* () {
      const { port } = yield* serving(Effect.succeed(HttpServerResponse.text("ok")), {
        headersTimeoutMillis: 300,
        requestTimeoutMillis: 300
      })
      const client = yield* rawClient(port)
      client.socket.write("GET / HTTP/1.1\r\nHost: x\r\n")
      // never finishes its headers: the server closes the socket (with 408) at its limit
      yield* Effect.promise(() => client.closed)
      assert.match(client.text(), /^(HTTP\/1\.1 408|)/)
    })
  )

  it.scopedLive("draining accepts no new connection and closes idle keep-alive ones; closing cuts a held body", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const { drain, port } = yield* serving(Effect.succeed(HttpServerResponse.text("ok"))).pipe(Scope.extend(scope))
      // an idle keep-alive connection, and one holding a request whose body never completes
      const idle = yield* rawClient(port)
      idle.socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
      while (!idle.text().includes("ok")) yield* Effect.sleep("10 millis")
      const holding = yield* rawClient(port)
      holding.socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")

      yield* drain.drain("50 millis")
      yield* Effect.promise(() => idle.closed)
      const refused = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => "answered",
          () => "refused"
        )
      )
      assert.strictEqual(refused, "refused")

      yield* Scope.close(scope, Exit.void)
      yield* Effect.promise(() => holding.closed)
    })
  )

  it.scopedLive("at most maxConnections are open at once: the next is closed at accept", () =>
    Effect.gen(function* () {
      const { port } = yield* serving(Effect.succeed(HttpServerResponse.text("ok")), { maxConnections: 2 })
      const a = yield* rawClient(port)
      const b = yield* rawClient(port)
      const c = yield* rawClient(port)
      yield* Effect.promise(() => c.closed)
      a.socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
      while (!a.text().includes("ok")) yield* Effect.sleep("10 millis")
      assert.strictEqual(b.socket.destroyed, false)
    })
  )
})

/**
 * Sends `total` bytes of body in 64 KiB chunks (`Transfer-Encoding: chunked`, so no length is
 * declared up front) while reading the answer, then ends its side; answers what it read and the
 * socket error it met, if any.
 */
const sendChunked = (port: number, path: string, headers: Record<string, string>, total: number) =>
  Effect.async<{ readonly text: string; readonly error: string | undefined }>((resume) => {
    const socket = connect(port, "127.0.0.1")
    let text = ""
    let error: string | undefined
    socket.setEncoding("latin1").on("data", (chunk: string) => {
      text += chunk
    })
    socket.on("error", (cause: NodeJS.ErrnoException) => {
      error = cause.code
    })
    socket.on("close", () => resume(Effect.succeed({ text, error })))
    socket.once("connect", () => {
      const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`)
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n${head.join("")}\r\n`)
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      let sent = 0
      const pump = () => {
        while (sent < total) {
          sent += chunk.length
          socket.write(`${chunk.length.toString(16)}\r\n`)
          socket.write(chunk)
          if (!socket.write("\r\n")) return void socket.once("drain", pump)
        }
        socket.end("0\r\n\r\n")
      }
      pump()
    })
    return Effect.sync(() => socket.destroy())
  })

describe("the Node server's runtime routes", () => {
  it.scoped(
    "a 5 MiB chunked body is answered 413 content_too_large with Connection: close, never a reset",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer({ server: "node" })
        const session = yield* request(`${url}/api/admin/v1/workspaces/${workspaceId}/runtime-sessions`, {
          method: "POST",
          headers: jsonHeaders(adminKey),
          body: JSON.stringify({
            accountId: "acct_1",
            subject: "user_1",
            role: "owner",
            authorities: ["funnels.actions.request"],
            trialRef: fixtureTrialRef
          })
        })
        assert.strictEqual(session.status, 201, session.text)
        const port = Number(new URL(url).port)
        const headers = { "content-type": "application/json", authorization: `Bearer ${session.json.token}` }
        // The approval request (session in the header), prepare and resolve (credentials in the body).
        for (const route of ["approvals", "approvals/prepare", "approvals/resolve"]) {
          const answer = yield* sendChunked(port, `/api/funnels/v1/runtime/actions/${route}`, headers, 5 * 1024 * 1024)
          assert.isUndefined(answer.error, route)
          const [head = "", body = ""] = answer.text.split("\r\n\r\n")
          assert.match(head, /^HTTP\/1\.1 413 /, route)
          assert.match(head, /\r\nconnection: close\r\n/i, route)
          assert.match(head, /\r\ncontent-type: application\/problem\+json\r\n/i, route)
          assert.strictEqual(JSON.parse(body).code, "content_too_large", route)
        }
      }),
    60_000
  )
})
