/**
 * The `accord` command line (`adapters/cli-support/Commands.ts`): `accord --help` lists the
 * commands. Exit code 0 ok, 1 findings, 2 usage or configuration error. The server's storage
 * layer is loaded only by the commands that open storage, so the others start quickly.
 */
import { readFileSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { run } from "../../adapters/cli-support/Commands.ts"

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string
}
process.exitCode = await Effect.runPromise(
  run(process.argv, {
    version,
    storage: (config) =>
      Layer.unwrapEffect(
        Effect.promise(() => import("../Server.ts")).pipe(Effect.map((server) => server.storageLayer(config)))
      )
  })
)
