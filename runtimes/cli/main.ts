/**
 * The `accord` command line (`adapters/cli-support/Commands.ts`): `accord --help` lists the
 * commands. Exit code 0 ok, 1 findings, 2 usage or configuration error.
 */
import { readFileSync } from "node:fs"
import * as Effect from "effect/Effect"
import { run } from "../../adapters/cli-support/Commands.ts"
import { storageLayer } from "../Server.ts"

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
process.exitCode = await Effect.runPromise(run(process.argv, { version, storage: storageLayer }))
