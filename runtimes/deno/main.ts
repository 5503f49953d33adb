/**
 * Accord on Deno: `npm run start:deno`. Deno's Node compatibility runs `@effect/platform-node`'s
 * `node:http` server unchanged (requests, signals and graceful shutdown behave as on Node), so no
 * Deno-specific server is needed.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Server from "../Server.ts"

NodeRuntime.runMain(
  Server.main(({ host, port }) => NodeHttpServer.layerServer(createServer, { host, port })),
  Server.runMainOptions
)
