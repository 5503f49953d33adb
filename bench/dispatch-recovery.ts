/**
 * The recovery lines of `bench:dispatch` (the target: every action final within 60 s of the last
 * crash): real server and kit processes (`test/e2e/crashloopProcesses.ts`; the kit leases executions
 * for 15 s, renewed by its heartbeat while they run) on fresh schemas, `RECOVERY_ACTIONS` actions
 * each (default 300), and the executions per key at the end (must be exactly one).
 *
 * - `recovery`: the actions are taken in, both processes are SIGKILLed while they work and started
 *   again at once; the time from the kill until every action is `verified`.
 * - `outage`: the kit is down for `RECOVERY_OUTAGE_SECONDS` (default 60) while the actions are taken
 *   in, so every delivery is refused and backs off further; the time from the kit being back until
 *   every action is `verified`.
 */
import { randomUUID } from "node:crypto"
import pg from "pg"
import * as FreezingProxy from "../test/support/freezingProxy.ts"
import {
  actionInput,
  adminHeaders,
  connectKit,
  createHostTable,
  freePort,
  kill,
  query,
  type Running,
  startKit,
  startServer,
  workspaceUrl
} from "../test/e2e/crashloopProcesses.ts"

interface Processes {
  readonly actions: number
  /** The server's base URL. */
  readonly base: string
  readonly serverDb: string
  readonly kitDb: string
  server: Running
  kit: Running
  readonly restartServer: () => Promise<void>
  readonly restartKit: () => Promise<void>
  /** Takes the actions in, 16 at a time. */
  readonly takeIn: () => Promise<void>
  readonly verified: () => Promise<number>
  /** Waits until every action is verified (at most 10 minutes); the seconds since `since`. */
  readonly allVerified: (since: number) => Promise<number>
  /** The executions at the kit, for every key and duplicated. */
  readonly executions: () => Promise<string>
}

/**
 * Runs `run` against a server and a kit on fresh schemas, then stops both and drops the schemas.
 * `reach` rewrites the URL each process reaches its database with (a proxy); the bench's own
 * queries go to the database directly.
 */
const withProcesses = async (
  databaseUrl: string,
  run: (p: Processes) => Promise<string>,
  reach: { readonly server: (url: string) => string; readonly kit: (url: string) => string } = {
    server: (url) => url,
    kit: (url) => url
  }
): Promise<string> => {
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
  const verified = async () =>
    Number(
      (await query<{ n: string }>(serverDb, "SELECT count(*) AS n FROM accord_actions WHERE state = 'verified'"))[0]!.n
    )
  const p: Processes = {
    actions,
    base,
    serverDb,
    kitDb,
    server: await startServer(reach.server(serverDb), serverPort),
    kit: await startKit(reach.kit(kitDb), kitPort, base),
    restartServer: async () => {
      p.server = await startServer(reach.server(serverDb), serverPort)
    },
    restartKit: async () => {
      p.kit = await startKit(reach.kit(kitDb), kitPort, base)
    },
    takeIn: async () => {
      let next = 0
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < actions) {
            const i = next++
            const body = JSON.stringify(actionInput(i, "recovery"))
            const r = await fetch(`${workspaceUrl(base)}/action-requests`, {
              method: "POST",
              headers: adminHeaders,
              body
            })
            if (r.status !== 202) throw new Error(`intake answered ${r.status}`)
          }
        })
      )
    },
    verified,
    allVerified: async (since) => {
      while ((await verified()) < actions) {
        if (performance.now() - since > 600_000) throw new Error("not all verified within 10 minutes")
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return (performance.now() - since) / 1000
    },
    executions: async () => {
      const [dup] = await query<{ n: string; d: string }>(
        kitDb,
        "SELECT count(*) AS n, count(DISTINCT key) AS d FROM host_executions"
      )
      return `executions ${dup!.n} for ${dup!.d} keys, duplicates ${Number(dup!.n) - Number(dup!.d)}`
    }
  }
  try {
    await connectKit(base, `http://127.0.0.1:${kitPort}/connector`)
    return await run(p)
  } finally {
    await Promise.all([kill(p.server), kill(p.kit)])
    for (const schema of schemas) await root.query(`DROP SCHEMA ${schema} CASCADE`)
    await root.end()
  }
}

export const recovery = (databaseUrl: string): Promise<string> =>
  withProcesses(databaseUrl, async (p) => {
    await p.takeIn()
    // Kill both while work is in flight: some actions dispatched, some executing, some completing.
    const before = await p.verified()
    await Promise.all([kill(p.server), kill(p.kit)])
    const killedAt = performance.now()
    await p.restartServer()
    await p.restartKit()
    const restarted = (performance.now() - killedAt) / 1000
    const seconds = await p.allVerified(killedAt)
    return (
      `Recovery after SIGKILL of server and kit: every action verified ${seconds.toFixed(1)} s after the kill ` +
      `(restarts took ${restarted.toFixed(1)} s; ${before} of ${p.actions} verified before it; ${await p.executions()})`
    )
  })

export const outage = (databaseUrl: string): Promise<string> =>
  withProcesses(databaseUrl, async (p) => {
    const downSeconds = Number(process.env["RECOVERY_OUTAGE_SECONDS"] ?? 60)
    await kill(p.kit)
    const downAt = performance.now()
    await p.takeIn()
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, downSeconds * 1000 - (performance.now() - downAt))))
    const [waits] = await query<{ attempts: string; latest: string }>(
      p.serverDb,
      `SELECT max(attempts) AS attempts, max(next_attempt_at) - (extract(epoch from now()) * 1000)::int8 AS latest
       FROM accord_outbox WHERE kind = 'service.dispatch' AND completed_at IS NULL`
    )
    const backAt = performance.now()
    await p.restartKit()
    const seconds = await p.allVerified(backAt)
    return (
      `Recovery after the kit was down ${((backAt - downAt) / 1000).toFixed(0)} s: every action verified ${seconds.toFixed(1)} s after it was started again ` +
      `(at its restart up to ${waits!.attempts} attempts per action, the last next attempt due in ${(Number(waits!.latest) / 1000).toFixed(1)} s; ${await p.executions()})`
    )
  })

/** Where the actions that are not yet verified wait: states and open outbox items on both sides. */
const waiting = async (p: Processes): Promise<string> => {
  const states = async (db: string) =>
    (
      await query<{ state: string; n: string }>(
        db,
        "SELECT state, count(*) AS n FROM accord_actions GROUP BY state ORDER BY state"
      )
    )
      .map((row) => `${row.state} ${row.n}`)
      .join(", ")
  const items = async (db: string) =>
    (
      await query<{ kind: string; n: string; attempts: string; due: string; error: string | null }>(
        db,
        `SELECT kind, count(*) AS n, max(attempts) AS attempts,
                max(next_attempt_at) - (extract(epoch from now()) * 1000)::int8 AS due,
                mode() WITHIN GROUP (ORDER BY last_error) AS error
         FROM accord_outbox WHERE completed_at IS NULL GROUP BY kind ORDER BY kind`
      )
    )
      .map(
        (row) =>
          `${row.kind} ${row.n} open (up to ${row.attempts} attempts, the last due in ${(Number(row.due) / 1000).toFixed(1)} s, mostly ${row.error ?? "never tried"})`
      )
      .join("; ") || "none open"
  return `service: ${await states(p.serverDb)}; items ${await items(p.serverDb)}. kit: ${await states(p.kitDb)}; items ${await items(p.kitDb)}`
}

/**
 * `databaseOutage`: actions taken in at `OUTAGE_RATE` (40) a second for `OUTAGE_RUN_SECONDS` (20)
 * s by a caller that sends a refused intake again after its `Retry-After`, with the same
 * `Idempotency-Key`; the server and the kit reach PostgreSQL through `FreezingProxy`, frozen for
 * `OUTAGE_SECONDS` (10) s from the 5th second (as a database stopped with SIGSTOP; `OUTAGE_FREEZE`
 * `both`, the default, or `service`: only the server's connections). The time from the thaw until
 * every action is `verified` (target: 10 s), the verified count every 5 s after the thaw, and where
 * the rest wait 5 and 10 s after it. The same run's baseline first: the same load without the freeze,
 * timed from the moment the thaw would have come.
 */
export const databaseOutage = async (databaseUrl: string): Promise<string> => {
  const rate = Number(process.env["OUTAGE_RATE"] ?? 40)
  const runSeconds = Number(process.env["OUTAGE_RUN_SECONDS"] ?? 20)
  const outageSeconds = Number(process.env["OUTAGE_SECONDS"] ?? 10)
  const freezeBoth = (process.env["OUTAGE_FREEZE"] ?? "both") === "both"
  const baseline = await outageRun(databaseUrl, { rate, runSeconds, outageSeconds, freeze: false, freezeBoth })
  const measured = await outageRun(databaseUrl, { rate, runSeconds, outageSeconds, freeze: true, freezeBoth })
  return `Database ${freezeBoth ? "(server's and kit's)" : "(server's only)"} frozen ${outageSeconds} s from the 5th second, ${rate} actions/s for ${runSeconds} s through the kit:\n  baseline, no freeze: ${baseline}\n  frozen:              ${measured}`
}

const outageRun = async (
  databaseUrl: string,
  run: {
    readonly rate: number
    readonly runSeconds: number
    readonly outageSeconds: number
    readonly freeze: boolean
    readonly freezeBoth: boolean
  }
): Promise<string> => {
  const { freeze, freezeBoth, outageSeconds, rate, runSeconds } = run
  const direct = new URL(databaseUrl)
  const proxy = await FreezingProxy.start({ host: direct.hostname || "127.0.0.1", port: Number(direct.port || 5432) })
  const through = (url: string) => {
    const via = new URL(url)
    via.hostname = "127.0.0.1"
    via.port = String(proxy.port)
    return via.toString()
  }
  try {
    return await withProcesses(
      databaseUrl,
      async (p) => {
        const base = p.base
        const intakes: Array<Promise<void>> = []
        let refused = 0
        const takeIn = async (i: number) => {
          for (;;) {
            const r = await fetch(`${workspaceUrl(base)}/action-requests`, {
              method: "POST",
              headers: { ...adminHeaders, "idempotency-key": `outage-${i}` },
              body: JSON.stringify(actionInput(i, "outage"))
            }).catch(() => undefined)
            if (r?.status === 202) return
            refused++
            const after = Number(r?.headers.get("retry-after") ?? 1)
            await new Promise((resolve) => setTimeout(resolve, after * 1000))
          }
        }
        const started = performance.now()
        let thawedAt = 0
        const outage = (async () => {
          await new Promise((resolve) => setTimeout(resolve, 5_000))
          if (freeze) proxy.freeze()
          await new Promise((resolve) => setTimeout(resolve, outageSeconds * 1000))
          proxy.thaw()
          thawedAt = performance.now()
        })()
        const total = rate * runSeconds
        for (let i = 0; i < total; i++) {
          const due = started + (i * 1000) / rate
          const wait = due - performance.now()
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
          intakes.push(takeIn(i))
        }
        await outage
        await Promise.all(intakes)
        const intakeDone = (performance.now() - thawedAt) / 1000
        const cap = Number(process.env["OUTAGE_WAIT_SECONDS"] ?? 120) * 1000
        const progress: Array<string> = []
        const where: Array<string> = []
        let verified = await p.verified()
        for (let mark = 5; verified < total && performance.now() - thawedAt < cap; ) {
          await new Promise((resolve) => setTimeout(resolve, 100))
          verified = await p.verified()
          const since = (performance.now() - thawedAt) / 1000
          if (since >= mark) {
            progress.push(`+${mark} s ${verified}`)
            if (mark <= 10 && verified < total) where.push(`at +${mark} s: ${await waiting(p)}`)
            mark += 5
          }
        }
        const afterThaw = (performance.now() - thawedAt) / 1000
        const outcome =
          verified < total
            ? `NOT all verified ${(cap / 1000).toFixed(0)} s after the thaw (${verified} of ${total}); ${await waiting(p)}`
            : `every one of ${total} verified ${afterThaw.toFixed(1)} s after the ${freeze ? "thaw" : "moment the thaw would have come"}`
        return (
          `${outcome}; intakes all acknowledged ${intakeDone.toFixed(1)} s after it, ${refused} refused and sent again; ` +
          `verified by then: ${progress.join(", ") || "all at once"}` +
          `${where.map((w) => `; ${w}`).join("")}; ${await p.executions()}`
        )
      },
      // Both runs reach the database through the proxy (the baseline's is never frozen).
      { server: through, kit: freezeBoth ? through : (url) => url }
    )
  } finally {
    await proxy.close()
  }
}
