/**
 * `npm run example:customer` as an operator runs it: it says where it listens, and on SIGTERM it
 * logs the stop and, once everything has closed, a last line `customer backend stopped`, then
 * exits 0. A process test: the signal handling lives in the entry itself.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { envWithoutDatabase } from "../../support/postgres.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

const root = fileURLToPath(new URL("../../..", import.meta.url))

describe("the reference backend's process", () => {
  it("logs its stop on SIGTERM, its last line once closed, and exits 0", async () => {
    const child = spawn(process.execPath, nodeArgs("examples/customer-backend/main.ts"), {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...envWithoutDatabase(),
        NO_COLOR: "1",
        PORT: "0",
        ACCORD_DATA_DIR: "memory://",
        ACCORD_WORKSPACE_ID: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
        ACCORD_ACTION_SIGNING_SECRET: "s".repeat(40),
        ACCORD_COMPLETION_SECRET: "c".repeat(40),
        // nothing listens there: the backend sends nothing before it is asked to
        ACCORD_SERVICE_URL: "http://127.0.0.1:9",
        ACCORD_ALLOW_INSECURE_ENDPOINTS: "1"
      }
    })
    let stdout = ""
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          stdout += chunk
          if (stdout.includes("customer backend listening on http://127.0.0.1:")) resolve()
        })
        void exited.then((code) => reject(new Error(`exited (${code}) before listening:\n${stdout}${stderr}`)))
      })
      child.kill("SIGTERM")
      assert.strictEqual(await exited, 0, stdout + stderr)
    } finally {
      child.kill("SIGKILL")
    }
    const lines = stdout.trim().split("\n")
    assert.include(lines, "customer backend stopping (SIGTERM): finishing work in flight", stdout)
    assert.strictEqual(lines.at(-1), "customer backend stopped", stdout)
  }, 120_000)
})
