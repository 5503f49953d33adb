/**
 * Accord on Node.js: `npm start` (`exec node --import tsx runtimes/node/main.ts`: the server is npm's
 * own child, so the SIGTERM npm forwards reaches it). `--help` lists every environment variable.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Environment from "../../adapters/config/Environment.ts"
import * as NodeServer from "../../adapters/http/NodeServer.ts"
import * as Server from "../Server.ts"

if (Environment.wantsHelp(process.argv.slice(2))) {
  process.stdout.write(Environment.helpText("npm start [-- --help]   (node --import tsx runtimes/node/main.ts)"))
} else {
  NodeRuntime.runMain(
    Server.main(({ host, port, maxConnections }) => NodeServer.layerServer({ host, port }, { maxConnections })),
    Server.runMainOptions
  )
}
