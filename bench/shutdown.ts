/**
 * Shutdown under load, measured: the Accord server (`runtimes/node/main.ts` through tsx, on
 * PostgreSQL, `ACCORD_SHUTDOWN_TIMEOUT=2s`) and, in the same run, a baseline (`node:http` + `pg`
 * with the textbook SIGTERM handling, `bench/shutdown-baseline-server.mjs`) each get four keep-alive
 * connections sending ingest events and one connection holding a body open, then SIGTERM
 * (`test/runtimes/shutdownLoad.ts`). Printed per server: time from SIGTERM to exit, answers before
 * and after the signal, keep-alive connections whose last answer said `Connection: close` and those
 * reset, new connections accepted while closing, and answers 202 missing from the database.
 *
 * `DATABASE_URL=postgres://… npm run bench:shutdown` (`RUNS=n` repeats each, default 3).
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import pg from "pg"
import { freePort, query, startServer } from "../test/e2e/crashloopProcesses.ts"
import { runShutdownUnderLoad, type ShutdownRun } from "../test/runtimes/shutdownLoad.ts"

const databaseUrl = process.env["DATABASE_URL"]
if (databaseUrl === undefined)
  throw new Error("set DATABASE_URL to a PostgreSQL database the bench may create schemas in")
const runs = Number(process.env["RUNS"] ?? "3")
const deadlineMillis = 2_000
const ingestKey = "bench-shutdown-ingest-key-0123456789abcdef012345"

const withSchema = async <A>(f: (schema: string, url: string) => Promise<A>): Promise<A> => {
  const schema = `bench_shutdown_${randomUUID().replaceAll("-", "").slice(0, 12)}`
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-csearch_path=${schema}`)
  try {
    return await f(schema, url.toString())
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    await admin.end()
  }
}

const missing = async (url: string, table: string, run: ShutdownRun): Promise<number> => {
  if (run.accepted.length === 0) return 0
  const rows = await query<{ n: string }>(
    url,
    `SELECT count(DISTINCT event_id) AS n FROM ${table} WHERE event_id IN (${run.accepted.map((id) => `'${id}'`).join(",")})`
  )
  return run.accepted.length - Number(rows[0]!.n)
}

const load = (child: Parameters<typeof runShutdownUnderLoad>[0]["child"], exited: Promise<unknown>, port: number) =>
  runShutdownUnderLoad({ child, exited, port, key: ingestKey, connections: 4, warmupAnswers: 50, giveUpMillis: 30_000 })

const accord = () =>
  withSchema(async (_, url) => {
    const port = await freePort()
    const server = await startServer(url, port, {
      ACCORD_BOOTSTRAP_INGEST_KEY: ingestKey,
      ACCORD_SHUTDOWN_TIMEOUT: `${deadlineMillis / 1000}s`,
      ACCORD_INGEST_RATE_LIMIT: "1000000"
    })
    try {
      const run = await load(server.child, server.exited, port)
      return { run, missing: await missing(url, "accord_events", run) }
    } finally {
      server.child.kill("SIGKILL")
    }
  })

const baseline = () =>
  withSchema(async (schema) => {
    const port = await freePort()
    const child = spawn(process.execPath, ["bench/shutdown-baseline-server.mjs"], {
      env: { ...process.env, PORT: String(port), SCHEMA: schema, DEADLINE_MS: String(deadlineMillis) },
      stdio: ["ignore", "pipe", "inherit"]
    })
    const exited = new Promise((done) => child.once("exit", (code, signal) => done(signal ?? code)))
    await new Promise<void>((ready) =>
      child.stdout!.on("data", (chunk) => String(chunk).includes("listening") && ready())
    )
    try {
      const run = await load(child, exited, port)
      return { run, missing: await missing(databaseUrl, `${schema}.baseline_events`, run) }
    } finally {
      child.kill("SIGKILL")
    }
  })

const line = (name: string, { run, missing }: { run: ShutdownRun; missing: number }) => {
  const closing = run.connections.filter((c) => c.answers.at(-1)?.answer.headers["connection"] === "close").length
  const reset = run.connections.filter((c) => c.error !== undefined).length
  return (
    `${name.padEnd(9)} exit ${String(run.exitMillis).padStart(5)} ms (${run.exit})  answers ${run.answeredBeforeSignal} before, ` +
    `${run.answeredAfterSignal} after SIGTERM  last answer closes ${closing}/${run.connections.length}, reset ${reset}  ` +
    `new connections accepted while closing ${run.probesAccepted}/${run.probes}  202s missing ${missing}/${run.accepted.length}  ` +
    `held body closed ${run.held.closed}`
  )
}

console.log(
  `shutdown under load: deadline ${deadlineMillis} ms, 4 keep-alive connections + 1 held body, ${runs} runs each`
)
const exits: Array<[number, number]> = []
for (let i = 0; i < runs; i++) {
  const base = await baseline()
  const ours = await accord()
  console.log(line("baseline", base))
  console.log(line("accord", ours))
  exits.push([ours.run.exitMillis, base.run.exitMillis])
}
const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const [ours, base] = [median(exits.map(([a]) => a)), median(exits.map(([, b]) => b))]
console.log(`median exit after SIGTERM: accord ${ours} ms, baseline ${base} ms (${(ours / base).toFixed(2)}x)`)
