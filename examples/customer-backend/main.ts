/**
 * `npm run example:customer`: the reference customer backend (see Backend.ts and
 * docs/customer-kit.md). Configuration from the environment; stops cleanly on SIGTERM/SIGINT and
 * logs `customer backend stopped` as its last line.
 */
import { type BackendConfig, configFromEnv, start } from "./Backend.ts"

const stop = (lines: ReadonlyArray<string>): never => {
  for (const line of lines) console.error(line)
  process.exit(1)
}

let config: BackendConfig
try {
  config = configFromEnv(process.env)
} catch (error) {
  // One line per problem; they name variables, never values.
  stop([
    "customer backend: invalid configuration",
    ...(error as Error).message.split("\n").map((line) => `  - ${line}`)
  ])
}
const backend = await start(config!).catch((error: unknown) =>
  stop([`customer backend cannot start: ${(error as { _tag?: string })._tag ?? (error as Error).name ?? "error"}`])
)
console.log(
  `customer backend listening on ${backend.url} (kit at POST /connector, connection revision ${config!.connectionRevision}` +
    `${config!.stripe !== undefined ? ", Stripe webhooks at POST /stripe/webhook" : ""})`
)
// Like the server, a stop is logged: what started it, and a last line once everything has closed.
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    console.log(`customer backend stopping (${signal}): finishing work in flight`)
    void backend.close().then(
      () => {
        console.log("customer backend stopped")
        process.exit(0)
      },
      () => {
        console.error("customer backend stopped with an error while closing")
        process.exit(1)
      }
    )
  })
}
