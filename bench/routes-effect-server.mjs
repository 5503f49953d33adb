/**
 * The least an Effect platform server does to answer `GET /healthz` (for `bench:routes`): one
 * `HttpRouter` route served by `@effect/platform-node`'s `NodeHttpServer`, no middleware, no
 * logging, no storage. Beside the bare node:http answer it shows what the platform itself costs
 * per request, which Accord's figure includes.
 */
import { createServer } from "node:http"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Layer from "effect/Layer"

const router = HttpRouter.empty.pipe(HttpRouter.get("/healthz", HttpServerResponse.unsafeJson({ status: "ok" })))
const app = router.pipe(
  HttpServer.serve(),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" }))
)
NodeRuntime.runMain(Layer.launch(app))
