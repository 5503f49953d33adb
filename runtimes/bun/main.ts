/**
 * Accord on Bun, with Bun's native HTTP server: `npm run start:bun`.
 */
import * as BunHttpServer from "@effect/platform-bun/BunHttpServer"
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import * as Server from "../Server.ts"

BunRuntime.runMain(
  Server.main(({ host, port }) => BunHttpServer.layerServer({ hostname: host, port })),
  Server.runMainOptions
)
