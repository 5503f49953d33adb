/**
 * Accord on Deno: `npm run start:deno`. Deno's Node compatibility runs `@effect/platform-node`'s
 * `node:http` server unchanged (requests, signals and graceful shutdown behave as on Node), so no
 * Deno-specific server is needed.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServer from "../../adapters/http/NodeServer.ts"
import * as Server from "../Server.ts"

NodeRuntime.runMain(
  Server.main(({ host, port, maxConnections }) => NodeServer.layerServer({ host, port }, { maxConnections })),
  Server.runMainOptions
)
