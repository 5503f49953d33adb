import { execFile, spawn } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { assert, describe, it } from "@effect/vitest"
import { freePort, sleep } from "../support/ports.ts"
import { envWithoutDatabase, withFreshSchema } from "../support/postgres.ts"
import { nodeArgs } from "../../scripts/entrypoint.ts"

const run = promisify(execFile)
const root = fileURLToPath(new URL("../..", import.meta.url))
const bin = (name: string) => fileURLToPath(new URL(`../../node_modules/.bin/${name}`, import.meta.url))
const smoke = "test/runtimes/smoke/smoke.ts"

const runtimes: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["node", bin("tsx"), [smoke]],
  ["bun", bin("bun"), [smoke]],
  ["deno", bin("deno"), ["run", "--no-prompt", "--allow-read", smoke]]
]

describe("runtime smoke: core and both Crypto layers sign and verify the vectors", () => {
  for (const [runtime, command, args] of runtimes) {
    it(runtime, async () => {
      const { stdout } = await run(command, [...args], {
        cwd: root,
        timeout: 60_000,
        env: { ...process.env, NO_COLOR: "1" }
      })
      const report = JSON.parse(stdout.trim().split("\n").at(-1)!)
      assert.strictEqual(report.runtime, runtime)
      assert.isTrue(report.ok)
      assert.isAbove(report.vectorsVerified.webcrypto, 0)
      assert.strictEqual(report.vectorsVerified.webcrypto, report.vectorsVerified.nodeCrypto)
      assert.isTrue(report.commitmentOk, "the approval commitment known answer on both crypto layers")
      assert.strictEqual(report.transport, runtime === "node" ? "undici" : "node:http")
    }, 90_000)
  }
})

// --- The customer kit's Fetch handler on each runtime's own server ------------------------------

const kitSmoke = "test/runtimes/smoke/customerKit.ts"
const kitRuntimes: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["bun", bin("bun"), [kitSmoke]],
  ["deno", bin("deno"), ["run", "--no-prompt", "--allow-net=127.0.0.1", "--allow-read", "--allow-env", kitSmoke]]
]

describe("runtime smoke: the customer kit answers a handshake and an execution and delivers the signed completion", () => {
  for (const [runtime, command, args] of kitRuntimes) {
    it(runtime, async () => {
      const { stdout } = await run(command, [...args], {
        cwd: root,
        timeout: 60_000,
        env: { ...process.env, NO_COLOR: "1" }
      })
      const report = JSON.parse(stdout.trim().split("\n").at(-1)!)
      assert.deepStrictEqual(report, {
        runtime,
        ok: true,
        handshake: "ready",
        ack: "accepted",
        completion: "succeeded"
      })
    }, 90_000)
  }
})

// --- The kit's Stripe webhook handler on each runtime's own server -------------------------------

const webhookSmoke = "test/runtimes/smoke/stripeWebhook.ts"
const webhookRuntimes: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["bun", bin("bun"), [webhookSmoke]],
  // stripe is an optional peer loaded with `require` on first use, which resolves its Node build: that
  // build reads system information (OS release, home directory) for its user agent, so Deno needs --allow-sys
  [
    "deno",
    bin("deno"),
    ["run", "--no-prompt", "--allow-net=127.0.0.1", "--allow-read", "--allow-env", "--allow-sys", webhookSmoke]
  ]
]

describe("runtime smoke: the kit's Stripe webhook handler verifies over the raw body and completes from a provider read", () => {
  for (const [runtime, command, args] of webhookRuntimes) {
    it(runtime, async () => {
      const { stdout } = await run(command, [...args], {
        cwd: root,
        timeout: 60_000,
        env: { ...process.env, NO_COLOR: "1" }
      })
      const report = JSON.parse(stdout.trim().split("\n").at(-1)!)
      assert.deepStrictEqual(report, {
        runtime,
        ok: true,
        continuation: "payment",
        forged: 400,
        webhook: 200,
        completion: "succeeded"
      })
    }, 90_000)
  }
})

// --- The real server on each runtime: boots, serves, drains and stops cleanly on SIGTERM ---------

const serverWorkspaceId = "5e1f0c2a-7d3b-4c8e-9a6f-0b1c2d3e4f50"
const serverAdminKey = "runtime-smoke-bootstrap-admin-key-0123456789"

const servers: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["node", process.execPath, nodeArgs("runtimes/node/main.ts")],
  ["bun", bin("bun"), ["runtimes/bun/main.ts"]],
  ["deno", bin("deno"), ["run", "-A", "runtimes/deno/main.ts"]]
]

describe("runtime smoke: the server boots, serves, drains in-flight requests and exits 0 on SIGTERM", () => {
  for (const [runtime, command, args] of servers) {
    // On PostgreSQL (a fresh schema of its own) when DATABASE_URL is set, else on the embedded database.
    it(
      runtime,
      () =>
        withFreshSchema(async (databaseUrl) => {
          const port = await freePort()
          const dataDir = await mkdtemp(join(tmpdir(), `accord-${runtime}-`))
          const child = spawn(command, [...args], {
            cwd: root,
            stdio: ["ignore", "pipe", "pipe"],
            env: {
              ...envWithoutDatabase(),
              ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
              NO_COLOR: "1",
              PORT: String(port),
              HOST: "127.0.0.1",
              ACCORD_DATA_DIR: dataDir,
              ACCORD_BOOTSTRAP_WORKSPACE_ID: serverWorkspaceId,
              ACCORD_BOOTSTRAP_ADMIN_KEY: serverAdminKey
            }
          })
          let output = ""
          child.stdout.on("data", (chunk) => (output += chunk))
          child.stderr.on("data", (chunk) => (output += chunk))
          const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
          const url = `http://127.0.0.1:${port}`
          const keys = `${url}/api/admin/v1/workspaces/${serverWorkspaceId}/api-keys`
          const headers = { authorization: `Bearer ${serverAdminKey}`, "content-type": "application/json" }
          try {
            // Generous: under the full suite a loaded machine took over 15 s just to load the sources.
            const deadline = Date.now() + 90_000
            let ready = false
            while (!ready && Date.now() < deadline && child.exitCode === null) {
              ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
                (r) => r.status === 200,
                () => false
              )
              if (!ready) await sleep(200)
            }
            assert.isTrue(ready, `not ready within 90 s:\n${output}`)

            const created = await fetch(keys, { method: "POST", headers, body: JSON.stringify({ scope: "ingest" }) })
            assert.strictEqual(created.status, 201)
            assert.match(((await created.json()) as { secret: string }).secret, /^acc_ingest_/)

            // A request still uploading its body when SIGTERM arrives is answered before the exit.
            const encoder = new TextEncoder()
            let upload!: ReadableStreamDefaultController<Uint8Array>
            const body = new ReadableStream<Uint8Array>({ start: (controller) => void (upload = controller) })
            upload.enqueue(encoder.encode('{"scope":'))
            const inFlight = fetch(keys, { method: "POST", headers, body, duplex: "half" } as RequestInit)
            await sleep(500)
            child.kill("SIGTERM")
            await sleep(500)
            upload.enqueue(encoder.encode('"developer:read"}'))
            upload.close()
            const slow = await inFlight
            assert.strictEqual(slow.status, 201, output)
            assert.match(((await slow.json()) as { secret: string }).secret, /^acc_read_/)

            const code = await Promise.race([exited, sleep(10_000).then(() => "still running")])
            assert.strictEqual(code, 0, output)
            assert.match(output.trim().split("\n").at(-1) ?? "", /message=stopped/, output)
          } finally {
            if (child.exitCode === null) child.kill("SIGKILL")
            await rm(dataDir, { recursive: true, force: true })
          }
        }),
      150_000
    )
  }
})
