/**
 * `npm run demo`: the whole story on a throwaway embedded database, as numbered steps.
 *
 * Starts the server (`runtimes/node/main.ts`, a fresh temporary `ACCORD_DATA_DIR`, its own master key,
 * a bootstrapped workspace and administrator key, random free ports), creates an ingest key and sends
 * two Direct API events, publishes a catalog, creates a feature gate, starts the reference customer
 * backend (`examples/customer-backend/main.ts`) and connects it, dispatches an `extend_trial`, waits
 * for it to become `verified` (the catalog names only `entitlement_state` evidence, so it goes
 * `pending` -> `verified` when the backend's `entitlement_active` event arrives), shows the gate
 * `unlocked`, prints the URLs to look at, and stops both processes with SIGTERM.
 *
 * `--keep` leaves both running until Ctrl-C and prints every key it made (administrator, ingest,
 * connector secrets, master key) as `export` lines. `--port N` puts the server on port N. Any failure prints
 * the step and the answer and exits 1: never a stack trace, never a secret. Nothing here touches
 * `./.accord-data` or `DATABASE_URL`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes, randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { nodeArgs } from "./entrypoint.ts"

const root = fileURLToPath(new URL("..", import.meta.url))
const usage = "usage: npm run demo [-- [--keep] [--port N]]"

/** A failed step: what was asked and what came back (never a secret: see `scrub`). */
class DemoFailure {
  constructor(readonly answer: string) {}
}

const args = process.argv.slice(2)
if (args.includes("--help") || args.includes("-h")) {
  console.log(
    `${usage}\n\n  --keep     leave the server and the reference backend running until Ctrl-C\n  --port N   the server's port (default: a random free one)`
  )
  process.exit(0)
}
const keep = args.includes("--keep")
const portArg = args.indexOf("--port")
const unknown = args.filter((a, i) => a !== "--keep" && a !== "--port" && !(portArg >= 0 && i === portArg + 1))
const fixedPort = portArg >= 0 ? Number(args[portArg + 1]) : undefined
if (
  unknown.length > 0 ||
  (fixedPort !== undefined && !(Number.isInteger(fixedPort) && fixedPort > 0 && fixedPort < 65536))
) {
  console.error(usage)
  process.exit(2)
}

// Everything generated for this run; all of it dies with the temporary directory.
const dir = mkdtempSync(join(tmpdir(), "accord-demo-"))
const workspaceId = randomUUID()
const adminKey = `demo_admin_${randomBytes(24).toString("hex")}`
const masterKey = randomBytes(32).toString("base64")
const actionSigningSecret = randomBytes(32).toString("hex")
const completionSecret = randomBytes(32).toString("hex")
let ingestKey = ""
const secrets = () => [adminKey, masterKey, actionSigningSecret, completionSecret, ingestKey].filter((s) => s !== "")

/** Replaces every secret of this run, wherever it appears, before anything is printed. */
const scrub = (text: string): string => secrets().reduce((t, s) => t.split(s).join("<redacted>"), text)

const accountId = "acct_demo_1"
const featureKey = "extended_trial"
const ids = {
  offerId: randomUUID(),
  offerVersionId: randomUUID(),
  actionId: randomUUID(),
  actionVersionId: randomUUID(),
  decisionId: randomUUID(),
  journeyId: randomUUID()
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// ---- the two child processes ------------------------------------------------------------------

interface Child {
  readonly name: string
  readonly process: ChildProcess
  /** The last lines it printed (for a failure report, scrubbed). */
  readonly lines: Array<string>
  /** Whether it ever printed a line containing `text` (its own "listening on" line, say). */
  readonly printed: (text: string) => boolean
}
const children: Array<Child> = []

/** `node` running `entry` (from the build when it is fresh, else through tsx) with `env` on top of ours minus `DATABASE_URL` (the demo is embedded only). */
const spawnNode = (name: string, entry: string, env: Record<string, string>): Child => {
  const { DATABASE_URL: _database, PORT: _port, HOST: _host, ACCORD_MASTER_KEY: _key, ...inherited } = process.env
  const child = spawn(process.execPath, [...nodeArgs(entry)], {
    cwd: root,
    env: { ...inherited, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const lines: Array<string> = []
  let everything = ""
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n")) if (line.trim() !== "") lines.push(line)
    if (lines.length > 40) lines.splice(0, lines.length - 40)
    if (everything.length < 64 * 1024) everything += chunk.toString()
  }
  child.stdout!.on("data", collect)
  child.stderr!.on("data", collect)
  const printed = (text: string) => everything.includes(text)
  const started = { name, process: child, lines, printed }
  children.push(started)
  return started
}

const exited = (child: Child) => child.process.exitCode !== null || child.process.signalCode !== null

const exitedReport = (child: Child) =>
  `the ${child.name} exited (${child.process.exitCode ?? child.process.signalCode}); its last lines:\n` +
  child.lines
    .slice(-12)
    .map((line) => `      ${line}`)
    .join("\n")

/** SIGTERM to every child still running; SIGKILL after 15 s. Resolves when all have exited. */
const stopChildren = async (): Promise<void> => {
  await Promise.all(
    children.map(async (child) => {
      if (exited(child)) return
      const gone = new Promise<void>((resolve) => child.process.once("exit", () => resolve()))
      child.process.kill("SIGTERM")
      const ended = await Promise.race([gone.then(() => true), sleep(15_000).then(() => false)])
      if (!ended) {
        child.process.kill("SIGKILL")
        await gone
      }
    })
  )
}

// ---- HTTP --------------------------------------------------------------------------------------

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

const call = async (
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}
): Promise<Answer> => {
  const method = init.method ?? "GET"
  try {
    const response = await fetch(url, {
      method,
      headers: { ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: AbortSignal.timeout(15_000)
    })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      // not JSON: reported as text
    }
    return { status: response.status, headers: response.headers, text, json }
  } catch (error) {
    throw new DemoFailure(`${method} ${url}: no answer (${(error as Error).name})`)
  }
}

/** Fails the step unless the answer has `status`. */
const expect = (what: string, answer: Answer, status: number): Answer => {
  if (answer.status !== status)
    throw new DemoFailure(`${what} answered ${answer.status} (expected ${status}): ${answer.text.slice(0, 1500)}`)
  return answer
}

/** Polls `probe` every 100 ms until it returns a value; fails naming `what` after `ms`. */
const until = async <A>(
  what: string,
  ms: number,
  probe: () => Promise<A | undefined>,
  watch: ReadonlyArray<Child> = []
): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    for (const child of watch) if (exited(child)) throw new DemoFailure(exitedReport(child))
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new DemoFailure(`timed out after ${ms / 1000} s waiting for ${what}`)
    await sleep(100)
  }
}

// ---- output ------------------------------------------------------------------------------------

let accordUrl = ""
let stepNumber = 0
let stepTitle = ""
const step = (title: string) => {
  stepNumber++
  stepTitle = title
  console.log(`\n${String(stepNumber).padStart(2)}. ${title}`)
}
const say = (line: string) => console.log(`    ${scrub(line)}`)

// ---- the story ---------------------------------------------------------------------------------

const demo = async (): Promise<void> => {
  const port = fixedPort ?? (await freePort())
  const backendPort = await freePort()
  const accord = `http://127.0.0.1:${port}`
  accordUrl = accord
  const ws = `${accord}/api/admin/v1/workspaces/${workspaceId}`
  const admin = { authorization: `Bearer ${adminKey}` }
  console.log(`Accord demo: the whole story on a throwaway embedded database in ${dir}`)

  step("Start the server (embedded database, a new workspace and administrator key)")
  const started = Date.now()
  say("(the first start of an embedded database takes a few seconds)")
  const server = spawnNode("server", "runtimes/node/main.ts", {
    PORT: String(port),
    HOST: "127.0.0.1",
    ACCORD_DATA_DIR: join(dir, "accord"),
    ACCORD_MASTER_KEY: masterKey,
    ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
    ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
    ACCORD_ALLOW_INSECURE_ENDPOINTS: "1"
  })
  await until(
    "GET /readyz to answer 200",
    90_000,
    async () => {
      // Only our own server counts: a free port can be taken by another process before the server
      // binds it, and then that process would answer (the server itself fails with EADDRINUSE).
      if (!server.printed(`listening on ${accord}`)) return undefined
      const ready = await fetch(`${accord}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.status === 200,
        () => false
      )
      return ready ? true : undefined
    },
    [server]
  )
  say(`${accord} is ready (${((Date.now() - started) / 1000).toFixed(1)} s); workspace ${workspaceId}`)

  step("Create an ingest key (Settings > Integrations > Direct API) and send two events")
  const key = expect(
    "POST /api-keys",
    await call(`${ws}/api-keys`, { method: "POST", headers: admin, body: { scope: "ingest", name: "demo" } }),
    201
  )
  ingestKey = key.json.secret
  say(
    `POST /api-keys -> 201, key ${key.json.id} of scope ${key.json.scope} (its secret is shown once; kept by the demo)`
  )
  const now = Date.now()
  const events = [
    {
      event_name: "account_created",
      account_id: accountId,
      timestamp: new Date(now - 60_000).toISOString(),
      event_id: "demo_account_created_1",
      properties: {
        plan: "pro",
        account_status: "trialing",
        is_in_trial: true,
        trial_ends_at: new Date(now + 3 * 86_400_000).toISOString()
      }
    },
    {
      event_name: "user_logged_in",
      account_id: accountId,
      user_id: "user_7",
      semantic_type: "login",
      timestamp: new Date(now - 30_000).toISOString(),
      event_id: "demo_user_logged_in_1"
    }
  ]
  for (const event of events) {
    const sent = expect(
      `POST /api/events/ingest (${event.event_name})`,
      await call(`${accord}/api/events/ingest`, {
        method: "POST",
        headers: { authorization: `Bearer ${ingestKey}` },
        body: event
      }),
      202
    )
    say(`POST /api/events/ingest ${event.event_name} -> 202 ${sent.json.status}`)
  }

  step("Publish the catalog: an extend_trial action verified by entitlement_state, its decision and offer")
  const catalog = {
    offers: [{ offerId: ids.offerId, offerVersionId: ids.offerVersionId, price: null }],
    actions: [
      {
        actionId: ids.actionId,
        actionVersionId: ids.actionVersionId,
        key: "extend_trial_14",
        family: "extend_trial",
        evidence: ["entitlement_state"],
        frequency: { limit: 1, windowSeconds: 2_592_000 }
      }
    ],
    decisions: [
      {
        decisionId: ids.decisionId,
        journeyId: ids.journeyId,
        actionIds: [ids.actionId],
        offerIds: [ids.offerId],
        accountStatuses: ["trialing"]
      }
    ]
  }
  const published = expect(
    "PUT /catalog",
    await call(`${ws}/catalog`, { method: "PUT", headers: admin, body: catalog }),
    201
  )
  const publishedVersionId: string = published.json.publishedVersionId
  say(`PUT /catalog -> 201, version ${published.json.version} (${publishedVersionId})`)

  step(`Create a feature gate: ${featureKey} for ${accountId} on this journey and version`)
  const gate = expect(
    "POST /feature-gates",
    await call(`${ws}/feature-gates`, {
      method: "POST",
      headers: admin,
      body: {
        accountId,
        journeyId: ids.journeyId,
        versionId: publishedVersionId,
        featureKey,
        startedAt: new Date(Date.now() - 1_000).toISOString()
      }
    }),
    201
  )
  say(`POST /feature-gates -> 201, gate ${gate.json.id}: ${gate.json.state}`)

  step("Start the reference customer backend and connect it (Setup > Connect payment backend)")
  const endpoint = `http://127.0.0.1:${backendPort}/connector`
  const registered = expect(
    "PUT /connector",
    await call(`${ws}/connector`, {
      method: "PUT",
      headers: admin,
      body: { endpoint, actionSigningSecret, completionSecret }
    }),
    201
  )
  say(`PUT /connector ${endpoint} -> 201, revision ${registered.json.revision}: ${registered.json.state}`)
  const backend = spawnNode("reference backend", "examples/customer-backend/main.ts", {
    PORT: String(backendPort),
    HOST: "127.0.0.1",
    ACCORD_WORKSPACE_ID: workspaceId,
    ACCORD_ACTION_SIGNING_SECRET: actionSigningSecret,
    ACCORD_COMPLETION_SECRET: completionSecret,
    ACCORD_CONNECTION_REVISION: String(registered.json.revision),
    ACCORD_SERVICE_URL: accord,
    ACCORD_ALLOW_INSECURE_ENDPOINTS: "1",
    SERVICE_INGEST_API_KEY: ingestKey,
    ACCORD_DATA_DIR: join(dir, "customer"),
    EXAMPLE_FEATURE_KEY: featureKey
  })
  await until(
    "the reference backend to listen",
    90_000,
    async () => {
      if (!backend.printed(`listening on http://127.0.0.1:${backendPort}`)) return undefined
      const up = await fetch(`http://127.0.0.1:${backendPort}/entitlements/${accountId}`, {
        signal: AbortSignal.timeout(2_000)
      }).then(
        (r) => r.status === 200,
        () => false
      )
      return up ? true : undefined
    },
    [server, backend]
  )
  say(`reference backend listening on http://127.0.0.1:${backendPort}`)
  const checked = expect(
    "POST /connector/check",
    await call(`${ws}/connector/check`, { method: "POST", headers: admin, body: {} }),
    200
  )
  if (checked.json.state !== "active")
    throw new DemoFailure(`POST /connector/check answered state ${checked.json.state}: ${checked.text.slice(0, 1500)}`)
  say(`POST /connector/check -> 200, revision ${checked.json.revision}: active`)

  step("Dispatch an extend_trial (POST /action-requests with an Idempotency-Key)")
  const intake = {
    accountId,
    action: {
      id: ids.actionId,
      key: "extend_trial_14",
      operation: {
        family: "extend_trial",
        extensionDays: 14,
        trialRef: { entityKey: "sub_demo_1", entityKind: "subscription", version: 1 }
      },
      safeTerms: { confirmation: "Extend your trial by 14 days?", label: "Extend trial" }
    },
    actor: { authority: "billing_owner", roleKey: "owner", subjectId: "user_7" },
    binding: { decisionId: ids.decisionId, journeyId: ids.journeyId, offerId: ids.offerId, publishedVersionId }
  }
  const created = expect(
    "POST /action-requests",
    await call(`${ws}/action-requests`, {
      method: "POST",
      headers: { ...admin, "idempotency-key": `demo-${accountId}-extend-trial` },
      body: intake
    }),
    202
  )
  const actionRequestId: string = created.json.actionRequestId
  say(`POST /action-requests -> 202, action ${actionRequestId} (Location: ${created.headers.get("location")})`)

  step("Wait for verified: the backend extends the trial, sends entitlement_active and completes")
  say("(verified only once the service holds the entitlement_active event itself: pending until then)")
  let seen = 0
  const final = await until(
    "the action to be verified",
    60_000,
    async () => {
      const status = expect(
        "GET /action-requests/{id}",
        await call(`${ws}/action-requests/${actionRequestId}`, { headers: admin }),
        200
      )
      const history: Array<{
        trigger: string
        toState: string
        detail?: { evidence?: { source?: string; standing?: string }; passedThrough?: Array<string> }
      }> = status.json.history ?? []
      for (const entry of history.slice(seen)) {
        // A completion whose evidence the service already holds moves through `pending` in one step.
        for (const state of entry.detail?.passedThrough ?? [])
          say(`${state.padEnd(12)} (${entry.trigger}, passed through)`)
        const evidence = entry.detail?.evidence
        const named =
          evidence?.source === undefined
            ? ""
            : `, evidence ${evidence.source}${evidence.standing === undefined ? "" : ` ${evidence.standing}`}`
        say(`${entry.toState.padEnd(12)} (${entry.trigger}${named})`)
      }
      seen = Math.max(seen, history.length)
      if (
        ["blocked", "failed", "rejected", "expired", "cancelled", "needs_review", "unknown_outcome"].includes(
          status.json.state
        )
      ) {
        throw new DemoFailure(`the action ended ${status.json.state}: ${status.text.slice(0, 1500)}`)
      }
      return status.json.state === "verified" ? status.json : undefined
    },
    [server, backend]
  )
  say(`the action is ${final.state}`)

  step("The feature gate unlocks on the same entitlement_active event")
  const unlocked = await until(
    "the gate to unlock",
    30_000,
    async () => {
      const current = expect(
        "GET /feature-gates/{id}",
        await call(`${ws}/feature-gates/${gate.json.id}`, { headers: admin }),
        200
      )
      return current.json.state === "unlocked" ? current.json : undefined
    },
    [server, backend]
  )
  say(`gate ${unlocked.id}: unlocked (by stored event ${unlocked.unlockEventId})`)

  step("Look around (Authorization: Bearer <the administrator key>)")
  say(`GET ${ws}/action-requests/${actionRequestId}`)
  say(`GET ${ws}/events`)
  say(`GET ${ws}/accounts/${accountId}`)
  say(`    ${accord}/console`)
  say(`GET ${accord}/metrics`)
}

const cleanUp = async () => {
  await stopChildren()
  rmSync(dir, { recursive: true, force: true })
}

const main = async (): Promise<number> => {
  let interrupted = false
  const onSignal = () => {
    interrupted = true
    console.log("\nStopping both processes (SIGTERM) ...")
    void cleanUp().then(() => {
      console.log("    stopped; temporary data deleted")
      process.exit(keep ? 0 : 130)
    })
  }
  process.once("SIGINT", onSignal)
  process.once("SIGTERM", onSignal)
  try {
    await demo()
  } catch (error) {
    if (interrupted) return 130
    const answer = error instanceof DemoFailure ? error.answer : `unexpected ${(error as Error)?.name ?? "error"}`
    console.error(`\nFAILED at step ${stepNumber} (${stepTitle}):\n    ${scrub(answer)}`)
    await cleanUp()
    return 1
  }
  if (keep) {
    console.log(`\nBoth processes keep running; Ctrl-C stops them and deletes ${dir}.`)
    // Every key this run made, all throwaway keys of a throwaway database, printed only when asked
    // to keep it running: the administrator key for the URLs and the console, the ingest key for
    // more events, the connector's secrets for `accord customer doctor`, the master key that seals them.
    console.log("Every key this demo made (they die with it):")
    console.log(`    export ACCORD=${accordUrl} WORKSPACE=${workspaceId} ADMIN_KEY=${adminKey}`)
    console.log(`    export SERVICE_INGEST_API_KEY=${ingestKey}    # scope ingest: POST /api/events/ingest`)
    console.log(
      `    export ACCORD_ACTION_SIGNING_SECRET=${actionSigningSecret} ACCORD_COMPLETION_SECRET=${completionSecret}    # the connector, revision 0`
    )
    console.log(`    export ACCORD_MASTER_KEY=${masterKey}    # seals the stored connector secrets`)
    await new Promise(() => {})
  }
  step("Stop both processes (SIGTERM)")
  await cleanUp()
  say("stopped; temporary data deleted")
  console.log("\nDemo complete: an extend_trial went from intake to verified, and its gate unlocked.")
  return 0
}

// Exit explicitly: a socket a timed-out probe left half-open must not keep the demo alive.
process.exit(await main())
