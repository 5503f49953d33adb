/**
 * Cost as data grows: `npm run bench:scale`. In its own database
 * (`SCALE_DATABASE`, default `accord_scale`, created on the PostgreSQL server of `DATABASE_URL`, so
 * test runs are never disturbed), one schema per size: `SCALE_SIZES` events (default 1,000,000; for 10 M, `SCALE_SIZES=1000000,10000000`)
 * across `SCALE_ACCOUNTS` accounts (default 10,000), seeded by batched `INSERT … SELECT
 * generate_series` (a progress line per batch) and kept for the next run (`SCALE_RESEED=1` seeds
 * again). Against the real server (`runtimes/node/main.ts`, exactly what `npm start` runs) at each
 * size and on an empty schema, it measures p50/p99 of `GET /events` per filter and at a deep cursor,
 * of `GET /accounts/{id}`, and ingest events/s (autocannon, 32 connections), and prints the
 * `EXPLAIN (ANALYZE, BUFFERS)` of each events query. The seeded events are a backfill: before the
 * views are measured, retention sweeps move their months out of the default partition.
 *
 * Every server runs for the whole bench and the measures are interleaved: `SCALE_ROUNDS` rounds
 * (default 3), each taking every view's `SCALE_SAMPLES` requests (default 200) from the servers one
 * request each in turn, the order reversed every request; then `SCALE_INGEST_ROUNDS` rounds
 * (default as many) of `SCALE_INGEST_SECONDS` (default 10) of ingest into each, after a
 * `CHECKPOINT`. `GET /healthz`, which reads no database, is measured the same way: the floor the
 * HTTP path and the machine's stalls put under every view. A view's p50/p99 are over all its
 * rounds' requests (each round's p99 printed beside them; against another version, the p99 ratio's
 * 95 % bootstrap interval), ingest is the median of the rounds. So a figure and the one it is
 * compared with are taken on the same machine state.
 *
 * `SCALE_BEFORE=<directory>`: a checkout of another version (with its `node_modules`) measured
 * beside this one, its server started from that directory on a database of its own
 * (`${SCALE_DATABASE}_before`, seeded the same way), and every figure printed for both.
 *
 * `npm run bench:scale -- instances` measures 1 against 2 server instances instead
 * (`bench/scale-instances.ts`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as SqlClient from "@effect/sql/SqlClient"
import autocannon from "autocannon"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import * as Database from "../adapters/sql/Database.ts"
import * as EventPartitions from "../adapters/sql/EventPartitions.ts"
import * as EventStore from "../adapters/sql/EventStore.ts"
import type { EventQuery } from "../core/ports/EventStore.ts"
import { imageNodeFlags } from "./build.ts"

// `npm run bench:scale -- instances`: throughput with 1 and 2 server instances instead.
if (process.argv.includes("instances")) {
  await import("./scale-instances.ts")
  process.exit(0)
}
const databaseUrl = process.env["DATABASE_URL"] || undefined
/** The database the bench creates and seeds (`SCALE_DATABASE`), a plain identifier. */
const database = process.env["SCALE_DATABASE"] || "accord_scale"
if (!/^[a-z_][a-z0-9_]*$/.test(database)) throw new Error("SCALE_DATABASE must be a lower-case SQL identifier")
/** Another checkout measured beside this one (`SCALE_BEFORE`). */
const beforeDir = process.env["SCALE_BEFORE"] || undefined
if (databaseUrl === undefined) {
  console.log("bench:scale needs DATABASE_URL (PostgreSQL); skipped")
  process.exit(0)
}
const sizes = (process.env["SCALE_SIZES"] ?? "1000000").split(",").map(Number)
const accounts = Number(process.env["SCALE_ACCOUNTS"] ?? 10_000)
const samples = Number(process.env["SCALE_SAMPLES"] ?? 200)
const rounds = Number(process.env["SCALE_ROUNDS"] ?? 3)
const ingestRounds = Number(process.env["SCALE_INGEST_ROUNDS"] ?? rounds)
const ingestSeconds = Number(process.env["SCALE_INGEST_SECONDS"] ?? 10)
const batch = 250_000
const workspaceId = "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11"
const adminKey = "scale-admin-key-0123456789abcdef0123456789"
const admin = { authorization: `Bearer ${adminKey}`, "content-type": "application/json" }
const day = 86_400_000
/** Seeded events span one year ending here. */
const end = Date.UTC(2026, 10, 1)
const names = ["feature_used", "login", "invoice_paid", "seat_added", "export_run"]

const scaleUrl = (db: string, schema?: string) => {
  const url = new URL(databaseUrl)
  url.pathname = `/${db}`
  if (schema !== undefined) url.searchParams.set("options", `-csearch_path=${schema}`)
  return url.toString()
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/** A version measured: its checkout and its database. */
interface Side {
  readonly label: string
  readonly dir: string
  readonly database: string
}

const server = async (side: Side, schema: string, port: number): Promise<ChildProcess> => {
  const child = spawn(process.execPath, [...imageNodeFlags(), "--import", "tsx", "runtimes/node/main.ts"], {
    cwd: side.dir,
    env: {
      ...process.env,
      DATABASE_URL: scaleUrl(side.database, schema),
      PORT: String(port),
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ACCORD_MASTER_KEY: Buffer.alloc(32, 5).toString("base64"),
      ACCORD_INGEST_RATE_LIMIT: "1000000",
      LOG_LEVEL: "Warning"
    },
    stdio: ["ignore", "ignore", "inherit"]
  })
  for (;;) {
    if (child.exitCode !== null) throw new Error("server exited")
    if (
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false
      )
    )
      return child
    await new Promise((r) => setTimeout(r, 200))
  }
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

const ingestKey = async (port: number) =>
  (
    await fetch(`http://127.0.0.1:${port}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ scope: "ingest" })
    }).then((r) => r.json() as Promise<{ secret: string }>)
  ).secret

const event = (i: number, at: number) => ({
  event_name: "feature_used",
  account_id: `acct_${i % accounts}`,
  timestamp: new Date(at).toISOString(),
  event_id: `feature_used:scale:${at}:${i}`,
  semantic_type: "usage",
  event_kind: "product_action",
  value: 1,
  properties: { feature_key: "reports", plan: "pro", seat_count: 5 }
})

/** Seeds `size` events by cloning one ingested template row, in batches, with a progress line. */
const seed = async (db: pg.Client, size: number, port: number) => {
  const key = await ingestKey(port)
  const posted = await fetch(`http://127.0.0.1:${port}/api/events/ingest`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(event(0, end - day))
  })
  if (posted.status !== 202) throw new Error(`template ingest answered ${posted.status}: ${await posted.text()}`)
  const started = performance.now()
  for (let from = 1; from <= size; from += batch) {
    const to = Math.min(size, from + batch - 1)
    // Account i % accounts; names round-robin with one rare name (1 in 1000); times spread over a year.
    await db.query(
      `INSERT INTO accord_events (id, workspace_id, event_id, account_id, event_name, occurred_at, received_at, payload_hash, body)
       SELECT 'evt_seed_' || lpad(g::text, 9, '0'), t.workspace_id, 'seed:' || g, 'acct_' || (g % $3),
              CASE WHEN g % 1000 = 0 THEN 'refund_issued' ELSE ($4::text[])[1 + g % 5] END,
              $5::int8 - ((g::int8 * 365 * 86400000) / $6::int8), $5::int8, md5(g::text),
              t.body || jsonb_build_object('account_id', 'acct_' || (g % $3), 'event_id', 'seed:' || g)
       FROM generate_series($1::int8, $2::int8) AS g, (SELECT workspace_id, body FROM accord_events LIMIT 1) AS t`,
      [from, to, accounts, names, end, size]
    )
    // Where `event_id`s are claimed in their own table (accord_event_keys), the seeded ones too.
    await db
      .query(
        `INSERT INTO accord_event_keys (workspace_id, kind, key, event_row_id, occurred_at)
         SELECT t.workspace_id, 'event_id', 'seed:' || g, 'evt_seed_' || lpad(g::text, 9, '0'),
                $3::int8 - ((g::int8 * 365 * 86400000) / $4::int8)
         FROM generate_series($1::int8, $2::int8) AS g, (SELECT workspace_id FROM accord_events LIMIT 1) AS t`,
        [from, to, end, size]
      )
      .catch((error: { code?: string }) => {
        if (error.code !== "42P01") throw error // undefined_table: a schema from before the key table
      })
    const seconds = (performance.now() - started) / 1000
    console.log(
      `  seeded ${to.toLocaleString("en")} / ${size.toLocaleString("en")} events in ${seconds.toFixed(0)} s (${Math.round(to / seconds).toLocaleString("en")}/s)`
    )
  }
  await db.query("ANALYZE")
  return (performance.now() - started) / 1000
}

/**
 * The seeded events are a backfill: their months were not prepared, so they land in the default
 * partition, and the retention sweep moves each month some workspace keeps into a partition of
 * its own, a bounded number a sweep. Runs sweeps (every event kept) until none moves a month, so
 * the views are measured on the layout a backfill settles into; answers the months moved and the
 * seconds it took. A move leaves its rows dead in the default partition until a vacuum; the
 * server leaves that to autovacuum, the bench vacuums before each sweep (through `db`, which has no
 * statement timeout) so that its figures do not depend on when autovacuum runs.
 */
const settle = async (side: Side, schema: string, db: pg.Client) => {
  const started = performance.now()
  let moved = 0
  for (;;) {
    await db.query("VACUUM ANALYZE accord_events_default")
    const created = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(
            Database.layerPg(Redacted.make(scaleUrl(side.database, schema)), { poolSize: 1 })
          )
          const sql = Context.get(context, SqlClient.SqlClient)
          const done = yield* EventPartitions.sweep(sql, { now: Date.now(), defaultRetention: "forever" })
          return done.createdPartitions.length
        })
      )
    )
    moved += created
    if (created === 0) break
  }
  await db.query("ANALYZE accord_events")
  return { moved, seconds: (performance.now() - started) / 1000 }
}

/** The latency (ms) of one GET of `path`. */
const timed = async (port: number, path: string): Promise<number> => {
  const started = performance.now()
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: admin })
  await response.arrayBuffer()
  // An unknown account is 404 (the empty table has none).
  if (response.status !== 200 && response.status !== 404) throw new Error(`${path} answered ${response.status}`)
  return performance.now() - started
}

const p50p99 = (latencies: ReadonlyArray<number>) => {
  const sorted = [...latencies].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
}

/**
 * A 95 % interval of the ratio of two samples' p99s, by bootstrap: both samples drawn again with
 * replacement, 2,000 times, from a fixed seed so that a run prints the same interval for the same
 * latencies. An interval that holds 1 does not separate the two.
 */
const p99RatioInterval = (now: ReadonlyArray<number>, then: ReadonlyArray<number>) => {
  let state = 0x5eed
  // mulberry32: a small seeded generator, enough for resampling.
  const random = () => {
    state = (state + 0x6d2b79f5) | 0
    let x = Math.imul(state ^ (state >>> 15), 1 | state)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296
  }
  const resampledP99 = (values: ReadonlyArray<number>) =>
    percentile(
      Array.from({ length: values.length }, () => values[Math.floor(random() * values.length)]!).sort((a, b) => a - b),
      99
    )
  const ratios = Array.from({ length: 2_000 }, () => resampledP99(now) / resampledP99(then)).sort((a, b) => a - b)
  return { low: percentile(ratios, 2.5), high: percentile(ratios, 97.5) }
}

const median = (values: ReadonlyArray<number>) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50
  )

const ingest = (port: number, key: string) =>
  new Promise<{ rps: number; p99: number; errors: number }>((resolve, reject) => {
    let n = 0
    const started = Date.now()
    autocannon(
      {
        url: `http://127.0.0.1:${port}/api/events/ingest`,
        connections: 32,
        duration: ingestSeconds,
        requests: [
          {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
            setupRequest: (request: any) => {
              request.body = JSON.stringify(event(n++, started - 60_000))
              return request
            }
          }
        ]
      } as any,
      (error: unknown, result: any) =>
        error
          ? reject(error)
          : resolve({ rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx })
    )
  })

const cursorOf = (occurredAt: number, id: string) =>
  Buffer.from(`${occurredAt}:${id}`).toString("base64").replaceAll("=", "")

/**
 * The queries `GET /events` runs, for EXPLAIN. On this checkout's server a page reads window by
 * window (adapters/sql/EventStore.ts `windowsOf`): the first window's statement, as it runs it.
 */
const explained = async (
  db: pg.Client,
  label: string,
  where: string,
  params: ReadonlyArray<unknown>,
  window: { readonly from?: number; readonly to?: number } | undefined
): Promise<void> => {
  const bounds = [
    ...(window?.from === undefined ? [] : [["occurred_at >=", window.from] as const]),
    ...(window?.to === undefined ? [] : [["occurred_at <", window.to] as const])
  ]
  const within = bounds.map(([condition], i) => ` AND ${condition} $${params.length + 2 + i}`).join("")
  const result = await db.query(
    `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT * FROM accord_events WHERE workspace_id = $1 ${where}${within} ORDER BY occurred_at DESC, id DESC LIMIT 50`,
    [workspaceId, ...params, ...bounds.map(([, bound]) => bound)]
  )
  console.log(
    `  EXPLAIN ${label}${window === undefined ? "" : ` (first window ${bounds.map(([c, b]) => `${c} ${new Date(b).toISOString()}`).join(", ")})`}`
  )
  for (const row of result.rows) console.log(`    ${row["QUERY PLAN"]}`)
}

/** One server measured: a side at a size (0: the empty schema). */
interface Target {
  readonly side: Side
  readonly size: number
  readonly label: string
  readonly port: number
  readonly db: pg.Client
  readonly child: ChildProcess
  readonly key: string
  readonly views: ReadonlyArray<readonly [string, (i: number) => string]>
  readonly explain: () => Promise<void>
}

/** The views of a server on `size` events; `windowed`: its pages read by time window (this checkout). */
const views = async (db: pg.Client, size: number, windowed: boolean) => {
  const total = Number((await db.query("SELECT count(*) AS n FROM accord_events")).rows[0].n)
  const ws = `/api/admin/v1/workspaces/${workspaceId}`
  const account = (i: number) => `acct_${(i * 7919) % accounts}`
  const middle = await db.query(
    "SELECT occurred_at, id FROM accord_events ORDER BY occurred_at DESC, id DESC OFFSET $1 LIMIT 1",
    [Math.floor(total / 2)]
  )
  const deep =
    middle.rows[0] === undefined ? undefined : cursorOf(Number(middle.rows[0].occurred_at), middle.rows[0].id)
  const from = new Date(end - 30 * day).toISOString()
  const to = new Date(end - 29 * day).toISOString()
  const list: Array<readonly [string, (i: number) => string]> = [
    // No database: what the HTTP path and the machine's stalls add to every view.
    ["GET /healthz (no database, the floor)", () => "/healthz"],
    ["GET /events (newest page)", () => `${ws}/events?limit=50`],
    ["GET /events?account_id", (i) => `${ws}/events?limit=50&account_id=${account(i)}`],
    ["GET /events?event_name (common)", () => `${ws}/events?limit=50&event_name=login`],
    ["GET /events?event_name (rare, 0.1 %)", () => `${ws}/events?limit=50&event_name=refund_issued`],
    ["GET /events?from&to (one day)", () => `${ws}/events?limit=50&from=${from}&to=${to}`],
    ["GET /events?account_id&event_name", (i) => `${ws}/events?limit=50&account_id=${account(i)}&event_name=login`]
  ]
  if (deep !== undefined) {
    list.push(["GET /events?cursor (middle of the table)", () => `${ws}/events?limit=50&cursor=${deep}`])
    list.push([
      "GET /events?cursor&event_name (rare, deep)",
      () => `${ws}/events?limit=50&event_name=refund_issued&cursor=${deep}`
    ])
  }
  list.push(["GET /accounts/{id}", (i) => `${ws}/accounts/${account(i)}`])
  const explain = async () => {
    if (process.env["SCALE_EXPLAIN"] === "0" || size === 0) return
    const first = (q: Omit<EventQuery, "workspaceId" | "limit">) =>
      windowed ? EventStore.windowsOf({ workspaceId, ...q }, Date.now())[0] : undefined
    await explained(db, "account_id", "AND account_id = $2", [account(1)], first({ accountId: account(1) }))
    await explained(
      db,
      "event_name (rare)",
      "AND event_name = $2",
      ["refund_issued"],
      first({ eventName: "refund_issued" })
    )
    await explained(db, "event_name (common)", "AND event_name = $2", ["login"], first({ eventName: "login" }))
    if (middle.rows[0] !== undefined) {
      const after = { occurredAt: Number(middle.rows[0].occurred_at), id: String(middle.rows[0].id) }
      await explained(
        db,
        "rare event_name at a deep cursor",
        "AND event_name = $2 AND (occurred_at, id) < ($3, $4)",
        ["refund_issued", after.occurredAt, after.id],
        first({ eventName: "refund_issued", after })
      )
    }
  }
  return { total, list, explain }
}

/** Starts `side`'s server on its schema for `size`, seeded and settled. */
const prepare = async (side: Side, size: number, port: number): Promise<Target> => {
  const schema = size === 0 ? "scale_empty" : `scale_${size}`
  const root = new pg.Client({ connectionString: scaleUrl(side.database) })
  await root.connect()
  // The empty reference: a fresh schema every run.
  if (size === 0) await root.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await root.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
  await root.end()
  const label = `${side.label === "" ? "" : `${side.label}, `}${size === 0 ? "empty" : `${size.toLocaleString("en")} events`}`
  const db = new pg.Client({ connectionString: scaleUrl(side.database, schema) })
  await db.connect()
  const child = await server(side, schema, port)
  if (size > 0) {
    const existing = Number((await db.query("SELECT count(*) AS n FROM accord_events")).rows[0].n)
    if (existing < size || process.env["SCALE_RESEED"] === "1") {
      await db.query("TRUNCATE accord_events")
      await db.query("TRUNCATE accord_event_keys").catch(() => undefined) // absent before the key table
      console.log(`${label}: seeding`)
      const seconds = await seed(db, size, port)
      console.log(`${label}: seeded ${size.toLocaleString("en")} events in ${seconds.toFixed(0)} s`)
    } else {
      console.log(`${label}: ${existing.toLocaleString("en")} events already seeded (SCALE_RESEED=1 seeds again)`)
    }
    const partitioned = await db.query(
      "SELECT 1 FROM pg_class WHERE relname = 'accord_events' AND relkind = 'p' AND relnamespace = current_schema()::regnamespace"
    )
    if (partitioned.rowCount !== 0) {
      const { moved, seconds } = await settle(side, schema, db)
      console.log(
        `${label}: the retention sweep moved ${moved} month(s) out of the default partition in ${seconds.toFixed(0)} s`
      )
    }
  }
  const { total, list, explain } = await views(db, size, side.dir === process.cwd())
  console.log(`${label}: ${total.toLocaleString("en")} events`)
  return { side, size, label, port, db, child, key: await ingestKey(port), views: list, explain }
}

const main = async () => {
  const sides: ReadonlyArray<Side> = [
    ...(beforeDir === undefined ? [] : [{ label: "before", dir: beforeDir, database: `${database}_before` }]),
    { label: beforeDir === undefined ? "" : "after", dir: process.cwd(), database }
  ]
  const root = new pg.Client({ connectionString: databaseUrl })
  await root.connect()
  for (const side of sides)
    if ((await root.query("SELECT 1 FROM pg_database WHERE datname = $1", [side.database])).rowCount === 0)
      await root.query(`CREATE DATABASE ${side.database}`)
  console.log(
    `bench:scale — sizes ${sizes.join(", ")} across ${accounts} accounts, ${rounds} round(s) of ${samples} sequential requests per view, node ${process.version}, ${new Date().toISOString()}${beforeDir === undefined ? "" : `; before: ${beforeDir}`}`
  )
  const targets: Array<Target> = []
  try {
    let port = 18_900
    for (const side of sides) for (const size of [0, ...sizes]) targets.push(await prepare(side, size, port++))
    // The views first, then the ingest rounds, so the rows ingest adds (and the autovacuum they
    // start) never overlap a view's requests. A view's latencies are kept per round.
    const latencies = targets.map(() => new Map<string, Array<ReadonlyArray<number>>>())
    const ingested = targets.map((): Array<number> => [])
    // Every view any server has, in order (the empty schema has no deep cursor).
    const names = targets.reduce<ReadonlyArray<string>>(
      (longest, t) => (t.views.length > longest.length ? t.views.map(([n]) => n) : longest),
      []
    )
    // Warm every view on every server.
    for (const target of targets)
      for (const [, path] of target.views) for (let i = 0; i < 20; i++) await timed(target.port, path(i))
    for (let round = 0; round < rounds; round++) {
      for (const name of names) {
        const taking = targets.flatMap((target, t) => {
          const view = target.views.find(([n]) => n === name)
          return view === undefined ? [] : [{ t, path: view[1], seen: [] as Array<number> }]
        })
        // One request to each server in turn, the order reversed every request, so a stall of the
        // machine falls on the servers alike rather than on whichever one was being measured.
        for (let i = 0; i < samples; i++)
          for (const take of i % 2 === round % 2 ? taking : [...taking].reverse())
            take.seen.push(await timed(targets[take.t]!.port, take.path(i)))
        for (const take of taking) {
          const seen = latencies[take.t]!
          seen.set(name, [...(seen.get(name) ?? []), take.seen])
        }
      }
      console.log(`views: round ${round + 1} of ${rounds} done`)
    }
    for (let round = 0; round < ingestRounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse()
      for (const target of order) {
        await root.query("CHECKPOINT")
        const result = await ingest(target.port, target.key)
        if (result.errors > 0) console.log(`  ${target.label}: ingest had ${result.errors} errors`)
        ingested[targets.indexOf(target)]!.push(result.rps)
      }
      console.log(`ingest: round ${round + 1} of ${ingestRounds} done`)
    }
    targets.forEach((target, t) => {
      console.log(`\n${target.label}: ${rounds} x ${samples} sequential requests per view`)
      for (const [name, byRound] of latencies[t]!) {
        const { p50, p99 } = p50p99(byRound.flat())
        console.log(
          `  ${name.padEnd(44)} p50 ${p50.toFixed(1).padStart(7)} ms   p99 ${p99.toFixed(1).padStart(7)} ms (rounds' p99 ${byRound.map((r) => p50p99(r).p99.toFixed(1)).join(", ")})`
        )
      }
      console.log(
        `  ${"POST /api/events/ingest (32 connections)".padEnd(44)} ${Math.round(median(ingested[t]!)).toString().padStart(7)} events/s (median; rounds ${ingested[t]!.map((r) => Math.round(r)).join(", ")})`
      )
    })
    const of = (side: Side, size: number) => targets.findIndex((t) => t.side === side && t.size === size)
    console.log("")
    for (const side of sides)
      for (const size of sizes) {
        const ratios = ingested[of(side, size)]!.map((rps, r) => rps / ingested[of(side, 0)]![r]!)
        console.log(
          `${side.label === "" ? "" : `${side.label}: `}ingest at ${size.toLocaleString("en")} events vs empty: ${median(ratios).toFixed(2)}x (rounds ${ratios.map((r) => r.toFixed(2)).join(", ")})`
        )
      }
    if (sides.length === 2) {
      const [before, after] = sides as [Side, Side]
      const interval = (now: ReadonlyArray<number>, then: ReadonlyArray<number>) => {
        const { low, high } = p99RatioInterval(now, then)
        return `${low.toFixed(2)}–${high.toFixed(2)}`
      }
      for (const size of sizes) {
        const b = of(before, size)
        const a = of(after, size)
        console.log(
          `\nafter vs before at ${size.toLocaleString("en")} events (< 1 is faster): p99 over all rounds and its 95 % bootstrap interval; p50; each round's p99`
        )
        for (const [name, byRound] of latencies[a]!) {
          const was = latencies[b]!.get(name)
          if (was === undefined) continue
          const now = p50p99(byRound.flat())
          const then = p50p99(was.flat())
          console.log(
            `  ${name.padEnd(44)} p99 ${(now.p99 / then.p99).toFixed(2)}x (${interval(byRound.flat(), was.flat())})   p50 ${(now.p50 / then.p50).toFixed(2)}x   rounds ${byRound.map((r, i) => (p50p99(r).p99 / p50p99(was[i]!).p99).toFixed(2)).join(", ")}`
          )
        }
        const ratios = ingested[a]!.map((rps, r) => rps / ingested[b]![r]!)
        console.log(
          `  ${"ingest".padEnd(44)} ${median(ratios).toFixed(2)}x (rounds ${ratios.map((r) => r.toFixed(2)).join(", ")})`
        )
      }
    }
    for (const target of targets) {
      if (target.size === 0) continue
      console.log(`\nEXPLAIN, ${target.label}`)
      await target.explain()
    }
  } finally {
    for (const target of targets) {
      await stop(target.child)
      await target.db.end()
    }
    await root.end()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
