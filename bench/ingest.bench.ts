/**
 * Direct API ingest throughput: autocannon (32 connections, every request a valid, distinct event)
 * against the Accord Node server, side by side in the same run with the baseline: a minimal raw
 * `node:http` + `pg` handler inserting one row per request (bench/ingest-baseline-server.mjs).
 * Both on the same PostgreSQL (DATABASE_URL, each run in a fresh schema); Accord also on PGlite.
 *
 * Every Accord 202 is sent only after its event is committed (group commit); the bench checks that
 * the number of stored events equals the number of 202 answers.
 *
 * Every server first takes `BENCH_WARMUP_SECONDS` (3) of the same load, outside its measured
 * seconds; Accord's rows also print those first seconds (the cold server: the first thing a
 * developer's own load test meets).
 *
 * Also measured in the same run, as references rather than baselines: `GET /healthz` on the Accord
 * server (its HTTP stack alone) and the least a coalescing server can do
 * (bench/ingest-coalescing-server.mjs: parse, queue, one multi-row insert, answer), which bounds
 * what any group-committing implementation that does more per event reaches on the machine. That
 * reference runs twice: as fast as it answers, then paced at the rate Accord reached in the same
 * run, so its CPU per event is also shown at Accord's rate.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import pg from "pg"
import { build, imageNodeFlags } from "./build.ts"
import { monotonic, recordPhase } from "./phases.ts"

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
/**
 * Seconds of the same load, unmeasured, each server takes before its measured seconds
 * (`BENCH_WARMUP_SECONDS`): the figures are a warm server's, whichever server runs first.
 */
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3)
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
  readonly cpu?: CpuPerEvent | undefined
}

/** CPU time per answered request (µs), over the load phase only. */
interface CpuPerEvent {
  readonly server: number
  readonly database?: number | undefined
  readonly load: number
}

/**
 * CPU accounting. The server's CPU is read from /proc (user + system ticks); PostgreSQL's is the
 * sum over the backends serving the server under test, found by their `application_name` (other
 * sessions on the same database, like other test runs, are not counted; PostgreSQL's background
 * writers are not either); the load generator's is this process's own (autocannon runs here).
 */
const clockTicksPerSecond = 100
const processTicks = (pid: number): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return Number(fields[11]) + Number(fields[12]) // utime, stime (fields 14 and 15 of stat)
  } catch {
    return 0
  }
}
const backendPids = async (
  admin: pg.Client | undefined,
  applicationName: string | undefined
): Promise<ReadonlyArray<number>> =>
  admin === undefined || applicationName === undefined
    ? []
    : (await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [applicationName])).rows.map(
        (row) => Number(row.pid)
      )

interface CpuProbe {
  readonly serverPid: number
  readonly admin?: pg.Client | undefined
  readonly applicationName?: string | undefined
}

const measured = async (probe: CpuProbe, run: () => Promise<Figures>): Promise<Figures> => {
  // The pool connects lazily, so backends are listed before and after the load; one that appears
  // during the load is counted from zero (its whole life is within the load). One that closes
  // during the load is missed.
  const before = new Map<number, number>()
  for (const pid of await backendPids(probe.admin, probe.applicationName)) before.set(pid, processTicks(pid))
  const serverBefore = processTicks(probe.serverPid)
  const loadBefore = process.cpuUsage()
  const start = monotonic()
  const figures = await run()
  const end = monotonic()
  const loadUsage = process.cpuUsage(loadBefore)
  const serverTicks = processTicks(probe.serverPid) - serverBefore
  let databaseTicks = 0
  const after = await backendPids(probe.admin, probe.applicationName)
  for (const pid of after) databaseTicks += processTicks(pid) - (before.get(pid) ?? 0)
  const answered = Math.max(1, figures.ok + figures.errors)
  recordPhase({
    label: figures.label.trim(),
    units: answered,
    start,
    end,
    processes: {
      server: [probe.serverPid],
      ...(probe.applicationName === undefined ? {} : { PostgreSQL: [...new Set([...before.keys(), ...after])] }),
      "load generator": [process.pid]
    }
  })
  const perEvent = (ticks: number) => ((ticks / clockTicksPerSecond) * 1e6) / answered
  return {
    ...figures,
    cpu: {
      server: perEvent(serverTicks),
      database: probe.applicationName === undefined ? undefined : perEvent(databaseTicks),
      load: (loadUsage.user + loadUsage.system) / answered
    }
  }
}

const withApplicationName = (databaseUrl: string, applicationName: string): string => {
  const url = new URL(databaseUrl)
  url.searchParams.set("application_name", applicationName)
  return url.toString()
}

const waitFor = async (url: string, anyAnswer = false, ms = 120_000) => {
  const end = Date.now() + ms
  while (Date.now() < end) {
    try {
      const status = (await fetch(url)).status
      if (anyAnswer || status < 500) return
    } catch {
      /* not up yet */
    }
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
      error
        ? reject(error)
        : resolve({
            label,
            rps: result.requests.average,
            p50: result.latency.p50,
            p99: result.latency.p99,
            ok: result["2xx"],
            errors: result.errors + result.non2xx
          })
    )
  })

/** `rate`: requests per second over all connections (autocannon's `overallRate`); as fast as answered without it. */
const load = (
  url: string,
  headers: Record<string, string>,
  label: string,
  okStatus: number,
  duration = seconds,
  rate?: number
): Promise<Figures> =>
  new Promise((resolve, reject) => {
    let n = 0
    const started = Date.now()
    let ok = 0
    const instance = autocannon(
      {
        url,
        connections,
        duration,
        ...(rate === undefined ? {} : { overallRate: rate }),
        requests: [
          {
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
          }
        ]
      } as any,
      (error: unknown, result: any) => {
        if (error) return reject(error)
        resolve({
          label,
          rps: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          ok,
          errors: result.errors + result.non2xx
        })
      }
    )
    void instance
  })

/**
 * `BENCH_CPU_PROF=dir`: the Accord server runs under `--cpu-prof`, its profile written to `dir`;
 * the `/healthz` phase is skipped so the profile's last `BENCH_SECONDS` are the ingest load.
 * `BENCH_ONLY=postgres` or `BENCH_ONLY=pglite` runs one database only.
 */
const cpuProfDir = process.env.BENCH_CPU_PROF || undefined
const only = process.env.BENCH_ONLY || undefined
/** The server as the image ships it (bench/build.ts); `BENCH_TSX=1` runs it through tsx. */
const server = build(["runtimes/node/main.ts"])

const accord = async (
  label: string,
  env: Record<string, string>,
  count: () => Promise<number>,
  database?: { readonly admin: pg.Client; readonly applicationName: string }
): Promise<ReadonlyArray<Figures>> => {
  const p = port++
  const profile = cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`]
  const child = spawn(process.execPath, [...imageNodeFlags(), ...profile, ...server.args("runtimes/node/main.ts")], {
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
    const ingestUrl = `http://127.0.0.1:${p}/api/events/ingest`
    const cold = await warmUp(
      ingestUrl,
      { authorization: `Bearer ${created.secret}` },
      `  its first ${warmupSeconds} s (cold, no CPU figures)`
    )
    const storedBefore = await count()
    const figures = await measured(
      { serverPid: child.pid!, admin: database?.admin, applicationName: database?.applicationName },
      () => load(ingestUrl, { authorization: `Bearer ${created.secret}` }, label, 202)
    )
    const stored = storedBefore < 0 ? undefined : (await count()) - storedBefore
    const first = cold === undefined ? [] : [cold]
    if (cpuProfDir !== undefined) return [{ ...figures, stored }, ...first]
    const health = await measured({ serverPid: child.pid! }, () =>
      ceiling(`http://127.0.0.1:${p}/healthz`, "  same server, GET /healthz (ceiling)")
    )
    return [{ ...figures, stored }, ...first, health]
  } finally {
    await stop(child)
  }
}

/**
 * The load before a server's measured seconds (its figures are the cold server's); then the events
 * still in flight settle.
 */
const warmUp = async (
  url: string,
  headers: Record<string, string> = {},
  label = "warm-up"
): Promise<Figures | undefined> => {
  if (warmupSeconds <= 0) return undefined
  const figures = await load(url, headers, label, 202, warmupSeconds)
  await new Promise((r) => setTimeout(r, 500))
  return figures
}

const cpuText = (cpu: CpuPerEvent | undefined): string =>
  cpu === undefined
    ? ""
    : `  CPU µs/event: server ${cpu.server.toFixed(0)}` +
      (cpu.database === undefined ? "" : `, PostgreSQL ${cpu.database.toFixed(0)}`) +
      `, load generator ${cpu.load.toFixed(0)}`

const print = (rows: ReadonlyArray<Figures>) => {
  const base = rows[0]!
  for (const r of rows) {
    console.log(
      `  ${r.label.padEnd(38)} ${Math.round(r.rps).toString().padStart(6)} events/s (${(r.rps / base.rps).toFixed(2)}x)` +
        `  p50 ${r.p50} ms  p99 ${r.p99} ms  ok ${r.ok}  errors ${r.errors}` +
        (r.stored === undefined ? "" : `  stored ${r.stored}`) +
        cpuText(r.cpu)
    )
  }
}

/**
 * `BENCH_MODE=lock` (PostgreSQL only): Accord under autocannon's load (`connections` connections,
 * each sending its next event when the last is answered) while the events table is locked for
 * `BENCH_LOCK_SECONDS` (3) with `LOCK TABLE accord_events IN ACCESS EXCLUSIVE MODE`, from
 * `BENCH_LOCK_AT` (4) s into the run, which lasts `BENCH_SECONDS` (10) s more. Its baseline is
 * the same server in the same run before the lock. Prints the answers a second before, during and
 * after the lock, the rate of 202s in half-second windows from a second before the release to three
 * after it, the 503s and their latency, the time from the release until a 250 ms window
 * answers at least 80 % of the rate before the lock, and whether every event answered 202 is
 * stored.
 */
const lockRun = async (databaseUrl: string) => {
  const lockSeconds = Number(process.env.BENCH_LOCK_SECONDS ?? 3)
  const lockAt = Number(process.env.BENCH_LOCK_AT ?? 4) * 1000
  const schema = `accord_bench_lock_${Date.now()}`
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-csearch_path=${schema}`)
  const p = port++
  const child = spawn(process.execPath, [...imageNodeFlags(), ...server.args("runtimes/node/main.ts")], {
    env: {
      ...process.env,
      PORT: String(p),
      DATABASE_URL: url.toString(),
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ACCORD_INGEST_RATE_LIMIT: "1000000",
      LOG_LEVEL: "Error"
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
    await warmUp(`http://127.0.0.1:${p}/api/events/ingest`, { authorization: `Bearer ${created.secret}` })
    interface Answer {
      readonly at: number
      readonly status: number
      readonly millis: number
    }
    const answers: Array<Answer> = []
    const acknowledged: Array<string> = []
    const started = performance.now()
    const end = started + lockAt + seconds * 1000
    let n = 0
    const occurred = new Date(Date.now() - 60_000).toISOString()
    const load = new Promise<void>((resolve, reject) => {
      const instance = autocannon(
        {
          url: `http://127.0.0.1:${p}/api/events/ingest`,
          connections,
          duration: (end - started) / 1000,
          requests: [
            {
              method: "POST",
              headers: { authorization: `Bearer ${created.secret}`, "content-type": "application/json" },
              // One request in flight per connection: its context names the event it carries.
              setupRequest: (request: any, context: any) => {
                const i = n++
                context.eventId = `feature_used:lock:${started}:${i}`
                request.body = JSON.stringify({
                  event_name: "feature_used",
                  account_id: `acct_${i % 500}`,
                  timestamp: occurred,
                  event_id: context.eventId,
                  semantic_type: "usage",
                  event_kind: "product_action",
                  value: 1,
                  properties: { feature_key: "reports", plan: "pro", seat_count: 5 }
                })
                return request
              },
              onResponse: (status: number, _body: unknown, context: any) => {
                if (status === 202) acknowledged.push(context.eventId)
              }
            }
          ]
        } as any,
        (error: unknown) => (error ? reject(error) : resolve())
      )
      instance.on("response", (_client: unknown, status: number, _bytes: number, millis: number) => {
        answers.push({ at: performance.now() - started, status, millis })
      })
    })
    const locker = new pg.Client({ connectionString: url.toString() })
    await locker.connect()
    let lockedAt = 0
    let releasedAt = 0
    const lock = (async () => {
      await new Promise((r) => setTimeout(r, lockAt))
      await locker.query("BEGIN")
      await locker.query("LOCK TABLE accord_events IN ACCESS EXCLUSIVE MODE")
      lockedAt = performance.now() - started
      await new Promise((r) => setTimeout(r, lockSeconds * 1000))
      await locker.query("ROLLBACK")
      releasedAt = performance.now() - started
    })()
    await Promise.all([load, lock])
    await locker.end()
    const rate = (from: number, to: number, status?: number) =>
      answers.filter((a) => a.at >= from && a.at < to && (status === undefined || a.status === status)).length /
      ((to - from) / 1000)
    const before = rate(1000, lockedAt, 202)
    let recovered: number | undefined
    for (let t = releasedAt; t + 250 <= end - started; t += 50) {
      if (rate(t, t + 250, 202) >= 0.8 * before) {
        recovered = t + 250 - releasedAt
        break
      }
    }
    const refused = answers
      .filter((a) => a.status === 503)
      .map((a) => a.millis)
      .sort((a, b) => a - b)
    const other = answers.filter((a) => a.status !== 202 && a.status !== 503).length
    const stored = Number(
      (await admin.query(`SELECT count(*) FROM ${schema}.accord_events WHERE event_id = ANY($1)`, [acknowledged]))
        .rows[0].count
    )
    const percentile = (sorted: ReadonlyArray<number>, q: number) =>
      sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
    console.log(
      `\nPostgreSQL, events table locked ${lockSeconds} s (ACCESS EXCLUSIVE) at ${(lockedAt / 1000).toFixed(1)} s, autocannon ${connections} connections, storage bound ${process.env.ACCORD_STORAGE_TIMEOUT ?? "5s"}`
    )
    console.log(`  baseline: the same server before the lock  ${before.toFixed(0)} events/s answered 202`)
    console.log(
      `  during the lock                           ${rate(lockedAt, releasedAt).toFixed(0)} answers/s (${(rate(lockedAt, releasedAt) / before).toFixed(2)}x), ${rate(lockedAt, releasedAt, 202).toFixed(0)} of them 202/s`
    )
    console.log(
      `  after the release                         ${rate(releasedAt, end - started, 202).toFixed(0)} events/s (${(rate(releasedAt, end - started, 202) / before).toFixed(2)}x); back to >= 80 % of the baseline (250 ms window) ${recovered === undefined ? "never" : `${recovered.toFixed(0)} ms`} after the release`
    )
    // The rate around the release, window by window: where recovery starts and how fast it climbs.
    const windows: Array<string> = []
    for (let t = releasedAt - 1_000; t + 500 <= end - started && t < releasedAt + 3_000; t += 500) {
      const from = Math.max(t, lockedAt)
      windows.push(
        `${((t - releasedAt) / 1000).toFixed(1)}..${((t + 500 - releasedAt) / 1000).toFixed(1)} s ${rate(from, t + 500, 202).toFixed(0)}`
      )
    }
    console.log(`  events/s answered 202 around the release (seconds from it): ${windows.join(", ")}`)
    console.log(
      `  503s: ${refused.length}, latency p50 ${percentile(refused, 0.5).toFixed(0)} ms, p99 ${percentile(refused, 0.99).toFixed(0)} ms, max ${(refused.at(-1) ?? 0).toFixed(0)} ms; other answers (not 202/503): ${other}`
    )
    console.log(
      `  202 answered ${acknowledged.length}, stored ${stored}: ${stored === acknowledged.length ? "none missing" : `${acknowledged.length - stored} MISSING`}`
    )
  } finally {
    await stop(child)
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    await admin.end()
  }
}

const main = async () => {
  if (process.env.BENCH_MODE === "lock") {
    if (databaseUrl === undefined) return console.log("lock mode: SKIPPED (set DATABASE_URL)")
    console.log(
      `ingest under a table lock, node ${process.version}, Accord ${server.label}, ${new Date().toISOString()}`
    )
    return lockRun(databaseUrl)
  }
  console.log(
    `ingest, autocannon ${connections} connections, ${seconds} s each after ${warmupSeconds} s unmeasured, node ${process.version}, Accord ${server.label}, node flags of every server: ${imageNodeFlags().join(" ") || "none"}, ${new Date().toISOString()}`
  )
  if (databaseUrl !== undefined && only !== "pglite") {
    const schema = `accord_bench_${Date.now()}`
    const admin = new pg.Client({ connectionString: databaseUrl })
    await admin.connect()
    await admin.query(`CREATE SCHEMA ${schema}`)
    try {
      if (cpuProfDir !== undefined) {
        const url = new URL(databaseUrl)
        url.searchParams.set("options", `-csearch_path=${schema}`)
        url.searchParams.set("application_name", `${schema}_accord`)
        print(
          await accord(
            "Accord on PostgreSQL (profiled)",
            { DATABASE_URL: url.toString() },
            async () => Number((await admin.query(`SELECT count(*) FROM ${schema}.accord_events`)).rows[0].count),
            { admin, applicationName: `${schema}_accord` }
          )
        )
        return
      }
      const p = port++
      const baseline = spawn("node", [...imageNodeFlags(), "bench/ingest-baseline-server.mjs"], {
        env: {
          ...process.env,
          DATABASE_URL: withApplicationName(databaseUrl, `${schema}_baseline`),
          PORT: String(p),
          SCHEMA: schema
        },
        stdio: ["ignore", "ignore", "inherit"]
      })
      let base: Figures
      try {
        await waitFor(`http://127.0.0.1:${p}/`, true)
        await warmUp(`http://127.0.0.1:${p}/`)
        base = await measured({ serverPid: baseline.pid!, admin, applicationName: `${schema}_baseline` }, () =>
          load(`http://127.0.0.1:${p}/`, {}, "baseline: node:http + pg, 1 insert/req", 202)
        )
      } finally {
        await stop(baseline)
      }
      // The least a coalescing server can do (bench/ingest-coalescing-server.mjs): a bound on this
      // machine for any implementation that also validates, screens and indexes. With `rate`, paced
      // at that many events a second: its CPU per event at Accord's rate (a server answering fewer
      // events a second can spend more per event, as less is shared per wake-up and per batch; it
      // did in two runs of three).
      const reference = async (label: string, rate?: number): Promise<Figures> => {
        const q = port++
        const coalescing = spawn("node", [...imageNodeFlags(), "bench/ingest-coalescing-server.mjs"], {
          env: {
            ...process.env,
            DATABASE_URL: withApplicationName(databaseUrl, `${schema}_coalescing`),
            PORT: String(q),
            SCHEMA: schema
          },
          stdio: ["ignore", "ignore", "inherit"]
        })
        try {
          await waitFor(`http://127.0.0.1:${q}/`, true)
          await warmUp(`http://127.0.0.1:${q}/`)
          return await measured({ serverPid: coalescing.pid!, admin, applicationName: `${schema}_coalescing` }, () =>
            load(`http://127.0.0.1:${q}/`, {}, label, 202, seconds, rate)
          )
        } finally {
          await stop(coalescing)
        }
      }
      const bound = await reference("  reference: node:http + pg, coalesced")
      const url = new URL(databaseUrl)
      url.searchParams.set("options", `-csearch_path=${schema}`)
      url.searchParams.set("application_name", `${schema}_accord`)
      const ours = await accord(
        "Accord on PostgreSQL",
        { DATABASE_URL: url.toString() },
        async () => Number((await admin.query(`SELECT count(*) FROM ${schema}.accord_events`)).rows[0].count),
        { admin, applicationName: `${schema}_accord` }
      )
      const paced = await reference("    same, paced at Accord's rate", Math.max(1, Math.round(ours[0]!.rps)))
      console.log(`\nPostgreSQL`)
      print([base, ...ours, bound, paced])
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.end()
    }
  } else {
    console.log("\nPostgreSQL: SKIPPED (set DATABASE_URL)")
  }
  if (only === "postgres") return
  // Both durability modes of the embedded database in the same run, each in a new data directory:
  // the default (each commit waits for fsync) and the opt-in relaxed mode (no fsync).
  const embedded = async (label: string, durability: "full" | "relaxed"): Promise<ReadonlyArray<Figures>> => {
    const dir = mkdtempSync(join(tmpdir(), "accord-bench-ingest-"))
    try {
      return await accord(
        label,
        { DATABASE_URL: "", ACCORD_DATA_DIR: dir, ACCORD_PGLITE_DURABILITY: durability },
        async () => -1
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  const durable = await embedded("Accord on PGlite (default: fsync)", "full")
  const relaxed = await embedded("Accord on PGlite (ACCORD_PGLITE_DURABILITY=relaxed)", "relaxed")
  console.log(`\nPGlite`)
  print([...durable, ...relaxed].map((figures) => ({ ...figures, stored: undefined })))
}

main().then(
  () => server.dispose(),
  (error) => {
    server.dispose()
    console.error(error)
    process.exit(1)
  }
)
