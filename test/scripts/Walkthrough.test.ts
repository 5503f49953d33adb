/**
 * The curl walkthrough (`docs/guide-walkthrough.md`) as a newcomer pastes it: when the server fails
 * to start (its port is taken), step 1's wait stops and shows the server's error instead of waiting
 * forever. Runs step 1 as written, with only its port and where it writes moved into this test's
 * temporary folder.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { envWithoutDatabase } from "../support/postgres.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** Step 1 of the walkthrough's script: from its first line up to the line after the wait. */
const stepOne = (): string => {
  const guide = readFileSync(join(root, "docs/guide-walkthrough.md"), "utf8")
  const script = /```sh\n(# 1\. [\s\S]*?)```/.exec(guide)?.[1]
  assert.isDefined(script, "the walkthrough's script starts with step 1")
  const lines = script!.split("\n")
  const next = lines.findIndex((line) => line.startsWith("W=$ACCORD"))
  assert.isAbove(next, 0, "step 1 ends before W=$ACCORD")
  return lines.slice(0, next).join("\n")
}

describe("the curl walkthrough", () => {
  it("stops with the server's error when the server cannot start (its port is taken)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "accord-walkthrough-"))
    // Takes the port and drops every connection, so the readiness probe never succeeds there.
    const taken: Server = createServer((socket) => socket.destroy())
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, "127.0.0.1", () => resolve((taken.address() as { port: number }).port))
    )
    try {
      const script = stepOne().replaceAll("8787", String(port)).replaceAll("accord.log", join(dir, "accord.log"))
      const { code, output } = await new Promise<{ code: number; output: string }>((resolve) =>
        execFile(
          "bash",
          ["-c", script],
          // mktemp -d makes the data directory inside this test's folder
          { cwd: root, env: { ...envWithoutDatabase(), NO_COLOR: "1", TMPDIR: dir }, timeout: 150_000 },
          (error, stdout, stderr) =>
            resolve({
              code: error === null ? 0 : typeof error.code === "number" ? error.code : -1,
              output: stdout + stderr
            })
        )
      )
      assert.strictEqual(code, 0, output)
      assert.include(output, "the server did not start (its log is above)", output)
      assert.include(output, "EADDRINUSE", output)
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()))
      rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
