/**
 * The `accord` command line (`adapters/cli-support/Commands.ts`, composed in `Cli.ts`): `accord
 * --help` lists the commands. Exit code 0 ok, 1 findings, 2 usage or configuration error.
 */
import * as Effect from "effect/Effect"
import { main } from "./Cli.ts"

process.exitCode = await Effect.runPromise(main(process.argv))
