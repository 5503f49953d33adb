/**
 * The `accord` command line. `npm run accord -- customer doctor --endpoint URL [--revision N]
 * [--with-execution] [--json]` runs the installation checks against a customer endpoint with the
 * secrets from `ACCORD_ACTION_SIGNING_SECRET`, `ACCORD_COMPLETION_SECRET` and the workspace from
 * `ACCORD_WORKSPACE_ID`; the revision defaults to `ACCORD_CONNECTION_REVISION` (the reference
 * backend's variable), else 0. Exit code 0 when every check passed, 1 otherwise, 2 on a usage error.
 */
import { parseInteger } from "../../adapters/config/AccordConfig.ts"
import { formatReport, runDoctor } from "../../adapters/doctor/CustomerDoctor.ts"

const usage = "usage: accord customer doctor --endpoint URL [--revision N] [--with-execution] [--json]"
const args = process.argv.slice(2)

const fail = (message: string): never => {
  console.error(message)
  process.exit(2)
}

if (args[0] !== "customer" || args[1] !== "doctor") fail(usage)
const flag = (name: string) => args.includes(name)
const value = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const endpoint = value("--endpoint") ?? fail(usage)
const env = (name: string) => process.env[name] || fail(`${name} is required`)
const revisionText = value("--revision") ?? (process.env["ACCORD_CONNECTION_REVISION"] || "0")
const revision = parseInteger(revisionText) ?? fail("--revision (or ACCORD_CONNECTION_REVISION) must be a non-negative integer")

const report = await runDoctor({
  endpoint,
  workspaceId: env("ACCORD_WORKSPACE_ID"),
  actionSigningSecret: env("ACCORD_ACTION_SIGNING_SECRET"),
  completionSecret: env("ACCORD_COMPLETION_SECRET"),
  revision,
  withExecution: flag("--with-execution")
})
console.log(flag("--json") ? JSON.stringify(report, null, 2) : formatReport(report))
process.exit(report.ok ? 0 : 1)
