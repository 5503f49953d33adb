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
 * (default 3), each taking every view's `SCALE_SAMPLES` requests (default 200) from every server in
 * turn, the order reversed each round; then as many rounds of `SCALE_INGEST_SECONDS` (default 10)
 * of ingest into each, after a `CHECKPOINT`. A view's p50/p99 are over all its rounds' requests
 * (each round's p99 printed beside them), ingest is the median of the rounds. So a figure and the
 * one it is compared with are taken on the same machine state.
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

/** The latencies (ms) of `samples` sequential GETs of `path(i)`. */
const timed = async (port: number, path: (i: number) => string): Promise<ReadonlyArray<number>> => {
  const latencies: Array<number> = []
  for (let i = 0; i < samples; i++) {
    const started = performance.now()
    const response = await fetch(`http://127.0.0.1:${port}${path(i)}`, { headers: admin })
    await response.arrayBuffer()
    // An unknown account is 404 (the empty table has none).
    if (response.status !== 200 && response.status !== 404) throw new Error(`${path(i)} answered ${response.status}`)
    latencies.push(performance.now() - started)
  }
  return latencies
}

const p50p99 = (latencies: ReadonlyArray<number>) => {
  const sorted = [...latencies].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
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

/** The queries `GET /events` runs (adapters/sql/EventStore.ts `list`), for EXPLAIN. */
const explained = (db: pg.Client, label: string, where: string, params: ReadonlyArray<unknown>): Promise<void> =>
  db
    .query(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT * FROM accord_events WHERE workspace_id = $1 ${where} ORDER BY occurred_at DESC, id DESC LIMIT 50`,
      [workspaceId, ...params]
    )
    .then((result) => {
      console.log(`  EXPLAIN ${label}`)
      for (const row of result.rows) console.log(`    ${row["QUERY PLAN"]}`)
    })

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

const views = async (db: pg.Client, size: number) => {
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
    await explained(db, "account_id", "AND account_id = $2", [account(1)])
    await explained(db, "event_name (rare)", "AND event_name = $2", ["refund_issued"])
    await explained(db, "event_name (common)", "AND event_name = $2", ["login"])
    if (middle.rows[0] !== undefined) {
      await explained(db, "rare event_name at a deep cursor", "AND event_name = $2 AND (occurred_at, id) < ($3, $4)", [
        "refund_issued",
        middle.rows[0].occurred_at,
        middle.rows[0].id
      ])
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
  const { total, list, explain } = await views(db, size)
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
    // Each view from every server in turn, the order reversed each round; then the ingest rounds,
    // so the rows ingest adds (and the autovacuum they start) never overlap a view's requests.
    // A view's latencies are kept per round.
    const latencies = targets.map(() => new Map<string, Array<ReadonlyArray<number>>>())
    const ingested = targets.map((): Array<number> => [])
    // Every view any server has, in order (the empty schema has no deep cursor).
    const names = targets.reduce<ReadonlyArray<string>>(
      (longest, t) => (t.views.length > longest.length ? t.views.map(([n]) => n) : longest),
      []
    )
    for (const target of targets) for (const [, path] of target.views) await timed(target.port, path) // warm
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse()
      for (const name of names) {
        for (const target of order) {
          const view = target.views.find(([n]) => n === name)
          if (view === undefined) continue
          const seen = latencies[targets.indexOf(target)]!
          seen.set(name, [...(seen.get(name) ?? []), await timed(target.port, view[1])])
        }
      }
      console.log(`views: round ${round + 1} of ${rounds} done`)
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse()
      for (const target of order) {
        await root.query("CHECKPOINT")
        const result = await ingest(target.port, target.key)
        if (result.errors > 0) console.log(`  ${target.label}: ingest had ${result.errors} errors`)
        ingested[targets.indexOf(target)]!.push(result.rps)
      }
      console.log(`ingest: round ${round + 1} of ${rounds} done`)
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
      for (const size of sizes) {
        const b = of(before, size)
        const a = of(after, size)
        console.log(
          `\nafter vs before at ${size.toLocaleString("en")} events (< 1 is faster): p99 over all rounds; p50; each round's p99`
        )
        for (const [name, byRound] of latencies[a]!) {
          const was = latencies[b]!.get(name)
          if (was === undefined) continue
          const now = p50p99(byRound.flat())
          const then = p50p99(was.flat())
          console.log(
            `  ${name.padEnd(44)} p99 ${(now.p99 / then.p99).toFixed(2)}x   p50 ${(now.p50 / then.p50).toFixed(2)}x   rounds ${byRound.map((r, i) => (p50p99(r).p99 / p50p99(was[i]!).p99).toFixed(2)).join(", ")}`
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
