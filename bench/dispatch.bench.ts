/**
 * Dispatch throughput: actions per second from intake to `accepted`, and the latency of each
 * (`updated_at - created_at` of the accepted action: from the time intake stamps it, after its reads
 * of the connection and the catalog, to the time the acknowledgement's transition stamps it), at each in-flight limit of `BENCH_CONCURRENCY` (default
 * 64 and 128; the baseline keeps the same number in flight), with PostgreSQL on both sides: the service in this process (core intake, the dispatcher, the node:http transport), the customer kit in a child
 * process with its own schema. Checked: every action accepted, and exactly one claimed execution
 * per action at the kit (no duplicates). Each limit runs `BENCH_ROUNDS` rounds (default 3), both
 * sides afresh in each, alternating which goes first; every round's ratio and their median are
 * printed.
 *
 * Last, the recovery times after a crash and after an outage of the customer endpoint
 * and after the database was frozen for 10 s (`dispatch-recovery.ts`; `BENCH_RECOVERY=0` leaves them
 * out, `BENCH_RECOVERY=only` runs only them, `BENCH_RECOVERY=database` only the last).
 *
 * Baseline, in the same run: a minimal pipeline without Accord — a node:http client signing each
 * request with node:crypto, one row inserted at intake and updated on the acknowledgement, against
 * a node:http peer that checks the HMAC and inserts one claim row (bench/dispatch-baseline-peer.mjs).
 */
import { createHmac, randomBytes, randomUUID } from "node:crypto"
import * as http from "node:http"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import pg from "pg"
import { intake } from "../core/connector/Intake.ts"
import { runDispatcher } from "../core/connector/Dispatcher.ts"
import { imageNodeFlags, runBuilt } from "./build.ts"
import { databaseOutage, outage, recovery } from "./dispatch-recovery.ts"
import { monotonic, recordPhase } from "./phases.ts"
import {
  actionSigning,
  backendTicks,
  connectService,
  inSchema as inSchemaOf,
  input,
  pool,
  processTicks,
  serviceLayer,
  startPeer,
  stopPeer,
  workspaceId
} from "./dispatch-support.ts"

/** This bench and the kit run compiled as the image ships Accord (bench/build.ts); `BENCH_TSX=1` runs them through tsx. */
const entry = runBuilt("bench/dispatch.bench.ts", ["bench/dispatch-kit.ts"])

const databaseUrl = process.env["DATABASE_URL"] || undefined
if (databaseUrl === undefined) {
  console.log("bench:dispatch needs DATABASE_URL (PostgreSQL on both sides); skipped")
  process.exit(0)
}
const actions = Number(process.env["BENCH_ACTIONS"] ?? 5_000)
/**
 * Actions each side runs, unmeasured, in its own processes before the measured ones (`BENCH_WARMUP`).
 * With 500, the first in-flight level measured cold code: at 64 in flight Accord's sending process
 * used 1.5x the CPU per action it used at the same level measured second (1,164 and 754 µs), the
 * baseline's 1.3x (567 and 443 µs; docs/performance.md).
 */
const warmup = Number(process.env["BENCH_WARMUP"] ?? 5_000)
/**
 * Rounds per in-flight level (`BENCH_ROUNDS`, default 3). Each round measures both sides afresh
 * (new schemas, peer processes and warm-up; both senders run in this process), the baseline first
 * in odd rounds and Accord first in even ones, and prints its ratio; the level ends with every
 * round's ratio and their median. The two sides of a pair run one after the other, and on this
 * shared machine single pairs of the same code gave ratios from 0.58x to 1.05x within 35 minutes
 * (docs/performance.md).
 */
const rounds = Math.max(1, Math.floor(Number(process.env["BENCH_ROUNDS"] ?? 3)) || 1)
/** In-flight limits to measure, each with its own baseline run: `BENCH_CONCURRENCY=64,128`. */
const recoveryLines = process.env["BENCH_RECOVERY"] ?? "1"
const concurrencies =
  recoveryLines === "only" || recoveryLines === "database"
    ? []
    : (process.env["BENCH_CONCURRENCY"] ?? "64,128").split(",").map(Number)
const admin = new pg.Client({ connectionString: databaseUrl })
await admin.connect()
/** `BENCH_ONLY=accord` or `baseline`: one side only (profiling). */
const only = process.env["BENCH_ONLY"] || undefined
/** `BENCH_TAKE_FROM_INTAKE=1`: the dispatcher takes new actions straight from intake (`runDispatcher`'s `takeFromIntake`). */
const takeFromIntake = process.env["BENCH_TAKE_FROM_INTAKE"] === "1"
/** `BENCH_CPU_PROF=dir`: the peer process (the kit or the baseline peer) runs under `--cpu-prof`, its profile written to `dir`. */
const cpuProfDir = process.env["BENCH_CPU_PROF"] || undefined

/**
 * CPU accounting per action, as in bench:ingest: this process (the sending side: intake and the
 * dispatcher, or the baseline client) from `process.cpuUsage()`, the peer process from /proc, and
 * PostgreSQL as the sum over this database's backends (other than the bench's own admin session)
 * from /proc, over the measured phase only.
 *
 * Of the sender and the peer, also their main threads' CPU (the JavaScript, from /proc; the rest is
 * V8's garbage collection helpers and libuv's pool), and how busy the sender's event loop was
 * (`performance.eventLoopUtilization()`: the share of the phase's wall time it was not waiting for
 * I/O). The amount by which the loop was busy beyond its thread's time on a core bounds the time
 * it waited for a core (or for the process's other threads, a system call, a page fault).
 */
const cpuMeter = async (peerPid: number, phase: { readonly label: string; readonly peer: string }) => {
  const backends = await backendTicks(admin)
  const peer = processTicks(peerPid)
  const peerMain = processTicks(peerPid, true)
  const selfMain = processTicks(process.pid, true)
  const self = process.cpuUsage()
  const loop = performance.eventLoopUtilization()
  const start = monotonic()
  return async (count: number): Promise<string> => {
    const end = monotonic()
    const selfUsage = process.cpuUsage(self)
    const loopBusy = performance.eventLoopUtilization(loop).utilization
    const selfMainTicks = processTicks(process.pid, true) - selfMain
    const peerTicks = processTicks(peerPid) - peer
    const peerMainTicks = processTicks(peerPid, true) - peerMain
    let database = 0
    const after = await backendTicks(admin)
    for (const [pid, ticks] of after) database += ticks - (backends.get(pid) ?? 0)
    recordPhase({
      label: phase.label,
      units: count,
      start,
      end,
      processes: {
        sender: [process.pid],
        [phase.peer]: [peerPid],
        PostgreSQL: [...new Set([...backends.keys(), ...after.keys()])]
      }
    })
    const micros = (ticks: number) => ((ticks * 10_000) / count).toFixed(0)
    const mainShare = (selfMainTicks * 10) / (Number(end - start) / 1e6)
    return (
      `CPU µs/action: sender ${((selfUsage.user + selfUsage.system) / count).toFixed(0)} (main thread ${micros(selfMainTicks)}), ` +
      `peer ${micros(peerTicks)} (main thread ${micros(peerMainTicks)}), PostgreSQL ${micros(database)}; ` +
      `sender's event loop busy ${(loopBusy * 100).toFixed(0)} % of the time, its main thread on a core ${(mainShare * 100).toFixed(0)} %`
    )
  }
}

/** Fresh schemas for one round: the service's, the kit's and the baseline's. */
const schemas = async () => {
  const suffix = randomUUID().replaceAll("-", "").slice(0, 12)
  const names = { service: `bench_service_${suffix}`, kit: `bench_kit_${suffix}`, baseline: `bench_base_${suffix}` }
  for (const schema of Object.values(names)) await admin.query(`CREATE SCHEMA ${schema}`)
  return names
}

const inSchema = (schema: string) => inSchemaOf(databaseUrl, schema)

const startChild = (script: ReadonlyArray<string>, schema: string) =>
  startPeer(script, {
    databaseUrl,
    schema,
    nodeFlags: cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`]
  })

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

interface Figures {
  readonly label: string
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly note: string
  readonly cpu: string
  /** The time an action held its in-flight slot (Little's law: in flight / rate), and for Accord its intake call's share. */
  readonly time: string
}

const inFlightMillis = (concurrency: number, count: number, elapsedMillis: number) =>
  ((concurrency * elapsedMillis) / count).toFixed(1)

const accord = async (concurrency: number, serviceSchema: string, kitSchema: string, tag: string): Promise<Figures> => {
  const kit = await startChild(entry("bench/dispatch-kit.ts"), kitSchema)
  const runtime = ManagedRuntime.make(serviceLayer(inSchema(serviceSchema), concurrency))
  const service = new pg.Client({ connectionString: inSchema(serviceSchema) })
  try {
    await connectService(runtime, kit.port)
    await service.connect()
    // Acceptances as the dispatcher reports them: the bench neither polls the database nor adds
    // load of its own to it.
    let acceptedSoFar = 0
    // Who waits for an acceptance, first come first served. Each acceptance frees one slot, so it
    // wakes one waiter: waking all of them would cost this process one promise per waiter per
    // action (64 or 128), charged to Accord's sender CPU.
    const waiting: Array<() => void> = []
    const scope = await runtime.runPromise(
      Effect.flatMap(Scope.make(), (scope) =>
        Effect.map(
          Scope.extend(
            runDispatcher({
              owner: "bench",
              concurrency,
              takeFromIntake,
              idleMillis: 20,
              onDelivery: (_, result) =>
                Effect.sync(() => {
                  if (result._tag === "Acknowledged" && result.state === "accepted") {
                    acceptedSoFar++
                    waiting.shift()?.()
                  }
                })
            }),
            scope
          ),
          () => ({ scope })
        )
      )
    )
    const acceptance = () => new Promise<void>((resolve) => waiting.push(resolve))
    // How long each measured intake call took: its reads of the connection and the catalog, then
    // its create up to the commit. The latency below starts after those reads.
    const intakeMillis: Array<number> = []
    // Closed loop, like the baseline: at most `concurrency` actions are in flight (taken in and not
    // yet accepted), so the latency is the pipeline's, not a queue's.
    const run = async (count: number, offset: number, meter?: (count: number) => Promise<string>) => {
      const started = performance.now()
      let taken = offset
      await pool(count, concurrency, async (i) => {
        while (taken - acceptedSoFar >= concurrency) await acceptance()
        taken++
        const intakeStarted = performance.now()
        await runtime.runPromise(intake(workspaceId, input(offset + i)))
        if (meter !== undefined) intakeMillis.push(performance.now() - intakeStarted)
      })
      while (acceptedSoFar < offset + count) await acceptance()
      return { elapsed: performance.now() - started, cpu: meter === undefined ? "" : await meter(count) }
    }
    await run(warmup, 0)
    const { cpu, elapsed } = await run(
      actions,
      warmup,
      await cpuMeter(kit.child.pid!, { label: `Accord, ${concurrency} in flight${tag}`, peer: "kit" })
    )
    intakeMillis.sort((a, b) => a - b)
    const intakeMean = intakeMillis.reduce((sum, ms) => sum + ms, 0) / intakeMillis.length
    const latencies = (
      await service.query(
        "SELECT updated_at - created_at AS ms FROM accord_actions WHERE state = 'accepted' ORDER BY created_at OFFSET $1",
        [warmup]
      )
    ).rows
      .map((r: { ms: string }) => Number(r.ms))
      .sort((a: number, b: number) => a - b)
    const kitDb = new pg.Client({ connectionString: inSchema(kitSchema) })
    await kitDb.connect()
    const claims = (
      await kitDb.query(
        "SELECT count(*) AS n, count(DISTINCT dedupe_key) AS d FROM accord_outbox WHERE kind = 'customer.execute'"
      )
    ).rows[0]
    await kitDb.end()
    const retried = Number(
      (await service.query("SELECT count(*) FROM accord_outbox WHERE kind = 'service.dispatch' AND attempts > 0"))
        .rows[0].count
    )
    await runtime.runPromise(Scope.close(scope.scope, Exit.void))
    return {
      label: "Accord (intake -> signed delivery -> kit claim -> verified ack -> accepted)",
      perSecond: actions / (elapsed / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      note: `${actions + warmup} actions accepted; kit executions ${claims.n} for ${claims.d} keys (duplicates: ${Number(claims.n) - Number(claims.d)}); redelivered: ${retried}`,
      cpu,
      time:
        `time in flight per action ${inFlightMillis(concurrency, actions, elapsed)} ms, of which the intake call: mean ${intakeMean.toFixed(1)} ms, ` +
        `p50 ${percentile(intakeMillis, 50).toFixed(1)} ms, p99 ${percentile(intakeMillis, 99).toFixed(1)} ms`
    }
  } finally {
    await service.end().catch(() => undefined)
    await runtime.dispose()
    await stopPeer(kit.child)
  }
}

const baseline = async (concurrency: number, baselineSchema: string, tag: string): Promise<Figures> => {
  const peer = await startChild(["bench/dispatch-baseline-peer.mjs"], baselineSchema)
  const db = new pg.Pool({ connectionString: inSchema(baselineSchema), max: 16 })
  await db.query(
    "CREATE TABLE baseline_actions (id text PRIMARY KEY, state text NOT NULL, body jsonb NOT NULL, created_at bigint NOT NULL, updated_at bigint)"
  )
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })
  const mac = (purpose: string, ts: string, nonce: string, body: Buffer) =>
    createHmac("sha256", actionSigning)
      .update(`service-customer-action-v1\n${purpose}\n${ts}\n${nonce}\n`)
      .update(body)
      .digest("hex")
  const post = (body: Buffer, headers: Record<string, string>) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port: peer.port,
          path: "/connector",
          method: "POST",
          agent,
          headers: { ...headers, "content-length": body.byteLength }
        },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })
          )
        }
      )
      req.on("error", reject)
      req.end(body)
    })
  const latencies: Array<number> = []
  const one = async (i: number) => {
    const started = performance.now()
    const id = randomUUID()
    const body = Buffer.from(
      JSON.stringify({
        ...input(i),
        type: "service.customer_action.execute",
        providerIdempotencyKey: "pva_" + id,
        requestNonce: randomBytes(24).toString("base64url")
      })
    )
    await db.query("INSERT INTO baseline_actions (id, state, body, created_at) VALUES ($1, 'dispatching', $2, $3)", [
      id,
      body.toString(),
      Date.now()
    ])
    const ts = new Date().toISOString()
    const nonce = randomBytes(24).toString("base64url")
    const res = await post(body, {
      "content-type": "application/json",
      "x-service-customer-action-timestamp": ts,
      "x-service-customer-action-nonce": nonce,
      "x-service-customer-action-signature": "v1=" + mac("dispatch_request", ts, nonce, body)
    })
    const expected =
      "v1=" +
      mac(
        "dispatch_response",
        String(res.headers["x-service-customer-action-timestamp"]),
        String(res.headers["x-service-customer-action-nonce"]),
        res.body
      )
    if (res.status !== 202 || res.headers["x-service-customer-action-signature"] !== expected)
      throw new Error("baseline peer answered badly")
    await db.query("UPDATE baseline_actions SET state = 'accepted', updated_at = $2 WHERE id = $1", [id, Date.now()])
    latencies.push(performance.now() - started)
  }
  try {
    await pool(warmup, concurrency, one)
    latencies.length = 0
    const meter = await cpuMeter(peer.child.pid!, { label: `baseline, ${concurrency} in flight${tag}`, peer: "peer" })
    const started = performance.now()
    await pool(actions, concurrency, one)
    const elapsed = performance.now() - started
    const cpu = await meter(actions)
    latencies.sort((a, b) => a - b)
    return {
      label:
        "Baseline (node:http + node:crypto HMAC + pg, one insert and one update per action; peer inserts one claim)",
      perSecond: actions / (elapsed / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      note: `${actions} actions`,
      cpu,
      time: `time in flight per action ${inFlightMillis(concurrency, actions, elapsed)} ms`
    }
  } finally {
    agent.destroy()
    await db.end()
    await stopPeer(peer.child)
  }
}

const created: Array<string> = []
try {
  console.log(
    `bench:dispatch — ${actions} actions per run after ${warmup} unmeasured, PostgreSQL on both sides (${new URL(databaseUrl).host}); service and kit ${process.env["BENCH_BUILD_DIR"] === undefined ? "through tsx" : "built as in the image"}; node flags of every process: ${imageNodeFlags().join(" ") || "none"}`
  )
  for (const concurrency of concurrencies) {
    const ratios: Array<number> = []
    for (let round = 1; round <= rounds; round++) {
      const names = await schemas()
      created.push(...Object.values(names))
      const tag = rounds === 1 ? "" : `, round ${round}`
      const runBaseline = () => (only === "accord" ? undefined : baseline(concurrency, names.baseline, tag))
      const runAccord = () => (only === "baseline" ? undefined : accord(concurrency, names.service, names.kit, tag))
      // The baseline first in odd rounds, Accord first in even ones.
      const baselineFirst = round % 2 === 1
      const first = await (baselineFirst ? runBaseline() : runAccord())
      const second = await (baselineFirst ? runAccord() : runBaseline())
      const [base, ours] = baselineFirst ? [first, second] : [second, first]
      console.log(
        `\n${concurrency} in flight${rounds === 1 ? "" : `, round ${round} of ${rounds} (${baselineFirst ? "baseline" : "Accord"} first)`}`
      )
      for (const r of [base, ours]) {
        if (r === undefined) continue
        console.log(
          `${r.label}\n  ${r.perSecond.toFixed(0)} actions/s   p50 ${r.p50.toFixed(1)} ms   p99 ${r.p99.toFixed(1)} ms   (${r.note})\n  ${r.cpu}\n  ${r.time}`
        )
      }
      if (base !== undefined && ours !== undefined) ratios.push(ours.perSecond / base.perSecond)
    }
    if (ratios.length > 1) {
      const sorted = [...ratios].sort((a, b) => a - b)
      const middle = sorted.length / 2
      const median = sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2
      console.log(
        `\n${concurrency} in flight, Accord / baseline by round: ${ratios.map((r) => `${r.toFixed(2)}x`).join(", ")}; median ${median.toFixed(2)}x`
      )
    } else if (ratios.length === 1) {
      console.log(`  Accord / baseline: ${ratios[0]!.toFixed(2)}x`)
    }
  }
  if (recoveryLines !== "0" && recoveryLines !== "database") {
    console.log(`\n${await recovery(databaseUrl)}`)
    console.log(await outage(databaseUrl))
  }
  if (recoveryLines !== "0") console.log(`\n${await databaseOutage(databaseUrl)}`)
} finally {
  for (const schema of created) await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  await admin.end()
}
