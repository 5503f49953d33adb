/**
 * `npm run bench:routes`: each measured route of the Accord server beside what a team would write
 * by hand for the same work (bench/routes-baseline-server.mjs: node:http + pg), in one run, on the
 * same PostgreSQL (`DATABASE_URL`, a fresh schema per run):
 *
 * - `GET /healthz` against a bare node:http answer;
 * - the runtime status route (runtime session token) against a bearer token looked up by its
 *   SHA-256, then one read;
 * - the admin action read (`GET /action-requests/{id}`, admin key) against a key looked up by its
 *   SHA-256, then one read of the action with its history;
 * - completion intake (`POST …/customer-complete`, signed) against HMAC verification, a nonce
 *   claim and one update.
 *
 * Beside both, every route also runs on the bare Effect platform server
 * (bench/routes-effect-server.mjs: the baseline's same work and statements as `HttpRouter` routes
 * with `@effect/sql-pg`, no middleware), which shows what the stack Accord is built on costs by
 * itself: a floor under Accord's figure that no code of Accord's own can go below.
 *
 * Each route runs `BENCH_ROUNDS` (2) rounds, the order of the two servers alternating from round
 * to round, each after `BENCH_WARMUP_SECONDS` (2) of unmeasured load and then
 * `BENCH_WARMUP_REQUESTS` (5,000) unmeasured requests (at most `BENCH_WARMUP_MAX_SECONDS`, 60), with autocannon
 * (`BENCH_CONNECTIONS`, 16) for `BENCH_SECONDS` (5). Printed per run: throughput, p99, the server
 * process's CPU per request from /proc/<pid>/stat (user + system) and PostgreSQL's (the server's
 * backends), and Accord's ratio to the baseline of the same round. The machine's load changes from
 * round to round: compare a round's ratio, not figures across runs.
 *
 * Last, the long poll: `BENCH_LONG_POLLS` (1,000) runtimes wait at once on the status of an action
 * that does not change (`Prefer: wait=25` with its current `ETag`); printed are the server's RSS and
 * CPU while they wait beside the same server idle just before. `BENCH_ONLY=status,longpoll` picks
 * parts by name.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createHash, createHmac, randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import autocannon from "autocannon"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import { Agent, fetch as undiciFetch } from "undici"
import { ConnectionStore } from "../core/ports/ConnectionStore.ts"
import { connectorSecretRef, SecretVault } from "../core/ports/SecretVault.ts"
import { publishCatalog } from "../test/support/catalog.ts"
import { intakeInput } from "../test/support/deliveries.ts"
import { build, imageNodeFlags } from "./build.ts"
import { completion, connectionId, inSchema, processTicks, serviceLayer, workspaceId } from "./dispatch-support.ts"
import { monotonic, recordPhase } from "./phases.ts"

const seconds = Number(process.env["BENCH_SECONDS"] ?? 5)
const warmupSeconds = Number(process.env["BENCH_WARMUP_SECONDS"] ?? 2)
/**
 * Requests each server answers unmeasured before every measured run (`BENCH_WARMUP_REQUESTS`),
 * after `warmupSeconds` and within `BENCH_WARMUP_MAX_SECONDS` (60) at most. A time alone is not
 * enough on a loaded machine: there 2 s were a few hundred requests, too few for V8 to optimize
 * the server's code, and `/healthz` measured 1,786–1,827 µs per request after them against 332–499
 * µs after 20 s in the same hour.
 */
const warmupRequests = Number(process.env["BENCH_WARMUP_REQUESTS"] ?? 5000)
const warmupMaxSeconds = Number(process.env["BENCH_WARMUP_MAX_SECONDS"] ?? 60)
const rounds = Number(process.env["BENCH_ROUNDS"] ?? 2)
const connections = Number(process.env["BENCH_CONNECTIONS"] ?? 16)
/** Routes whose name contains one of these words (`BENCH_ONLY=status,admin`); all when unset. */
const only = process.env["BENCH_ONLY"]?.split(",")
/** `BENCH_CPU_PROF=dir`: the Accord server runs under `--cpu-prof`, its profile written to `dir` when it stops. */
const cpuProfDir = process.env["BENCH_CPU_PROF"] || undefined
const databaseUrl = process.env["DATABASE_URL"] || undefined
const adminKey = "bench-admin-key-0123456789abcdef0123456789"
const actionRequestId = "9d7c5b3a-1e2f-4a6b-8c0d-2e4f6a8b0c1d"
/** The master key of the Accord server (base64 of 32 bytes of 3): the bench seals its secrets with it too. */
const masterKey = Buffer.alloc(32, 3).toString("base64")
const clockTicksPerSecond = 100
/**
 * Accepted actions for the completion route to complete (`BENCH_COMPLETABLE`), taken in turn, each
 * completion with a completion id of its own: with 1, every completion goes to one action, as
 * concurrent deliveries for one action contend on its row.
 */
const completableActions = Number(process.env["BENCH_COMPLETABLE"] ?? 30_000)
/** Runtimes long-polling at once in the long-poll phase (`BENCH_LONG_POLLS`). */
const longPollClients = Number(process.env["BENCH_LONG_POLLS"] ?? 1000)

interface Figures {
  readonly rps: number
  readonly p99: number
  readonly ok: number
  readonly errors: number
  /** Server process CPU per answered request, µs. */
  readonly serverCpu: number
  /** PostgreSQL backends' CPU per answered request, µs. */
  readonly databaseCpu: number
}

interface Target {
  readonly url: string
  readonly pid: number
  readonly applicationName: string
  readonly headers: Record<string, string>
}

interface Route {
  readonly name: string
  readonly method: "GET" | "POST"
  readonly okStatus: number
  readonly accord: Target
  readonly baseline: Target
  /** The baseline's work on the bare Effect platform server (`routes-effect-server.mjs`). */
  readonly platform: Target
  /** A fresh body and its headers per request (signed routes). */
  readonly body?: (target: Which) => { readonly body: string; readonly headers: Record<string, string> }
}

const waitUp = async (url: string, ms = 120_000) => {
  const end = Date.now() + ms
  while (Date.now() < end) {
    try {
      if ((await fetch(url)).status < 500) return
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${url} did not come up`)
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

const backendTicks = async (admin: pg.Client, applicationName: string) => {
  const rows = (await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [applicationName]))
    .rows
  return new Map(rows.map((row: { pid: number }) => [Number(row.pid), processTicks(Number(row.pid))]))
}

/** Which server of a route a run measures. */
type Which = "accord" | "baseline" | "platform"

const fire = (
  route: Route,
  which: Which,
  duration: number,
  /** Stops the run once this many requests were answered (within `duration`). */
  until?: number
): Promise<autocannon.Result & { ok: number }> =>
  new Promise((resolve, reject) => {
    const target = route[which]!
    let ok = 0
    let answered = 0
    const instance = autocannon(
      {
        url: target.url,
        connections,
        duration,
        requests: [
          {
            method: route.method,
            headers: target.headers,
            ...(route.body === undefined
              ? {}
              : {
                  setupRequest: (request: any) => {
                    const { body, headers } = route.body!(which)
                    request.body = body
                    request.headers = { ...target.headers, ...headers }
                    return request
                  }
                }),
            onResponse: (status: number) => {
              if (status === route.okStatus) ok++
              if (until !== undefined && ++answered === until) instance.stop()
            }
          } as any
        ]
      },
      (error, result) => (error ? reject(error) : resolve({ ...result, ok }))
    )
  })

const measure = async (admin: pg.Client, route: Route, which: Which): Promise<Figures> => {
  const target = route[which]!
  if (warmupSeconds > 0) await fire(route, which, warmupSeconds)
  if (warmupRequests > 0) await fire(route, which, warmupMaxSeconds, warmupRequests)
  const databaseBefore = await backendTicks(admin, target.applicationName)
  const serverBefore = processTicks(target.pid)
  const start = monotonic()
  const result = await fire(route, which, seconds)
  const end = monotonic()
  const serverTicks = processTicks(target.pid) - serverBefore
  const databaseAfter = await backendTicks(admin, target.applicationName)
  let databaseTicks = 0
  for (const [pid, ticks] of databaseAfter) databaseTicks += ticks - (databaseBefore.get(pid) ?? 0)
  const answered = Math.max(1, result.requests.total)
  recordPhase({
    label: `${route.name} ${which}`,
    units: answered,
    start,
    end,
    processes: { server: [target.pid], PostgreSQL: [...databaseAfter.keys()], "load generator": [process.pid] }
  })
  const perRequest = (ticks: number) => ((ticks / clockTicksPerSecond) * 1e6) / answered
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    ok: result.ok,
    errors: result.errors + result.requests.total - result.ok,
    serverCpu: perRequest(serverTicks),
    databaseCpu: perRequest(databaseTicks)
  }
}

const row = (label: string, f: Figures) =>
  `    ${label.padEnd(9)} ${Math.round(f.rps).toString().padStart(6)} req/s  p99 ${String(f.p99).padStart(3)} ms` +
  `  server CPU ${f.serverCpu.toFixed(0).padStart(4)} µs/req  PostgreSQL ${f.databaseCpu.toFixed(0).padStart(3)} µs/req` +
  `  ok ${f.ok}  other ${f.errors}`

/**
 * Seals the secrets of an active revision of the fixture connection, as an administrator's check
 * would, and publishes the fixture catalog.
 */
const connect = async (url: string): Promise<number> => {
  const runtime = ManagedRuntime.make(serviceLayer(url, 1))
  try {
    return await runtime.runPromise(
      Effect.gen(function* () {
        const store = yield* ConnectionStore
        const vault = yield* SecretVault
        const now = Date.now()
        const { revision } = yield* store.registerRevision({
          workspaceId,
          connectionId,
          endpoint: "http://127.0.0.1:9/connector",
          now
        })
        const signing = Redacted.make("as_bench_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c")
        yield* vault.put(connectorSecretRef(connectionId, revision, "actionSigning"), signing, now)
        yield* vault.put(connectorSecretRef(connectionId, revision, "completion"), Redacted.make(completion), now)
        yield* store.activate({ connectionId, revision, now })
        // The fixture catalog the actions bind to: its evidence rules verify a completion at once.
        yield* publishCatalog(workspaceId)
        return revision
      })
    )
  } finally {
    await runtime.dispose()
  }
}

const hash = (text: string): string => createHash("sha256").update(text).digest("hex")

/** Resident memory of a process (kB), from /proc. */
const rssKb = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"))
  return Number(line?.replace(/\D+/g, "") ?? 0)
}

/**
 * `longPollClients` runtimes waiting on the status of one action that does not change (`Prefer:
 * wait=25` with its current `ETag`): the server's RSS and CPU while they wait, beside the same
 * server idle without them just before.
 */
const longPoll = async (base: string, pid: number, token: string) => {
  const url = `${base}/api/funnels/v1/runtime/actions/status/${actionRequestId}`
  const first = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  await first.text()
  const etag = first.headers.get("etag")!
  const idleSeconds = 8
  const idle = async () => {
    const ticks = processTicks(pid)
    await new Promise((r) => setTimeout(r, idleSeconds * 1000))
    return ((processTicks(pid) - ticks) / clockTicksPerSecond / idleSeconds) * 1000
  }
  const rssIdle = rssKb(pid)
  const cpuIdle = await idle()
  // Connections open slowly on a loaded machine (a full accept backlog is retried by the kernel).
  const dispatcher = new Agent({
    connections: longPollClients + 10,
    connectTimeout: 60_000,
    headersTimeout: 60_000,
    bodyTimeout: 60_000
  })
  let answered = 0
  const started = Date.now()
  // They arrive in groups of 100, 200 ms apart, as a population of browsers would, not all in one
  // instant (which overflows the accept backlog and measures the kernel's retries).
  const waiting: Array<Promise<number>> = []
  for (let i = 0; i < longPollClients; i++) {
    if (i > 0 && i % 100 === 0) await new Promise((r) => setTimeout(r, 200))
    waiting.push(
      undiciFetch(url, {
        headers: { authorization: `Bearer ${token}`, "if-none-match": etag, prefer: "wait=25" },
        dispatcher
      }).then(
        async (reply) => {
          await reply.text()
          if (Date.now() - started < 20_000) answered++
          return reply.status
        },
        () => 0
      )
    )
  }
  // Every request has arrived and been read once (on a loaded machine that takes seconds): from
  // here on they only wait, until 25 s after they were sent.
  await new Promise((r) => setTimeout(r, 12_000))
  const rssWaiting = rssKb(pid)
  const cpuWaiting = await idle()
  const statuses = await Promise.all(waiting)
  await dispatcher.close()
  console.log(`\nlong poll: ${longPollClients} runtimes waiting (Prefer: wait=25, If-None-Match current) on one action`)
  console.log(
    `    no clients   RSS ${(rssIdle / 1024).toFixed(1)} MiB  CPU ${cpuIdle.toFixed(1)} ms/s over ${idleSeconds} s`
  )
  console.log(
    `    ${longPollClients} waiting RSS ${(rssWaiting / 1024).toFixed(1)} MiB  CPU ${cpuWaiting.toFixed(1)} ms/s over ${idleSeconds} s` +
      `  (+${((rssWaiting - rssIdle) / longPollClients).toFixed(1)} kB per waiting client)`
  )
  console.log(
    `    answered within 20 s: ${answered}; statuses: ${JSON.stringify(Object.fromEntries([...new Set(statuses)].map((status) => [status === 0 ? "no answer" : status, statuses.filter((s) => s === status).length])))}`
  )
}

const main = async () => {
  if (databaseUrl === undefined) {
    console.log("bench:routes needs DATABASE_URL (PostgreSQL)")
    process.exit(1)
  }
  const server = build(["runtimes/node/main.ts"])
  const schema = `accord_routes_${Date.now()}`
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  const children: Array<ChildProcess> = []
  try {
    const accordPort = 18_800 + Math.floor(Math.random() * 500)
    const baselinePort = accordPort + 1
    const accordUrl = new URL(inSchema(databaseUrl, schema))
    accordUrl.searchParams.set("application_name", `${schema}_accord`)
    const profile = cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`]
    const accord = spawn(process.execPath, [...imageNodeFlags(), ...profile, ...server.args("runtimes/node/main.ts")], {
      env: {
        ...process.env,
        DATABASE_URL: accordUrl.toString(),
        PORT: String(accordPort),
        ACCORD_MASTER_KEY: masterKey,
        ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
        ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
        ACCORD_RUNTIME_SESSION_RATE_LIMIT: "1000000",
        ACCORD_RUNTIME_ADDRESS_RATE_LIMIT: "1000000",
        ACCORD_MAX_CONNECTIONS: "4096",
        LOG_LEVEL: "Warning"
      },
      stdio: ["ignore", "ignore", "inherit"]
    })
    children.push(accord)
    const base = `http://127.0.0.1:${accordPort}`
    await waitUp(`${base}/readyz`)
    const revision = await connect(inSchema(databaseUrl, schema))

    // One accepted action of the fixture, with a short history, for subject user_7 of acct_42.
    const input = intakeInput("acct_42")
    const providerIdempotencyKey = `pva_${hash(`customer-action-idempotency-v1\n${workspaceId}\n${actionRequestId}`)}`
    const now = Date.now()
    await admin.query(
      `INSERT INTO ${schema}.accord_actions (action_request_id, workspace_id, account_id, connection_id, revision, provider_idempotency_key, state, request, created_at, updated_at, version)
       VALUES ($1, $2, $3, $4, $5, $6, 'accepted', $7::jsonb, $8, $8, 2)`,
      [
        actionRequestId,
        workspaceId,
        "acct_42",
        connectionId,
        revision,
        providerIdempotencyKey,
        JSON.stringify(input),
        now
      ]
    )
    await admin.query(
      `INSERT INTO ${schema}.accord_action_history (workspace_id, action_request_id, seq, at, trigger, from_state, to_state, detail)
       VALUES ($3, $1, 1, $2, 'intake', NULL, 'dispatching', '{}'::jsonb), ($3, $1, 2, $2, 'acknowledgement', 'dispatching', 'accepted', '{}'::jsonb)`,
      [actionRequestId, now, workspaceId]
    )
    // Completions each complete an action of their own (one update each, as in production, where an
    // action gets one completion): a pool of accepted actions, the same for both servers.
    const completable = Array.from({ length: completableActions }, () => globalThis.crypto.randomUUID())
    const keyOf = (id: string) => `pva_${hash(`customer-action-idempotency-v1\n${workspaceId}\n${id}`)}`
    for (let i = 0; i < completable.length; i += 5000) {
      const ids = completable.slice(i, i + 5000)
      await admin.query(
        `INSERT INTO ${schema}.accord_actions (action_request_id, workspace_id, account_id, connection_id, revision, provider_idempotency_key, state, request, created_at, updated_at, version)
         SELECT id, $2, 'acct_42', $3, $4, key, 'accepted', $5::jsonb, $6, $6, 2 FROM unnest($1::text[], $7::text[]) AS t(id, key)`,
        [ids, workspaceId, connectionId, revision, JSON.stringify(input), now, ids.map(keyOf)]
      )
    }
    const session = (await fetch(`${base}/api/admin/v1/workspaces/${workspaceId}/runtime-sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        accountId: "acct_42",
        subject: "user_7",
        role: "owner",
        authorities: ["funnels.actions.request"],
        expiresInSeconds: 12 * 3600
      })
    }).then((r) => r.json())) as { token: string }

    // The baseline's own tables, holding the same action, token and key.
    await admin.query(
      `CREATE TABLE ${schema}.baseline_tokens (token_hash text PRIMARY KEY, kind text NOT NULL, account_id text, subject text, expires_at bigint)`
    )
    await admin.query(
      `CREATE TABLE ${schema}.baseline_actions (id text PRIMARY KEY, account_id text NOT NULL, subject text NOT NULL, state text NOT NULL, request jsonb NOT NULL, version integer NOT NULL)`
    )
    await admin.query(
      `CREATE TABLE ${schema}.baseline_history (action_id text NOT NULL, seq integer NOT NULL, at bigint NOT NULL, trigger text NOT NULL, from_state text, to_state text NOT NULL, PRIMARY KEY (action_id, seq))`
    )
    await admin.query(`CREATE TABLE ${schema}.baseline_nonces (nonce text PRIMARY KEY, expires_at bigint NOT NULL)`)
    await admin.query(
      `INSERT INTO ${schema}.baseline_tokens VALUES ($1, 'runtime', 'acct_42', 'user_7', $2), ($3, 'admin', NULL, NULL, NULL)`,
      [hash(session.token), now + 12 * 3600_000, hash(adminKey)]
    )
    await admin.query(
      `INSERT INTO ${schema}.baseline_actions VALUES ($1, 'acct_42', 'user_7', 'accepted', $2::jsonb, 2)`,
      [actionRequestId, JSON.stringify(input)]
    )
    for (let i = 0; i < completable.length; i += 5000)
      await admin.query(
        `INSERT INTO ${schema}.baseline_actions SELECT id, 'acct_42', 'user_7', 'accepted', $2::jsonb, 2 FROM unnest($1::text[]) AS t(id)`,
        [completable.slice(i, i + 5000), JSON.stringify(input)]
      )
    await admin.query(
      `INSERT INTO ${schema}.baseline_history VALUES ($1, 1, $2, 'intake', NULL, 'dispatching'), ($1, 2, $2, 'acknowledgement', 'dispatching', 'accepted')`,
      [actionRequestId, now]
    )
    // Targets on one server: its URL, its process and the application name of its backends.
    const targetsOn =
      (origin: string, pid: number, name: string) =>
      (path: string, headers: Record<string, string> = {}): Target => ({
        url: `${origin}${path}`,
        pid,
        applicationName: `${schema}_${name}`,
        headers
      })
    // A reference server (`script`) on `port`, on the baseline's tables; its targets once it answers.
    const startReference = async (script: string, port: number, name: string) => {
      const url = new URL(databaseUrl)
      url.searchParams.set("application_name", `${schema}_${name}`)
      const child = spawn(process.execPath, [...imageNodeFlags(), script], {
        env: {
          ...process.env,
          DATABASE_URL: url.toString(),
          PORT: String(port),
          SCHEMA: schema,
          COMPLETION_SECRET: completion
        },
        stdio: ["ignore", "ignore", "inherit"]
      })
      children.push(child)
      const origin = `http://127.0.0.1:${port}`
      await waitUp(`${origin}/healthz`)
      return targetsOn(origin, child.pid!, name)
    }
    const baselineTarget = await startReference("bench/routes-baseline-server.mjs", baselinePort, "baseline")
    const platformTarget = await startReference("bench/routes-effect-server.mjs", baselinePort + 1, "platform")
    const accordTarget = targetsOn(base, accord.pid!, "accord")
    // The baseline and the platform server complete the same actions of the baseline's table (an
    // update of an already completed row costs what the first one did).
    const next: Record<Which, number> = { accord: 0, baseline: 0, platform: 0 }
    const signedCompletion = (which: Which) => {
      const id = completable[next[which]++ % completable.length]!
      const timestamp = new Date().toISOString()
      const nonce = randomBytes(24).toString("base64url")
      const body = JSON.stringify({
        type: "service.customer_action.completion",
        protocolVersion: 1,
        workspaceId,
        actionRequestId: id,
        providerIdempotencyKey: keyOf(id),
        providerReference: "trial_ext_bench",
        completionId: `cmp_${id}_${next[which]}`,
        completedAt: timestamp,
        outcome: "succeeded",
        evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
      })
      const signature = createHmac("sha256", completion)
        .update(`service-customer-action-v1\ncompletion\n${timestamp}\n${nonce}\n`)
        .update(body)
        .digest("hex")
      return { body, timestamp, nonce, signature: `v1=${signature}` }
    }
    const routes: ReadonlyArray<Route> = [
      {
        name: "GET /healthz",
        method: "GET",
        okStatus: 200,
        accord: accordTarget("/healthz"),
        baseline: baselineTarget("/healthz"),
        platform: platformTarget("/healthz")
      },
      {
        name: "GET runtime action status (runtime token)",
        method: "GET",
        okStatus: 200,
        accord: accordTarget(`/api/funnels/v1/runtime/actions/status/${actionRequestId}`, {
          authorization: `Bearer ${session.token}`
        }),
        baseline: baselineTarget(`/status/${actionRequestId}`, { authorization: `Bearer ${session.token}` }),
        platform: platformTarget(`/status/${actionRequestId}`, { authorization: `Bearer ${session.token}` })
      },
      {
        name: "GET admin action read (admin key)",
        method: "GET",
        okStatus: 200,
        accord: accordTarget(`/api/admin/v1/workspaces/${workspaceId}/action-requests/${actionRequestId}`, {
          authorization: `Bearer ${adminKey}`
        }),
        baseline: baselineTarget(`/admin/${actionRequestId}`, { authorization: `Bearer ${adminKey}` }),
        platform: platformTarget(`/admin/${actionRequestId}`, { authorization: `Bearer ${adminKey}` })
      },
      {
        name: "POST completion intake (signed)",
        method: "POST",
        okStatus: 200,
        accord: accordTarget("/api/funnels/v1/runtime/actions/customer-complete", {
          "content-type": "application/json"
        }),
        baseline: baselineTarget("/complete", { "content-type": "application/json" }),
        platform: platformTarget("/complete", { "content-type": "application/json" }),
        body: (which) => {
          const signed = signedCompletion(which)
          return {
            body: signed.body,
            headers:
              which === "accord"
                ? {
                    "x-service-customer-action-version": "1",
                    "x-service-customer-action-timestamp": signed.timestamp,
                    "x-service-customer-action-nonce": signed.nonce,
                    "x-service-customer-action-signature": signed.signature
                  }
                : { "x-timestamp": signed.timestamp, "x-nonce": signed.nonce, "x-signature": signed.signature }
          }
        }
      }
    ]
    console.log(
      `bench:routes: autocannon ${connections} connections, ${seconds} s per run after ${warmupSeconds} s and then ${warmupRequests} requests (at most ${warmupMaxSeconds} s) unmeasured, ${rounds} rounds (order alternating), node ${process.version}, Accord ${server.label}, ${new Date().toISOString()}`
    )
    for (const route of routes) {
      if (only !== undefined && !only.some((word) => route.name.toLowerCase().includes(word))) continue
      console.log(`\n${route.name}`)
      // One request each first: a route that does not answer as expected is not measured.
      for (const which of ["baseline", "platform", "accord"] as const) {
        const target = route[which]
        const signed = route.body?.(which)
        const started = performance.now()
        const answer = await fetch(target.url, {
          method: route.method,
          headers: { ...target.headers, ...signed?.headers },
          ...(signed === undefined ? {} : { body: signed.body })
        })
        const text = await answer.text()
        if (answer.status !== route.okStatus)
          throw new Error(`${which} answered ${answer.status}: ${text.slice(0, 500)}`)
        console.log(
          `  ${which}: one request answered ${answer.status} in ${(performance.now() - started).toFixed(0)} ms`
        )
      }
      for (let round = 0; round < rounds; round++) {
        const servers: ReadonlyArray<Which> = ["baseline", "platform", "accord"]
        const order = round % 2 === 0 ? servers : [...servers].reverse()
        const figures: Partial<Record<Which, Figures>> = {}
        for (const which of order) figures[which] = await measure(admin, route, which)
        const a = figures.accord!
        const b = figures.baseline!
        const p = figures.platform!
        console.log(`  round ${round + 1} (${order.join(", then ")})`)
        console.log(row("baseline", b))
        console.log(row("Effect", p))
        console.log(row("Accord", a))
        console.log(
          `    ratio     throughput ${(a.rps / b.rps).toFixed(2)}x, server CPU per request ${(a.serverCpu / b.serverCpu).toFixed(2)}x, p99 ${(a.p99 / Math.max(1, b.p99)).toFixed(2)}x`
        )
        console.log(
          `    the bare Effect platform server: throughput ${(p.rps / b.rps).toFixed(2)}x, server CPU per request ${(p.serverCpu / b.serverCpu).toFixed(2)}x the baseline's; Accord ${(a.serverCpu / p.serverCpu).toFixed(2)}x the platform's CPU`
        )
      }
    }
    if (only === undefined || only.includes("longpoll")) await longPoll(base, accord.pid!, session.token)
  } finally {
    for (const child of children) await stop(child)
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    await admin.end()
    server.dispose()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
