/**
 * Direct API ingest throughput: autocannon (32 connections, every request a valid, distinct event)
 * against the Accord Node server, side by side in the same run with the baseline: a minimal raw
 * `node:http` + `pg` handler inserting one row per request (bench/ingest-baseline-server.mjs).
 * Both on the same PostgreSQL (DATABASE_URL, each run in a fresh schema); Accord also on PGlite.
 *
 * Every Accord 202 is sent only after its event is committed (group commit); the bench checks that
 * the number of stored events equals the number of 202 answers.
 *
 * Also measured in the same run, as references rather than baselines: `GET /healthz` on the Accord
 * server (its HTTP stack alone) and the least a coalescing server can do
 * (bench/ingest-coalescing-server.mjs: parse, queue, one multi-row insert, answer), which bounds
 * what any group-committing implementation that does more per event reaches on the machine.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import pg from "pg"

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = 32
const databaseUrl = process.env.DATABASE_URL || undefined
const adminKey = "bench-admin-key-0123456789abcdef0123456789"
const workspaceId = "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11"
let port = 18_787

interface Figures {
  readonly label: string
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly ok: number
  readonly errors: number
  readonly stored?: number | undefined
}

const waitFor = async (url: string, anyAnswer = false, ms = 30_000) => {
  const end = Date.now() + ms
  while (Date.now() < end) {
    try {
      const status = (await fetch(url)).status
      if (anyAnswer || status < 500) return
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${url} did not come up`)
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** GET /healthz under the same load: what the HTTP stack alone serves, a ceiling for any route. */
const ceiling = (url: string, label: string): Promise<Figures> =>
  new Promise((resolve, reject) => {
    autocannon({ url, connections, duration: seconds } as any, (error: unknown, result: any) =>
      error ? reject(error) : resolve({
        label,
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        ok: result["2xx"],
        errors: result.errors + result.non2xx
      }))
  })

const load = (url: string, headers: Record<string, string>, label: string, okStatus: number): Promise<Figures> =>
  new Promise((resolve, reject) => {
    let n = 0
    const started = Date.now()
    let ok = 0
    const instance = autocannon({
      url,
      connections,
      duration: seconds,
      requests: [{
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        setupRequest: (request: any) => {
          const i = n++
          request.body = JSON.stringify({
            event_name: "feature_used",
            account_id: `acct_${i % 500}`,
            timestamp: new Date(started - 60_000).toISOString(),
            event_id: `feature_used:bench:${started}:${i}`,
            semantic_type: "usage",
            event_kind: "product_action",
            value: 1,
            properties: { feature_key: "reports", plan: "pro", seat_count: 5 }
          })
          return request
        },
        onResponse: (status: number) => {
          if (status === okStatus) ok++
        }
      }]
    } as any, (error: unknown, result: any) => {
      if (error) return reject(error)
      resolve({
        label,
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        ok,
        errors: result.errors + result.non2xx
      })
    })
    void instance
  })

const tsx = join(process.cwd(), "node_modules/.bin/tsx")

const accord = async (
  label: string,
  env: Record<string, string>,
  count: () => Promise<number>
): Promise<ReadonlyArray<Figures>> => {
  const p = port++
  const child = spawn(tsx, ["runtimes/node/main.ts"], {
    env: {
      ...process.env,
      PORT: String(p),
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ACCORD_INGEST_RATE_LIMIT: "1000000",
      LOG_LEVEL: "Warning",
      ...env
    },
    stdio: ["ignore", "ignore", "inherit"]
  })
  try {
    await waitFor(`http://127.0.0.1:${p}/readyz`)
    const created = await fetch(`http://127.0.0.1:${p}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ scope: "ingest" })
    }).then((r) => r.json() as Promise<{ secret: string }>)
    const figures = await load(`http://127.0.0.1:${p}/api/events/ingest`, { authorization: `Bearer ${created.secret}` }, label, 202)
    const stored = await count()
    const health = await ceiling(`http://127.0.0.1:${p}/healthz`, "  same server, GET /healthz (ceiling)")
    return [{ ...figures, stored }, health]
  } finally {
    await stop(child)
  }
}

const print = (rows: ReadonlyArray<Figures>) => {
  const base = rows[0]!
  for (const r of rows) {
    console.log(
      `  ${r.label.padEnd(36)} ${Math.round(r.rps).toString().padStart(6)} events/s (${(r.rps / base.rps).toFixed(2)}x)` +
        `  p50 ${r.p50} ms  p99 ${r.p99} ms  ok ${r.ok}  errors ${r.errors}` +
        (r.stored === undefined ? "" : `  stored ${r.stored}`)
    )
  }
}

const main = async () => {
  console.log(`ingest, autocannon ${connections} connections, ${seconds} s each, node ${process.version}, ${new Date().toISOString()}`)
  if (databaseUrl !== undefined) {
    const schema = `accord_bench_${Date.now()}`
    const admin = new pg.Client({ connectionString: databaseUrl })
    await admin.connect()
    await admin.query(`CREATE SCHEMA ${schema}`)
    try {
      const p = port++
      const baseline = spawn("node", ["bench/ingest-baseline-server.mjs"], {
        env: { ...process.env, PORT: String(p), SCHEMA: schema },
        stdio: ["ignore", "ignore", "inherit"]
      })
      let base: Figures
      try {
        await waitFor(`http://127.0.0.1:${p}/`, true)
        base = await load(`http://127.0.0.1:${p}/`, {}, "baseline: node:http + pg, 1 insert/req", 202)
      } finally {
        await stop(baseline)
      }
      // The least a coalescing server can do (bench/ingest-coalescing-server.mjs): a bound on this
      // machine for any implementation that also validates, screens and indexes.
      const q = port++
      const coalescing = spawn("node", ["bench/ingest-coalescing-server.mjs"], {
        env: { ...process.env, PORT: String(q), SCHEMA: schema },
        stdio: ["ignore", "ignore", "inherit"]
      })
      let bound: Figures
      try {
        await waitFor(`http://127.0.0.1:${q}/`, true)
        bound = await load(`http://127.0.0.1:${q}/`, {}, "  reference: node:http + pg, coalesced", 202)
      } finally {
        await stop(coalescing)
      }
      const url = new URL(databaseUrl)
      url.searchParams.set("options", `-csearch_path=${schema}`)
      const ours = await accord("Accord on PostgreSQL", { DATABASE_URL: url.toString() }, async () =>
        Number((await admin.query(`SELECT count(*) FROM ${schema}.accord_events`)).rows[0].count))
      console.log(`\nPostgreSQL`)
      print([base, ...ours, bound])
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.end()
    }
  } else {
    console.log("\nPostgreSQL: SKIPPED (set DATABASE_URL)")
  }
  const dir = mkdtempSync(join(tmpdir(), "accord-bench-ingest-"))
  try {
    const ours = await accord("Accord on PGlite (embedded)", { DATABASE_URL: "", ACCORD_DATA_DIR: dir }, async () => -1)
    console.log(`\nPGlite`)
    print(ours.map((figures) => ({ ...figures, stored: undefined })))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
