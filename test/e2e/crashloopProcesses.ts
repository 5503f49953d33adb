/**
 * Real processes for the crash-loop and many-instance tests: the Accord server (`runtimes/node/main.ts`,
 * exactly what `npm start` runs) on PostgreSQL, and the customer kit (`crashloopKit.ts`), each on a
 * fixed loopback port so that a restarted process answers at the same address; SIGKILL and wait.
 * Free of vitest, so the benchmarks use it too.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import type { ActionIntake } from "../../core/connector/Action.ts"
import { intakeInput, secrets, workspaceId } from "../support/deliveries.ts"
import { publishCatalogHttp } from "../support/catalog.ts"
import { nodeArgs } from "../../scripts/entrypoint.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** The bootstrapped administrator key (the same as `support.ts`'s). */
export const adminKey = "e2e-admin-key-0123456789abcdef0123456789abcdef"
export const adminHeaders = { authorization: `Bearer ${adminKey}`, "content-type": "application/json" }

/** The admin routes of the test workspace on the server at `base`. */
export const workspaceUrl = (base: string): string => `${base}/api/admin/v1/workspaces/${workspaceId}`

/** `PUT /connector` with the kit's endpoint and the test secrets, then `POST /connector/check`, which must activate it. */
export const connectKit = async (base: string, endpoint: string): Promise<void> => {
  const registered = await fetch(`${workspaceUrl(base)}/connector`, {
    method: "PUT",
    headers: adminHeaders,
    body: JSON.stringify({
      endpoint,
      actionSigningSecret: Redacted.value(secrets.actionSigning),
      completionSecret: Redacted.value(secrets.completion)
    })
  })
  if (registered.status !== 201)
    throw new Error(`PUT /connector answered ${registered.status}: ${await registered.text()}`)
  const checked = await fetch(`${workspaceUrl(base)}/connector/check`, {
    method: "POST",
    headers: adminHeaders,
    body: "{}"
  })
  const state = checked.status === 200 ? ((await checked.json()) as { state: string }).state : `HTTP ${checked.status}`
  if (state !== "active") throw new Error(`the connection check ended ${state}`)
  // The fixture catalog every intake binds to (no intake before a published catalog).
  await publishCatalogHttp(base, workspaceId, adminKey)
}

/** The `i`-th action of a run: its own account and trial. */
export const actionInput = (i: number, prefix: string): ActionIntake => {
  const input = intakeInput(`acct_${prefix}_${i}`)
  const operation = {
    ...input.action.operation,
    trialRef: { entityKey: `sub_${i}`, entityKind: "subscription", version: 3 }
  }
  return { ...input, action: { ...input.action, operation } }
}

/** One master key for every server process of a test: they share the encrypted connector secrets. */
export const masterKey = Buffer.alloc(32, 11).toString("base64")

export interface Running {
  readonly child: ChildProcess
  readonly exited: Promise<unknown>
  /** The last output, for a failure message. */
  readonly output: () => string
}

/** A free loopback port (taken and released at once). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

/** Runs `args` with node, its entry from the build when that is fresh, else through tsx. */
const start = ([entry, ...rest]: readonly [string, ...Array<string>], env: NodeJS.ProcessEnv): Running => {
  const child = spawn(process.execPath, [...nodeArgs(entry), ...rest], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)))
  child.stderr!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)))
  const exited = new Promise((done) => child.once("exit", (code, signal) => done(signal ?? code)))
  return { child, exited, output: () => output.slice(-2_000) }
}

/** Resolves when `ready` does; fails if the process exits first. */
const readyOrExit = async (running: Running, what: string, ready: Promise<void>): Promise<Running> => {
  let done = false
  const failed = running.exited.then((how) => {
    if (!done) throw new Error(`${what} exited (${String(how)}) before it was ready: ${running.output()}`)
  })
  await Promise.race([ready, failed])
  done = true
  return running
}

const polled = async (probe: () => Promise<boolean>) => {
  while (!(await probe())) await new Promise((resolve) => setTimeout(resolve, 50))
}

/**
 * The Accord server on `port` with `databaseUrl`, the test workspace and admin key bootstrapped.
 */
export const startServer = (databaseUrl: string, port: number, env: Record<string, string> = {}): Promise<Running> => {
  const running = start(["runtimes/node/main.ts"], {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: "127.0.0.1",
    ACCORD_MASTER_KEY: masterKey,
    ACCORD_ALLOW_INSECURE_ENDPOINTS: "1",
    ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
    ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
    LOG_LEVEL: "Error",
    // Every completion of the kit comes from loopback: one client address for thousands of them.
    ACCORD_RUNTIME_ADDRESS_RATE_LIMIT: "1000000",
    ...env
  })
  // Ready when `GET /readyz` answers 200: storage reachable and migrated.
  return readyOrExit(
    running,
    "the server",
    polled(() =>
      fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false
      )
    )
  )
}

/** The customer kit (`crashloopKit.ts`) on `port`, its storage and host table in `databaseUrl`. */
export const startKit = (databaseUrl: string, port: number, serviceUrl: string): Promise<Running> => {
  const running = start(["test/e2e/crashloopKit.ts", databaseUrl, String(port), serviceUrl], process.env)
  return readyOrExit(
    running,
    "the kit",
    polled(async () => running.output().includes("listening "))
  )
}

/** SIGKILL and wait until the process is gone. */
export const kill = async (running: Running): Promise<void> => {
  running.child.kill("SIGKILL")
  await running.exited
}

/** Creates the kit host's table of executions. */
export const createHostTable = async (databaseUrl: string): Promise<void> => {
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  try {
    await db.query(
      "CREATE TABLE host_executions (id bigserial PRIMARY KEY, key text NOT NULL, action_request_id text NOT NULL)"
    )
  } finally {
    await db.end()
  }
}

/** One query on `databaseUrl`. */
export const query = async <R extends Record<string, unknown>>(
  databaseUrl: string,
  text: string
): Promise<Array<R>> => {
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  try {
    return (await db.query(text)).rows as Array<R>
  } finally {
    await db.end()
  }
}

/** A small seeded generator (mulberry32): a failing run can be replayed with its seed. */
export const seeded = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}
