/**
 * Accord on Node.js: `npm start` (`tsx runtimes/node/main.ts`). Configuration: see README.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Server from "../Server.ts"

NodeRuntime.runMain(
  Server.main(({ host, port }) => NodeHttpServer.layerServer(createServer, { host, port })),
  Server.runMainOptions
)
