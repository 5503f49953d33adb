/**
 * `npm run bench:crash` (needs DATABASE_URL): the customer side's crash loop. Two Accord server
 * processes (`runtimes/node/main.ts`) share one PostgreSQL schema behind a small round-robin proxy
 * (a load balancer's job: a request an instance cannot take goes to the other; with neither up it
 * answers 502, without `Retry-After`), and the reference customer backend
 * (`examples/customer-backend/main.ts`, the kit with its default leases) runs on a schema of its own.
 *
 * - Baseline, same run: `CRASH_ACTIONS / 2` actions taken in with nothing killed; the time from the
 *   last intake until every one is `verified` (the pipeline's own drain time).
 * - Crash loop: `CRASH_ACTIONS` (default 400) actions taken in while `CRASH_KILLS` (default 30)
 *   SIGKILLs hit either server instance or the backend at random (seed `CRASH_SEED`), each started
 *   again at once; the time from the last kill until every action is `verified` (target: 60 s).
 * - Duplicates: the backend's extensions per key (exactly one), and every account's trial extended
 *   exactly once (its end is its one extension's start plus its days).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { fileURLToPath } from "node:url"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import { Worker } from "../entry/kit.ts"
import {
  actionInput,
  adminHeaders,
  connectKit,
  freePort,
  kill,
  query,
  type Running,
  seeded,
  startServer,
  workspaceUrl
} from "../test/e2e/crashloopProcesses.ts"
import { secrets, workspaceId } from "../test/support/deliveries.ts"

const databaseUrl = process.env["DATABASE_URL"]
if (databaseUrl === undefined) {
  console.error("bench:crash needs DATABASE_URL (a PostgreSQL it may create schemas in)")
  process.exit(1)
}
const actions = Number(process.env["CRASH_ACTIONS"] ?? 400)
const kills = Number(process.env["CRASH_KILLS"] ?? 30)
const seed = Number(process.env["CRASH_SEED"] ?? 44)
const random = seeded(seed)
const root = fileURLToPath(new URL("..", import.meta.url))

/** The reference backend on `port`, its storage in `db`, completing to `serviceUrl`. */
const startBackend = (db: string, port: number, serviceUrl: string, ingestKey: string): Promise<Running> => {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "examples/customer-backend/main.ts"], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: db,
      PORT: String(port),
      HOST: "127.0.0.1",
      ACCORD_WORKSPACE_ID: workspaceId,
      ACCORD_ACTION_SIGNING_SECRET: Redacted.value(secrets.actionSigning),
      ACCORD_COMPLETION_SECRET: Redacted.value(secrets.completion),
      ACCORD_SERVICE_URL: serviceUrl,
      ACCORD_ALLOW_INSECURE_ENDPOINTS: "true",
      SERVICE_INGEST_API_KEY: ingestKey
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)))
  child.stderr!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)))
  const exited = new Promise((done) => child.once("exit", (code, signal) => done(signal ?? code)))
  const running: Running = { child, exited, output: () => output.slice(-2_000) }
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (output.includes("customer backend listening")) {
        clearInterval(timer)
        resolve(running)
      }
    }, 25)
    void exited.then((how) => {
      clearInterval(timer)
      reject(new Error(`the backend exited (${String(how)}) before it was ready: ${running.output()}`))
    })
  })
}

/** Round-robin over the instances' ports; a request no instance takes is answered 502. */
const startProxy = async (ports: ReadonlyArray<number>) => {
  let turn = 0
  const forward = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    const first = turn++ % ports.length
    for (let i = 0; i < ports.length; i++) {
      const port = ports[(first + i) % ports.length]!
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([name, value]) => typeof value === "string" && name !== "host")
      ) as Record<string, string>
      const answer = await fetch(`http://127.0.0.1:${port}${req.url}`, {
        method: req.method!,
        headers,
        ...(req.method === "GET" || req.method === "HEAD" ? {} : { body })
      }).catch(() => undefined)
      if (answer === undefined) continue
      const bytes = Buffer.from(await answer.arrayBuffer())
      const out: Record<string, string> = {}
      answer.headers.forEach((value, name) => {
        if (name !== "content-length" && name !== "transfer-encoding" && name !== "connection") out[name] = value
      })
      res.writeHead(answer.status, out).end(bytes)
      return
    }
    res.writeHead(502, { "content-type": "application/json" }).end('{"error":"no instance answered"}')
  }
  const server = createServer((req, res) => void forward(req, res).catch(() => res.destroy()))
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    base: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const rootClient = new pg.Client({ connectionString: databaseUrl })
await rootClient.connect()
const suffix = randomUUID().replaceAll("-", "").slice(0, 12)
const schemas = [`crash_svc_${suffix}`, `crash_backend_${suffix}`]
for (const schema of schemas) await rootClient.query(`CREATE SCHEMA ${schema}`)
const [serverDb, backendDb] = schemas.map((schema) => {
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-csearch_path=${schema}`)
  return url.toString()
}) as [string, string]

const [portA, portB, backendPort] = [await freePort(), await freePort(), await freePort()]
const processes: { a: Running; b: Running; backend: Running } = {
  ...(await Promise.all([startServer(serverDb, portA), startServer(serverDb, portB)]).then(([a, b]) => ({ a, b }))),
  backend: undefined as unknown as Running
}
const proxy = await startProxy([portA, portB])
// The backend's key for `entitlement_active`, the evidence that verifies each action.
const keyAnswer = await fetch(`${workspaceUrl(proxy.base)}/api-keys`, {
  method: "POST",
  headers: adminHeaders,
  body: JSON.stringify({ scope: "ingest" })
})
if (keyAnswer.status !== 201 && keyAnswer.status !== 200)
  throw new Error(`POST /api-keys answered ${keyAnswer.status}: ${await keyAnswer.text()}`)
const ingestKey = ((await keyAnswer.json()) as { secret: string }).secret
processes.backend = await startBackend(backendDb, backendPort, proxy.base, ingestKey)
const restart = async (which: "a" | "b" | "backend") => {
  processes[which] =
    which === "backend"
      ? await startBackend(backendDb, backendPort, proxy.base, ingestKey)
      : await startServer(serverDb, which === "a" ? portA : portB)
}

const verified = async () =>
  Number(
    (await query<{ n: string }>(serverDb, "SELECT count(*) AS n FROM accord_actions WHERE state = 'verified'"))[0]!.n
  )
/** Waits until `total` actions are verified (at most 5 minutes); seconds since `since`. */
const allVerified = async (total: number, since: number) => {
  while ((await verified()) < total) {
    if (performance.now() - since > 300_000) return Number.POSITIVE_INFINITY
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return (performance.now() - since) / 1000
}

/** Takes actions `from`..`to - 1` in through the proxy, 4 at a time, each retried under its key until 202. */
const takeIn = async (from: number, to: number) => {
  let next = from
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < to) {
        const i = next++
        const body = JSON.stringify(actionInput(i, `crash_${suffix}`))
        for (;;) {
          const status = await fetch(`${workspaceUrl(proxy.base)}/action-requests`, {
            method: "POST",
            headers: { ...adminHeaders, "idempotency-key": `crash-${suffix}-${i}` },
            body
          }).then(
            (r) => r.status,
            () => 0
          )
          if (status === 202) break
          if (status !== 0 && status < 500) throw new Error(`intake ${i} answered ${status}`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await new Promise((resolve) => setTimeout(resolve, 10 + random() * 30))
      }
    })
  )
}

try {
  await connectKit(proxy.base, `http://127.0.0.1:${backendPort}/connector`)

  // Baseline: nothing killed.
  const calm = Math.floor(actions / 2)
  await takeIn(0, calm)
  const calmEnd = performance.now()
  const drain = await allVerified(calm, calmEnd)

  // The crash loop: kills while the actions are taken in.
  const intake = takeIn(calm, calm + actions)
  let lastKill = performance.now()
  const victims = { a: 0, b: 0, backend: 0 }
  for (let k = 0; k < kills; k++) {
    await new Promise((resolve) => setTimeout(resolve, 300 + random() * 1_200))
    const roll = random()
    const victim = roll < 0.3 ? "a" : roll < 0.6 ? "b" : "backend"
    victims[victim]++
    await kill(processes[victim])
    lastKill = performance.now()
    await restart(victim)
  }
  await intake
  const recovery = await allVerified(calm + actions, lastKill)

  const [extensions] = await query<{ n: string; keys: string }>(
    backendDb,
    "SELECT count(*) AS n, count(DISTINCT provider_idempotency_key) AS keys FROM example_trial_extensions"
  )
  const [twice] = await query<{ n: string }>(
    backendDb,
    `SELECT count(*) AS n FROM example_trials t JOIN example_trial_extensions e USING (account_id)
     WHERE t.trial_ends_at <> e.extended_at + e.extension_days::int8 * 86400000`
  )
  const duplicates = Number(extensions!.n) - Number(extensions!.keys) + Number(twice!.n)
  // The deliveries a kill cut off, by reason: each moved its action to `unknown_outcome` (the
  // request may have reached the backend: written once, when the state moved), and the action was
  // delivered again under its key until acknowledged.
  const ambiguous = await query<{ reason: string; n: string; actions: string }>(
    serverDb,
    `SELECT coalesce(detail->>'reason', '?') AS reason, count(*) AS n, count(DISTINCT action_request_id) AS actions
     FROM accord_action_history WHERE trigger = 'delivery_ambiguous' GROUP BY 1 ORDER BY 1`
  )
  const states = await query<{ state: string; n: string }>(
    serverDb,
    "SELECT state, count(*) AS n FROM accord_actions GROUP BY state ORDER BY state"
  )
  console.log(
    `bench:crash (seed ${seed}; kit leases ${Worker.defaultExecuteLeaseMillis / 1000} s, renewed every third)\n` +
      `  baseline, same run: ${calm} actions with no kill, all verified ${drain.toFixed(1)} s after the last intake\n` +
      `  crash loop: ${actions} actions, ${kills} SIGKILLs (instance A ${victims.a}, instance B ${victims.b}, backend ${victims.backend}),\n` +
      `    all verified ${recovery.toFixed(1)} s after the last kill (target 60 s)\n` +
      `  made unknown_outcome by a cut-off delivery, then delivered again under the same key: ${
        ambiguous.length === 0 ? "none" : ambiguous.map((a) => `${a.reason} ${a.n} (${a.actions} actions)`).join(", ")
      }\n` +
      `  executions: ${extensions!.n} for ${extensions!.keys} keys, ${duplicates} duplicate(s); states ${states
        .map((s) => `${s.state} ${s.n}`)
        .join(", ")}`
  )
  if (!(recovery <= 60) || duplicates !== 0) process.exitCode = 1
} finally {
  await Promise.all([kill(processes.a), kill(processes.b), kill(processes.backend)])
  await proxy.close()
  for (const schema of schemas) await rootClient.query(`DROP SCHEMA ${schema} CASCADE`)
  await rootClient.end()
}
