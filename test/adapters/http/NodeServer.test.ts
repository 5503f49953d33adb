import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { FastRoutes } from "../../../adapters/http/NodeIngest.ts"
import * as NodeServer from "../../../adapters/http/NodeServer.ts"

// The fast route answers `/fast` itself; everything else goes to the app once it is served.
const fast = Layer.succeed(FastRoutes, (request, response) => {
  if (request.url !== "/fast") return false
  response.writeHead(200, { "content-type": "text/plain" }).end("fast")
  return true
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
        const context = yield* Layer.build(Layer.provide(NodeServer.layerServer({ port: 0, host: "127.0.0.1" }), fast))
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
})
