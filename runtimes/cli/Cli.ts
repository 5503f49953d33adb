/**
 * The `accord` command line as one Effect: the commands (`adapters/cli-support/Commands.ts`) with
 * this package's version and the server's storage layer, loaded only by the commands that open
 * storage, so the others start quickly. `main.ts` runs it on `process.argv`; tests run it in their
 * own process the same way.
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

/**
 * Runs the CLI on `argv` (as `process.argv`: runtime and script first) and answers the exit code:
 * 0 ok, 1 findings, 2 usage or configuration error.
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<number> =>
  run(argv, {
    version,
    storage: (config) =>
      Layer.unwrapEffect(
        Effect.promise(() => import("../Server.ts")).pipe(Effect.map((server) => server.storageLayer(config)))
      )
  })
