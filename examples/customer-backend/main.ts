/**
 * `npm run example:customer`: the reference customer backend (see Backend.ts and
 * docs/customer-kit.md). Configuration from the environment; stops cleanly on SIGTERM/SIGINT.
 */
import { configFromEnv, start } from "./Backend.ts"

let config
try {
  config = configFromEnv(process.env)
} catch (error) {
  console.error((error as Error).message)
  process.exit(1)
}
const backend = await start(config)
console.log(`customer backend listening on ${backend.url} (kit at POST /connector)`)
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => void backend.close().then(() => process.exit(0)))
}
