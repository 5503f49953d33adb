/**
 * Accord on Node.js: `npm start` (`tsx runtimes/node/main.ts`). Configuration: see README.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServer from "../../adapters/http/NodeServer.ts"
import * as Server from "../Server.ts"

NodeRuntime.runMain(
  Server.main(({ host, port }) => NodeServer.layerServer({ host, port })),
  Server.runMainOptions
)
