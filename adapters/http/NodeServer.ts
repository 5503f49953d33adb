/**
 * The `node:http` server for Node and Deno: `@effect/platform-node`'s server, whose request listener
 * is the one dispatcher: a request for a direct route (`FastRoutes`: the ingest endpoint, see
 * `NodeIngest`) is answered there, every other one by the platform app. Listening, closing and the
 * app's handler are the platform's own.
 *
 * The server listens when the layer is built, and the app is served later (the server starts its
 * background work in between). A request in that gap, or after the app stopped being served, is
 * answered at once with 503 `not_serving` and `retry-after: 1`: `node:http` would otherwise leave it
 * unanswered for good (a readiness probe would hang instead of failing). Once an app has stopped
 * being served, every answer (the fast routes' too) closes its connection, so the listener's close
 * does not wait on a client that keeps a keep-alive connection busy.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import * as Net from "node:net"
import { Drain } from "./Drain.ts"
import { Readable } from "node:stream"
import { FastRoutes, send } from "./NodeIngest.ts"
import * as Problem from "./Problem.ts"

const notServing = Problem.toAnswer(
  Problem.make(503, "not_serving", "the server is starting or stopping; retry shortly", {
    headers: { "retry-after": "1" }
  })
)

/**
 * What bounds a client: how long its request headers and its whole request may take, how long an
 * idle keep-alive connection stays open, and how many connections are open at once (more are
 * refused at accept). The defaults suit a service behind a load balancer as well as one exposed.
 */
export interface ConnectionLimits {
  readonly headersTimeoutMillis: number
  readonly requestTimeoutMillis: number
  readonly keepAliveTimeoutMillis: number
  readonly maxConnections: number
}

/**
 * The connection bounds used when none is given: 15 s for headers, 30 s per request, 5 s idle
 * keep-alive, 1,024 connections.
 */
export const defaultConnectionLimits: ConnectionLimits = {
  headersTimeoutMillis: 15_000,
  requestTimeoutMillis: 30_000,
  keepAliveTimeoutMillis: 5_000,
  maxConnections: 1024
}

/**
 * How long a keep-alive connection idle when draining starts may still send one more request
 * (answered with `Connection: close`) before it is closed.
 */
const idleCloseGraceMillis = 1_000

/**
 * An `HttpServer` on `node:http` listening on `listen`, bounded by `limits`, answering the fast
 * routes before the platform router and draining on close.
 */
export const layerServer = (
  listen: Net.ListenOptions,
  limits: Partial<ConnectionLimits> = {}
): Layer.Layer<HttpServer.HttpServer, ServeError, FastRoutes | Drain> =>
  Layer.scoped(
    HttpServer.HttpServer,
    Effect.gen(function* () {
      const fast = yield* FastRoutes
      const drain = yield* Drain
      const bounds = { ...defaultConnectionLimits, ...limits }
      const node = createServer({
        headersTimeout: bounds.headersTimeoutMillis,
        requestTimeout: bounds.requestTimeoutMillis,
        keepAliveTimeout: bounds.keepAliveTimeoutMillis,
        // how often those timeouts are checked (Node's default, 30 s, would stretch each by as much)
        connectionsCheckingInterval: Math.min(1_000, bounds.headersTimeoutMillis)
      })
      node.maxConnections = bounds.maxConnections
      // A client may half-close its side once the request is sent (`shutdown(SHUT_WR)`, as
      // `socket.end(body)` does). Node's default then aborts the request and ends the socket, so an
      // answer not yet written by then (any event still waiting for its group commit) is lost:
      // answer it, then close.
      Object.assign(node, { httpAllowHalfOpen: true })
      // The app's handlers while they are served, the newest last (it answers).
      const served: Array<(request: IncomingMessage, response: ServerResponse) => void> = []
      // Once draining starts or an app has stopped being served the server is closing: every
      // answer closes its connection, so a client that keeps a keep-alive connection busy cannot
      // hold the close open.
      let stopping = false
      node.on("request", (request: IncomingMessage, response: ServerResponse) => {
        if (stopping) response.setHeader("connection", "close")
        closeIfBodyUnread(request, response)
        // The dispatcher's one shortcut: a direct route answers without the platform's request
        // objects and fiber; every other request goes to the app being served.
        if (fast(request, response)) return
        const app = served.at(-1)
        if (app !== undefined) return app(request, response)
        request.resume()
        send(response, notServing)
      })
      // The connections open now.
      const sockets = new Set<Net.Socket>()
      node.on("connection", (socket: Net.Socket) => {
        sockets.add(socket)
        socket.once("close", () => sockets.delete(socket))
      })
      const server = yield* NodeHttpServer.make(() => node, listen)
      // Draining: accept nothing new, and close the keep-alive connections no request is using.
      // The listening socket closes at once (`net.Server`'s close: `http.Server`'s would also close
      // every idle connection at once, and a client whose next request is already on its way would
      // meet a reset). An idle connection gets `idleCloseGraceMillis` to send that request, which
      // is answered with `Connection: close`; the connections still idle then are closed.
      // The drain waits for the connections open then to close (each closes after its next answer,
      // or idle, after the grace), not only for the requests in flight: ending it earlier would close
      // them all at once, with the same reset.
      drain.unsafeOnDrain(() => {
        stopping = true
        Net.Server.prototype.close.call(node)
        for (const socket of sockets) socket.once("close", drain.unsafeEnter())
        setTimeout(() => node.closeIdleConnections?.(), idleCloseGraceMillis).unref()
      })
      // Runs before the platform's close (added after it): whatever is still open once the drain has
      // had its time is closed, so a client holding a body open cannot hold the process.
      yield* Effect.addFinalizer(() => Effect.sync(() => node.closeAllConnections?.()))
      return HttpServer.make({
        address: server.address,
        serve: (app, middleware) =>
          Effect.gen(function* () {
            const handler = yield* middleware === undefined
              ? NodeHttpServer.makeHandler(app)
              : NodeHttpServer.makeHandler(app, middleware)
            served.push(handler)
            yield* Effect.addFinalizer(() =>
              Effect.sync(() => {
                const at = served.indexOf(handler)
                if (at !== -1) served.splice(at, 1)
                stopping = true
              })
            )
          })
      })
    })
  )

/**
 * An answer written before its request's body was read to the end (a refusal: 401, 413, 415)
 * closes the connection. Keeping it would leave the server reading the rest of the body, however
 * slowly it comes, before the connection could serve another request. The close lingers
 * (`lingerOnClose`), so the client reads the answer instead of a reset.
 */
const closeIfBodyUnread = (request: IncomingMessage, response: ServerResponse): void => {
  const declared = request.headers["content-length"]
  if ((declared === undefined || declared === "0") && request.headers["transfer-encoding"] === undefined) return
  const writeHead = response.writeHead
  response.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse["writeHead"]>) {
    if (!request.complete) {
      this.setHeader("connection", "close")
      lingerOnClose(request)
    }
    return writeHead.apply(this, args)
  } as ServerResponse["writeHead"]
}

/**
 * How long a closing connection keeps reading (and discarding) what its client still sends: at
 * most `lingerMillis` in all, and `lingerIdleMillis` without a byte.
 */
const lingerMillis = 10_000
const lingerIdleMillis = 2_000

/**
 * Closes the request's connection after its answer without a reset. `node:http` destroys a
 * connection it closes as soon as the answer is written; bytes of the request body that arrive
 * after that make the kernel answer with a reset, and a client still sending its body (a large
 * chunked upload) loses the answer it had not read yet. So the server here only ends its side once
 * the answer is written, and keeps reading and discarding the rest of the body until the client
 * ends its side, stops sending for `lingerIdleMillis`, or `lingerMillis` have passed.
 */
const lingerOnClose = (request: IncomingMessage): void => {
  const socket = request.socket as Net.Socket & { destroySoon?: () => void }
  if (socket.destroySoon === undefined) return
  socket.destroySoon = function (this: Net.Socket) {
    if (this.writable) this.end()
    const stop = () => this.destroy()
    const deadline = setTimeout(stop, lingerMillis)
    deadline.unref()
    this.once("close", () => clearTimeout(deadline))
    this.setTimeout(lingerIdleMillis, stop)
    request.resume()
    this.resume()
  }
}

/**
 * A Fetch handler (`Server.mount`) as a `node:http` request listener, for hosts built on `node:http`
 * (Express, Fastify, a bare server): the path as the host passes it (Express's `use` strips its mount
 * prefix), the body streamed in, and the response's status, headers and body written back. The host
 * must leave the body unread on these paths (no body parser in front of the mount). A handler that
 * fails (never the service's own answers, which are problem documents) is answered 500.
 */
export const toNodeListener =
  (fetch: (request: Request) => Promise<Response>) =>
  (req: IncomingMessage, res: ServerResponse): void => {
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) {
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one)
    }
    const method = req.method ?? "GET"
    const url = new URL(req.url ?? "/", "http://mounted")
    const body = method === "GET" || method === "HEAD" ? undefined : (Readable.toWeb(req) as ReadableStream<Uint8Array>)
    const init = { method, headers, body, duplex: "half" } as RequestInit
    fetch(new Request(url, init))
      .then(async (response) => {
        const out: Record<string, string | Array<string>> = {}
        response.headers.forEach((value, name) => {
          if (name !== "set-cookie") out[name] = value
        })
        const cookies = response.headers.getSetCookie()
        if (cookies.length > 0) out["set-cookie"] = cookies
        res.writeHead(response.status, out)
        if (response.body !== null && method !== "HEAD") {
          for await (const chunk of response.body) res.write(chunk)
        }
        res.end()
      })
      .catch(() => (res.headersSent ? res.destroy() : send(res, Problem.toAnswer(Problem.internal))))
  }
