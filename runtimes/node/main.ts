/**
 * Accord on Node.js: `npm start` (`exec node --import tsx runtimes/node/main.ts`: the server is npm's
 * own child, so the SIGTERM npm forwards reaches it). Configuration: see README.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServer from "../../adapters/http/NodeServer.ts"
import * as Server from "../Server.ts"

NodeRuntime.runMain(
  Server.main(({ host, port }) => NodeServer.layerServer({ host, port })),
  Server.runMainOptions
)
