/**
 * The `node:http` server for Node and Deno: `@effect/platform-node`'s server, with the `FastRoutes`
 * answered before the platform app (see `NodeIngest`). Listening, closing and the app's handler are
 * the platform's own.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type * as Net from "node:net"
import { FastRoutes } from "./NodeIngest.ts"

/**
 * @since 0.1.0
 */
export const layerServer = (listen: Net.ListenOptions): Layer.Layer<HttpServer.HttpServer, ServeError, FastRoutes> =>
  Layer.scoped(
    HttpServer.HttpServer,
    Effect.gen(function*() {
      const fast = yield* FastRoutes
      const node = createServer()
      // A client may half-close its side once the request is sent (`shutdown(SHUT_WR)`, as
      // `socket.end(body)` does). Node's default then aborts the request and ends the socket, so an
      // answer not yet written by then (any event still waiting for its group commit) is lost:
      // answer it, then close.
      Object.assign(node, { httpAllowHalfOpen: true })
      const server = yield* NodeHttpServer.make(() => node, listen)
      return HttpServer.make({
        address: server.address,
        serve: (app, middleware) =>
          Effect.gen(function*() {
            const handler = yield* (middleware === undefined
              ? NodeHttpServer.makeHandler(app)
              : NodeHttpServer.makeHandler(app, middleware))
            const listener = (request: IncomingMessage, response: ServerResponse) => {
              if (!fast(request, response)) handler(request, response)
            }
            node.on("request", listener)
            yield* Effect.addFinalizer(() => Effect.sync(() => node.off("request", listener)))
          })
      })
    })
  )
