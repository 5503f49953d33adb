/**
 * Throughput with 1 and 2 server instances on one PostgreSQL (issue #20 item 6):
 * `tsx bench/scale-instances.ts` (`npm run bench:scale -- instances` runs it too). Real processes
 * (`runtimes/node/main.ts`, the kit of `test/e2e/crashloopKit.ts` whose host call takes 20–200 ms)
 * on fresh schemas of `DATABASE_URL`; `SCALE_ACTIONS` actions (default 1,000) taken in over HTTP
 * with 32 callers, spread over the instances; the figure is actions per second from the first
 * intake until every action is `verified` (intake, dispatch, execution, completion), with the
 * executions per key checked (must be exactly one).
 */
import { randomUUID } from "node:crypto"
import pg from "pg"
import {
  actionInput,
  adminHeaders,
  connectKit,
  createHostTable,
  freePort,
  kill,
  query,
  startKit,
  startServer,
  workspaceUrl
} from "../test/e2e/crashloopProcesses.ts"

const databaseUrl = process.env["DATABASE_URL"] || undefined
if (databaseUrl === undefined) {
  console.log("bench:scale instances needs DATABASE_URL; skipped")
  process.exit(0)
}
const actions = Number(process.env["SCALE_ACTIONS"] ?? 1_000)
const root = new pg.Client({ connectionString: databaseUrl })
await root.connect()

const inSchema = (schema: string) => {
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-csearch_path=${schema}`)
  return url.toString()
}

const run = async (instances: number) => {
  const suffix = randomUUID().replaceAll("-", "").slice(0, 12)
  const [serviceSchema, kitSchema] = [`scale_svc_${suffix}`, `scale_kit_${suffix}`]
  for (const schema of [serviceSchema, kitSchema]) await root.query(`CREATE SCHEMA ${schema}`)
  const [serverDb, kitDb] = [inSchema(serviceSchema), inSchema(kitSchema)]
  await createHostTable(kitDb)
  const ports = await Promise.all(Array.from({ length: instances }, freePort))
  const servers = []
  for (const port of ports) servers.push(await startServer(serverDb, port))
  const bases = ports.map((port) => `http://127.0.0.1:${port}`)
  const kitPort = await freePort()
  const kit = await startKit(kitDb, kitPort, bases[0]!)
  try {
    await connectKit(bases[0]!, `http://127.0.0.1:${kitPort}/connector`)
    const started = performance.now()
    let next = 0
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (next < actions) {
        const i = next++
        const body = JSON.stringify(actionInput(i, "scale"))
        const r = await fetch(`${workspaceUrl(bases[i % instances]!)}/action-requests`, { method: "POST", headers: adminHeaders, body })
        if (r.status !== 202) throw new Error(`intake answered ${r.status}`)
      }
    }))
    const intakeSeconds = (performance.now() - started) / 1000
    for (;;) {
      const [row] = await query<{ n: string }>(serverDb, "SELECT count(*) AS n FROM accord_actions WHERE state = 'verified'")
      if (Number(row!.n) === actions) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const seconds = (performance.now() - started) / 1000
    const [dup] = await query<{ n: string; d: string }>(kitDb, "SELECT count(*) AS n, count(DISTINCT key) AS d FROM host_executions")
    return { perSecond: actions / seconds, intakePerSecond: actions / intakeSeconds, executions: Number(dup!.n), keys: Number(dup!.d) }
  } finally {
    await Promise.all([...servers.map(kill), kill(kit)])
    for (const schema of [serviceSchema, kitSchema]) await root.query(`DROP SCHEMA ${schema} CASCADE`)
  }
}

try {
  console.log(`bench:scale instances — ${actions} actions, intake to verified, 32 callers, ${new Date().toISOString()}`)
  const one = await run(1)
  const two = await run(2)
  for (const [label, r] of [["1 instance", one], ["2 instances", two]] as const) {
    console.log(`  ${label.padEnd(12)} ${r.perSecond.toFixed(0).padStart(6)} actions/s verified (${(r.perSecond / one.perSecond).toFixed(2)}x)   intake ${r.intakePerSecond.toFixed(0)}/s   executions ${r.executions} for ${r.keys} keys`)
  }
} finally {
  await root.end()
}
