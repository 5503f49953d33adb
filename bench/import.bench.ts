/**
 * Bulk import throughput against the per-event ingest route, in the same run on the same server
 * and database: a generated NDJSON file of `BENCH_IMPORT_EVENTS` events (default 1 000 000) sent
 * by `accord backfill`'s bulk import client (`adapters/cli-support/BulkImport.ts`: gzip parts,
 * `PUT /api/events/imports/{id}`), and, as the baseline, `BENCH_BASELINE_EVENTS` events (default
 * 20 000) posted one per request to `POST /api/events/ingest` by 32 concurrent senders.
 *
 * Then a crash: a second file is imported, the server is killed with SIGKILL once some batches are
 * committed, started again on the same database, and the same client resumes; the run checks that
 * every event of the file is stored exactly once.
 *
 * On PostgreSQL when `DATABASE_URL` is set (a fresh schema per run), else PGlite in a temporary
 * data directory. Figures are for the machine as it is: print them beside the baseline.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createWriteStream, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { once } from "node:events"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import * as BulkImport from "../adapters/cli-support/BulkImport.ts"

const events = Number(process.env.BENCH_IMPORT_EVENTS ?? 1_000_000)
const baselineEvents = Number(process.env.BENCH_BASELINE_EVENTS ?? 20_000)
const crashEvents = Number(process.env.BENCH_CRASH_EVENTS ?? Math.min(events, 200_000))
const databaseUrl = process.env.DATABASE_URL || undefined
const workspaceId = "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a12"
const adminKey = "bench-import-admin-key-0123456789abcdef012"
const ingestKey = "bench-import-ingest-key-0123456789abcdef01"
const port = 18_897
const base = `http://127.0.0.1:${port}`
const dir = mkdtempSync(join(tmpdir(), "accord-bench-import-"))

const eventLine = (prefix: string, i: number) =>
  JSON.stringify({
    event_name: "feature_used",
    account_id: `acct_${i % 5000}`,
    timestamp: new Date(Date.UTC(2025, 0, 1) + (i % 86_400_000)).toISOString(),
    event_id: `${prefix}:${i}`,
    properties: { feature_key: `feature_${i % 40}` }
  })

const writeFile = async (path: string, prefix: string, count: number) => {
  const out = createWriteStream(path)
  for (let i = 0; i < count; i++) {
    if (!out.write(eventLine(prefix, i) + "\n")) await once(out, "drain")
  }
  out.end()
  await once(out, "finish")
}

const startServer = (env: Record<string, string>): ChildProcess =>
  spawn(process.execPath, ["--import", "tsx", "runtimes/node/main.ts"], {
    env: {
      ...process.env,
      LOG_LEVEL: "Warning",
      PORT: String(port),
      HOST: "127.0.0.1",
      ACCORD_DATA_DIR: join(dir, "data"),
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ACCORD_BOOTSTRAP_INGEST_KEY: ingestKey,
      ACCORD_INGEST_RATE_LIMIT: "1000000",
      // The generated history is from 2025, past the default retention: kept, so the sweep at the
      // restart after the crash cannot remove what the count at the end expects.
      ACCORD_EVENT_RETENTION_DAYS: "forever",
      ...env
    },
    stdio: ["ignore", "ignore", "inherit"]
  })

const ready = async () => {
  for (let i = 0; i < 1200; i++) {
    const ok = await fetch(`${base}/readyz`).then(
      (r) => r.status === 200,
      () => false
    )
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("the server did not become ready")
}

const stop = async (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill(signal)
  await once(child, "exit")
}

/** Events per second through the per-event route, 32 senders. */
const perEventRoute = async (): Promise<number> => {
  let next = 0
  const started = performance.now()
  const sender = async () => {
    while (next < baselineEvents) {
      const i = next++
      const response = await fetch(`${base}/api/events/ingest`, {
        method: "POST",
        headers: { authorization: `Bearer ${ingestKey}`, "content-type": "application/json" },
        body: eventLine("route", i)
      })
      if (response.status !== 202) throw new Error(`ingest answered ${response.status}`)
      await response.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: 32 }, sender))
  return baselineEvents / ((performance.now() - started) / 1000)
}

const importFile = (path: string, progress: (status: BulkImport.ImportStatus) => void = () => {}) =>
  Effect.runPromise(
    BulkImport.run({
      path,
      serviceUrl: base,
      apiKey: Redacted.make(ingestKey),
      progress: (status) => progress(status)
    })
  )

const main = async () => {
  const schema = `accord_bench_import_${Date.now()}`
  let admin: pg.Client | undefined
  let env: Record<string, string> = { DATABASE_URL: "" }
  if (databaseUrl !== undefined) {
    admin = new pg.Client({ connectionString: databaseUrl })
    await admin.connect()
    await admin.query(`CREATE SCHEMA ${schema}`)
    const url = new URL(databaseUrl)
    url.searchParams.set("options", `-csearch_path=${schema}`)
    env = { DATABASE_URL: url.toString() }
  }
  const storage = databaseUrl === undefined ? "PGlite (default durability)" : "PostgreSQL"
  let server = startServer(env)
  try {
    const file = join(dir, "events.ndjson")
    const crashFile = join(dir, "crash.ndjson")
    await Promise.all([writeFile(file, "bulk", events), writeFile(crashFile, "crash", crashEvents), ready()])

    const routeRate = await perEventRoute()
    const started = performance.now()
    const status = await importFile(file)
    const importRate = events / ((performance.now() - started) / 1000)
    console.log(`\nBulk import on ${storage} (machine loaded by other work: compare the ratio, not the figures)`)
    console.log(`  per-event route (baseline), ${baselineEvents} events, 32 senders: ${routeRate.toFixed(0)} events/s`)
    console.log(
      `  bulk import, ${events} events: ${importRate.toFixed(0)} events/s (${(importRate / routeRate).toFixed(2)}x the route); ` +
        `${status.accepted} accepted, ${status.duplicates} duplicate, ${status.refused} refused, state ${status.state}`
    )

    // kill -9 in the middle of an import, start again, resume with the same client
    let killed = false
    const killing = importFile(crashFile, (progress) => {
      if (!killed && progress.lines_committed >= crashEvents / 3) {
        killed = true
        server.kill("SIGKILL")
      }
    }).then(
      () => "finished before the kill",
      (error: unknown) => String(error)
    )
    const outcome = await killing
    await stop(server, "SIGKILL")
    server = startServer(env)
    await ready()
    const before = await fetch(`${base}/api/events/imports/${BulkImport.importIdOf(crashFile)}`, {
      headers: { authorization: `Bearer ${ingestKey}` }
    }).then((r) => r.json() as Promise<BulkImport.ImportStatus>)
    const resumed = await importFile(crashFile)
    let stored = "(count not available on PGlite while the server holds it)"
    if (admin !== undefined) {
      const { rows } = await admin.query(
        `SELECT count(*)::int AS total, count(DISTINCT event_id)::int AS distinct_ids
           FROM ${schema}.accord_events WHERE event_id LIKE 'crash:%'`
      )
      stored = `${rows[0].total} rows, ${rows[0].distinct_ids} distinct event_ids`
    }
    console.log(
      `  kill -9 + resume, ${crashEvents} events: killed at ${before.lines_committed} committed lines (${outcome.slice(0, 60)}); ` +
        `resumed to ${resumed.lines_committed} lines, ${resumed.accepted} accepted, ${resumed.duplicates} duplicate; stored: ${stored}`
    )
  } finally {
    await stop(server, "SIGTERM")
    if (admin !== undefined) {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.end()
    }
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
