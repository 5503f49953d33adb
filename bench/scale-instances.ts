/**
 * Throughput with 1 and 2 server instances on one PostgreSQL:
 * `tsx bench/scale-instances.ts` (`npm run bench:scale -- instances` runs it too). Real processes
 * (`runtimes/node/main.ts`, the kit of `test/e2e/crashloopKit.ts` whose host call takes 20–200 ms)
 * on fresh schemas of `DATABASE_URL`; `SCALE_ACTIONS` actions (default 1,000) taken in over HTTP
 * with 32 callers, spread over the instances, after `SCALE_WARMUP` (default 1,000) taken in the same
 * way and verified unmeasured; the figure is actions per second from the first measured intake
 * until every action is `verified` (intake, dispatch, execution, completion), with the executions
 * per key checked (must be exactly one, warm-up actions included).
 *
 * Also printed, over the same span: CPU µs per action of each role (the server instances together,
 * the kit, PostgreSQL as the sum over this database's backends, and this process, the load), and how
 * busy the machine was (share of all its cores, from /proc/stat): where it is near 100 % with one
 * instance, a second one has no idle core to use. The span is recorded for `npm run bench:perf --
 * bench:scale instances` (bench/phases.ts). The completion count is polled every 200 ms on the
 * bench's own session: polling it every 50 ms on a new connection each time took CPU from the
 * processes measured.
 */
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import pg from "pg"
import { backendTicks, inSchema as inSchemaOf, processTicks } from "./dispatch-support.ts"
import { monotonic, recordPhase } from "./phases.ts"
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
/** Actions taken in and verified, unmeasured, before the measured ones (`SCALE_WARMUP`). */
const warmup = Number(process.env["SCALE_WARMUP"] ?? 1_000)
const root = new pg.Client({ connectionString: databaseUrl })
await root.connect()

const inSchema = (schema: string) => inSchemaOf(databaseUrl, schema)

/** Busy and total ticks of all cores (/proc/stat's first line: everything but idle and iowait is busy). */
const machineTicks = (): { readonly busy: number; readonly total: number } => {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = fields.reduce((a, b) => a + b, 0)
  return { busy: total - fields[3]! - fields[4]!, total }
}

/** Takes in actions `from` … `from + count - 1` over HTTP with 32 callers, spread over the instances. */
const takeIn = async (bases: ReadonlyArray<string>, from: number, count: number, prefix: string): Promise<void> => {
  let next = 0
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = from + next++
        const body = JSON.stringify(actionInput(i, prefix))
        const r = await fetch(`${workspaceUrl(bases[i % bases.length]!)}/action-requests`, {
          method: "POST",
          headers: adminHeaders,
          body
        })
        if (r.status !== 202) throw new Error(`intake answered ${r.status}`)
      }
    })
  )
}

/** Until `count` actions of the schema are verified. */
const allVerified = async (schema: string, count: number): Promise<void> => {
  for (;;) {
    const { rows } = await root.query(`SELECT count(*) AS n FROM ${schema}.accord_actions WHERE state = 'verified'`)
    if (Number(rows[0].n) === count) return
    // The count is a sequential scan of the actions table (8.7 ms at 1,000 actions on the
    // saturated machine): polled every 200 ms, it takes little of what it measures.
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
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
    // Unmeasured: the same load until every warm-up action is verified, so the measured span finds
    // the processes' code compiled (without it, V8's optimizing compiler took about a sixth of the
    // server's CPU in the span, on its background threads).
    await takeIn(bases, 0, warmup, "warmup")
    await allVerified(serviceSchema, warmup)
    const serverPids = servers.map((server) => server.child.pid!)
    const kitPid = kit.child.pid!
    const ticksOf = (pids: ReadonlyArray<number>) => pids.reduce((sum, pid) => sum + processTicks(pid), 0)
    const backends = await backendTicks(root)
    const [serverTicks, kitTicks, machine, self] = [
      ticksOf(serverPids),
      processTicks(kitPid),
      machineTicks(),
      process.cpuUsage()
    ]
    const start = monotonic()
    const started = performance.now()
    await takeIn(bases, warmup, actions, "scale")
    const intakeSeconds = (performance.now() - started) / 1000
    await allVerified(serviceSchema, warmup + actions)
    const seconds = (performance.now() - started) / 1000
    const end = monotonic()
    const selfUsage = process.cpuUsage(self)
    const [serverAfter, kitAfter, machineAfter] = [ticksOf(serverPids), processTicks(kitPid), machineTicks()]
    const after = await backendTicks(root)
    let database = 0
    for (const [pid, ticks] of after) database += ticks - (backends.get(pid) ?? 0)
    recordPhase({
      label: `${instances} instance${instances === 1 ? "" : "s"}`,
      units: actions,
      start,
      end,
      processes: {
        server: serverPids,
        kit: [kitPid],
        PostgreSQL: [...new Set([...backends.keys(), ...after.keys()])],
        load: [process.pid]
      }
    })
    const perAction = (ticks: number) => (ticks * 10_000) / actions
    const cpu = {
      servers: perAction(serverAfter - serverTicks),
      kit: perAction(kitAfter - kitTicks),
      database: perAction(database),
      load: (selfUsage.user + selfUsage.system) / actions,
      busy: (machineAfter.busy - machine.busy) / (machineAfter.total - machine.total)
    }
    const [dup] = await query<{ n: string; d: string }>(
      kitDb,
      "SELECT count(*) AS n, count(DISTINCT key) AS d FROM host_executions"
    )
    return {
      perSecond: actions / seconds,
      intakePerSecond: actions / intakeSeconds,
      executions: Number(dup!.n),
      keys: Number(dup!.d),
      cpu
    }
  } finally {
    await Promise.all([...servers.map(kill), kill(kit)])
    for (const schema of [serviceSchema, kitSchema]) await root.query(`DROP SCHEMA ${schema} CASCADE`)
  }
}

try {
  console.log(
    `bench:scale instances — ${actions} actions after ${warmup} unmeasured, intake to verified, 32 callers, ${new Date().toISOString()}`
  )
  const one = await run(1)
  const two = await run(2)
  for (const [label, r] of [
    ["1 instance", one],
    ["2 instances", two]
  ] as const) {
    console.log(
      `  ${label.padEnd(12)} ${r.perSecond.toFixed(0).padStart(6)} actions/s verified (${(r.perSecond / one.perSecond).toFixed(2)}x)   intake ${r.intakePerSecond.toFixed(0)}/s   executions ${r.executions} for ${r.keys} keys`
    )
    const { busy, database, kit, load, servers } = r.cpu
    console.log(
      `  ${"".padEnd(12)} CPU µs/action: servers ${servers.toFixed(0)}, kit ${kit.toFixed(0)}, PostgreSQL ${database.toFixed(0)}, load ${load.toFixed(0)}; machine busy ${(busy * 100).toFixed(0)} %`
    )
  }
} finally {
  await root.end()
}
