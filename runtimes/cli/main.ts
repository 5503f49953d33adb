/**
 * The `accord` command line (`adapters/cli-support/Commands.ts`): `accord --help` lists the
 * commands. Exit code 0 ok, 1 findings, 2 usage or configuration error. The server's storage
 * layer is loaded only by the commands that open storage, so the others start quickly.
 */
import { existsSync, readFileSync } from "node:fs"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { run } from "../../adapters/cli-support/Commands.ts"

/** The package's version: its package.json is two folders up from the source, three from the build (dist/). */
const packageVersion = (): string => {
  for (const up of ["../../package.json", "../../../package.json"]) {
    const url = new URL(up, import.meta.url)
    if (!existsSync(url)) continue
    const manifest = JSON.parse(readFileSync(url, "utf8")) as { name?: string; version: string }
    if (manifest.name === "accord") return manifest.version
  }
  throw new Error("accord: package.json not found beside the CLI")
}
const version = packageVersion()
process.exitCode = await Effect.runPromise(
  run(process.argv, {
    version,
    storage: (config) =>
      Layer.unwrapEffect(
        Effect.promise(() => import("../Server.ts")).pipe(Effect.map((server) => server.storageLayer(config)))
      )
  })
)
