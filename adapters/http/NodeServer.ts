/**
 * The `node:http` server for Node and Deno: `@effect/platform-node`'s server, with the `FastRoutes`
 * answered before the platform app (see `NodeIngest`). Listening, closing and the app's handler are
 * the platform's own.
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
import type * as Net from "node:net"
import { FastRoutes, send } from "./NodeIngest.ts"
import * as Problem from "./Problem.ts"

const notServing = Problem.toAnswer(
  Problem.make(503, "not_serving", "the server is starting or stopping; retry shortly", {
    headers: { "retry-after": "1" }
  })
)

export const layerServer = (listen: Net.ListenOptions): Layer.Layer<HttpServer.HttpServer, ServeError, FastRoutes> =>
  Layer.scoped(
    HttpServer.HttpServer,
    Effect.gen(function* () {
      const fast = yield* FastRoutes
      const node = createServer()
      // A client may half-close its side once the request is sent (`shutdown(SHUT_WR)`, as
      // `socket.end(body)` does). Node's default then aborts the request and ends the socket, so an
      // answer not yet written by then (any event still waiting for its group commit) is lost:
      // answer it, then close.
      Object.assign(node, { httpAllowHalfOpen: true })
      // The app's handlers while they are served, the newest last (it answers).
      const served: Array<(request: IncomingMessage, response: ServerResponse) => void> = []
      // Once an app has stopped being served the server is closing: every answer closes its
      // connection, so a client that keeps a keep-alive connection busy cannot hold the close open.
      let stopping = false
      node.on("request", (request: IncomingMessage, response: ServerResponse) => {
        if (stopping) response.setHeader("connection", "close")
        if (fast(request, response)) return
        const app = served.at(-1)
        if (app !== undefined) return app(request, response)
        request.resume()
        send(response, notServing)
      })
      const server = yield* NodeHttpServer.make(() => node, listen)
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
