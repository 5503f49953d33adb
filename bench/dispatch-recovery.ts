/**
 * The recovery-time line of `bench:dispatch` (issue #20 item 7): real server and kit processes
 * (`test/e2e/crashloopProcesses.ts`; the kit leases executions for 15 s, renewed by its heartbeat
 * while they run) on fresh schemas; `RECOVERY_ACTIONS` actions (default 300) are taken in, both
 * processes are SIGKILLed while they work and started again at once; the line gives the time from
 * the kill until every action is `verified`, and the executions per key (must be exactly one).
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

export const recovery = async (databaseUrl: string): Promise<string> => {
  const actions = Number(process.env["RECOVERY_ACTIONS"] ?? 300)
  const root = new pg.Client({ connectionString: databaseUrl })
  await root.connect()
  const suffix = randomUUID().replaceAll("-", "").slice(0, 12)
  const schemas = [`recovery_svc_${suffix}`, `recovery_kit_${suffix}`]
  for (const schema of schemas) await root.query(`CREATE SCHEMA ${schema}`)
  const [serverDb, kitDb] = schemas.map((schema) => {
    const url = new URL(databaseUrl)
    url.searchParams.set("options", `-csearch_path=${schema}`)
    return url.toString()
  }) as [string, string]
  await createHostTable(kitDb)
  const [serverPort, kitPort] = [await freePort(), await freePort()]
  const base = `http://127.0.0.1:${serverPort}`
  let server = await startServer(serverDb, serverPort)
  let kit = await startKit(kitDb, kitPort, base)
  try {
    await connectKit(base, `http://127.0.0.1:${kitPort}/connector`)
    let next = 0
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < actions) {
        const i = next++
        const body = JSON.stringify(actionInput(i, "recovery"))
        const r = await fetch(`${workspaceUrl(base)}/action-requests`, { method: "POST", headers: adminHeaders, body })
        if (r.status !== 202) throw new Error(`intake answered ${r.status}`)
      }
    }))
    // Kill both while work is in flight: some actions dispatched, some executing, some completing.
    const [before] = await query<{ n: string }>(serverDb, "SELECT count(*) AS n FROM accord_actions WHERE state = 'verified'")
    await Promise.all([kill(server), kill(kit)])
    const killedAt = performance.now()
    server = await startServer(serverDb, serverPort)
    kit = await startKit(kitDb, kitPort, base)
    const restarted = (performance.now() - killedAt) / 1000
    for (;;) {
      const [row] = await query<{ n: string }>(serverDb, "SELECT count(*) AS n FROM accord_actions WHERE state = 'verified'")
      if (Number(row!.n) === actions) break
      if (performance.now() - killedAt > 600_000) throw new Error("not all verified 10 minutes after the kill")
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const seconds = (performance.now() - killedAt) / 1000
    const [dup] = await query<{ n: string; d: string }>(kitDb, "SELECT count(*) AS n, count(DISTINCT key) AS d FROM host_executions")
    return `Recovery after SIGKILL of server and kit: every action verified ${seconds.toFixed(1)} s after the kill ` +
      `(restarts took ${restarted.toFixed(1)} s; ${before!.n} of ${actions} verified before it; executions ${dup!.n} for ${dup!.d} keys, duplicates ${Number(dup!.n) - Number(dup!.d)})`
  } finally {
    await Promise.all([kill(server), kill(kit)])
    for (const schema of schemas) await root.query(`DROP SCHEMA ${schema} CASCADE`)
    await root.end()
  }
}
