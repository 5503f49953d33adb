/**
 * `npm run demo` as a newcomer runs it: the whole story (server, ingest, catalog, gate, reference
 * backend, extend_trial to verified, gate unlocked) exits 0 with its numbered steps; a failing step
 * exits 1 naming the step and the answer, without a stack trace. Neither prints a secret. The output
 * is captured and shown only when an assertion fails.
 */
import { spawn } from "node:child_process"
import { createServer, type Server } from "node:net"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { envWithoutDatabase } from "../support/postgres.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** Runs `npm run demo -- ...args`; resolves with its exit code and everything it printed. */
const runDemo = (args: ReadonlyArray<string> = []) =>
  new Promise<{ code: number | null; output: string }>((resolve) => {
    const npm = spawn("npm", ["run", "demo", "--silent", "--", ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...envWithoutDatabase(), NO_COLOR: "1" }
    })
    let output = ""
    npm.stdout.on("data", (chunk) => (output += chunk))
    npm.stderr.on("data", (chunk) => (output += chunk))
    npm.once("exit", (code) => resolve({ code, output }))
  })

/** No key of any kind and no stack frame in what the demo printed. */
const assertNothingSecret = (output: string) => {
  assert.notMatch(output, /acc_ingest_|demo_admin_/, output)
  assert.notMatch(output, /^\s+at .+:\d+:\d+\)?$/m, output)
}

/**
 * Only ends a hung demo. The whole story starts npm, the server, the reference backend and their
 * embedded databases: past 120 s on a machine shared with other test workers.
 */
const demoTimeout = 240_000

describe("npm run demo", () => {
  it(
    "runs the whole story on a throwaway embedded database and exits 0",
    async () => {
      const { code, output } = await runDemo()
      assert.strictEqual(code, 0, output)
      for (const line of [
        /^ 1\. Start the server/m,
        /POST \/api\/events\/ingest account_created -> 202 accepted/,
        /POST \/api\/events\/ingest user_logged_in -> 202 accepted/,
        /PUT \/catalog -> 201, version 1/,
        /POST \/feature-gates -> 201, gate \S+: checking/,
        /POST \/connector\/check -> 200, revision 0: active/,
        /POST \/action-requests -> 202, action [0-9a-f-]{36} \(Location: \/api\/admin\/v1\/workspaces\//,
        /dispatching\s+\(intake\)/,
        /pending\s+\(completion/,
        /verified\s+\(\w+, evidence entitlement_state/,
        /the action is verified/,
        /gate \S+: unlocked/,
        /GET http:\/\/127\.0\.0\.1:\d+\/api\/admin\/v1\/workspaces\/[0-9a-f-]{36}\/events/,
        /http:\/\/127\.0\.0\.1:\d+\/console/,
        /GET http:\/\/127\.0\.0\.1:\d+\/metrics/,
        /stopped; temporary data deleted/,
        /^Demo complete/m
      ])
        assert.match(output, line, output)
      assertNothingSecret(output)
    },
    demoTimeout
  )

  it(
    "--keep leaves both running and prints every key it made, each of which works; Ctrl-C stops both",
    async () => {
      const npm = spawn("npm", ["run", "demo", "--silent", "--", "--keep"], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...envWithoutDatabase(), NO_COLOR: "1" }
      })
      let output = ""
      npm.stderr.on("data", (chunk) => (output += chunk))
      const exited = new Promise<number | null>((resolve) => npm.once("exit", resolve))
      try {
        await new Promise<void>((resolve, reject) => {
          npm.stdout.on("data", (chunk) => {
            output += chunk
            if (/MASTER_KEY=\S+/.test(output)) resolve()
          })
          void exited.then((code) => reject(new Error(`the demo exited (${code}) before keeping:\n${output}`)))
        })
        const exported = (name: string) => new RegExp(`\\b${name}=(\\S+)`).exec(output)?.[1]
        const accord = exported("ACCORD")!
        const workspace = exported("WORKSPACE")!
        const adminKey = exported("ADMIN_KEY")!
        const ingestKey = exported("SERVICE_INGEST_API_KEY")!
        assert.match(adminKey, /^demo_admin_/, output)
        assert.match(ingestKey, /^acc_ingest_/, output)
        assert.match(exported("ACCORD_ACTION_SIGNING_SECRET") ?? "", /^[0-9a-f]{64}$/, output)
        assert.match(exported("ACCORD_COMPLETION_SECRET") ?? "", /^[0-9a-f]{64}$/, output)
        assert.strictEqual(Buffer.from(exported("ACCORD_MASTER_KEY") ?? "", "base64").length, 32, output)

        const events = await fetch(`${accord}/api/admin/v1/workspaces/${workspace}/events`, {
          headers: { authorization: `Bearer ${adminKey}` }
        })
        assert.strictEqual(events.status, 200)
        const ingested = await fetch(`${accord}/api/events/ingest`, {
          method: "POST",
          headers: { authorization: `Bearer ${ingestKey}`, "content-type": "application/json" },
          body: JSON.stringify({
            event_name: "user_logged_in",
            account_id: "acct_demo_1",
            user_id: "user_8",
            semantic_type: "login",
            timestamp: new Date().toISOString()
          })
        })
        assert.strictEqual(ingested.status, 202, await ingested.text())
      } finally {
        npm.kill("SIGINT")
      }
      assert.strictEqual(await exited, 0, output)
      assert.match(output, /stopped; temporary data deleted/, output)
    },
    demoTimeout
  )

  it(
    "a failing step (the server's port is taken) exits 1 naming the step and the answer",
    async () => {
      // Takes the port and drops every connection (an unread socket would keep `close` waiting).
      const taken: Server = createServer((socket) => socket.destroy())
      const port = await new Promise<number>((resolve) =>
        taken.listen(0, "127.0.0.1", () => resolve((taken.address() as { port: number }).port))
      )
      try {
        const { code, output } = await runDemo(["--port", String(port)])
        assert.strictEqual(code, 1, output)
        assert.match(output, /FAILED at step 1 \(Start the server/, output)
        assert.match(output, /the server exited \(1\)/, output)
        assert.match(output, /EADDRINUSE/, output)
        assertNothingSecret(output)
      } finally {
        await new Promise<void>((resolve) => taken.close(() => resolve()))
      }
    },
    demoTimeout
  )
})
