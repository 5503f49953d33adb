/**
 * `npm start` as a user runs it: SIGTERM to the npm process (what a terminal, systemd or a container
 * runtime signals) stops the server too, within the drain time, and its last line says `stopped`.
 * The script execs the server (`exec node --import tsx …`), so npm's forwarded SIGTERM reaches it
 * and no wrapper process is left behind listening on the port.
 */
import { spawn } from "node:child_process"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { createConnection } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { freePort, sleep } from "../support/ports.ts"
import { envWithoutDatabase } from "../support/postgres.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** Whether anything accepts a TCP connection on the port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" })
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("error", () => resolve(false))
  })

describe("npm start", () => {
  it("runs node with the image CMD's node flags (Node's default young generation)", async () => {
    const dockerfile = await readFile(join(root, "Dockerfile"), "utf8")
    const cmd = JSON.parse(
      dockerfile
        .split("\n")
        .find((line) => /^CMD\s+\[/.test(line))!
        .replace(/^CMD\s+/, "")
    ) as Array<string>
    const imageFlags = cmd.slice(1, -1)
    // Node's default young generation (docs/decisions.md, "Node's young generation").
    assert.isFalse(imageFlags.some((flag) => flag.startsWith("--max-semi-space-size")))
    const start = (
      JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts["start"]!
    const startFlags = start.split(/\s+/).filter((word) => word.startsWith("--") && word !== "--import")
    assert.deepStrictEqual(startFlags, imageFlags)
  })

  it("SIGTERM to npm stops the server: nothing keeps listening and the last line says stopped", async () => {
    const port = await freePort()
    const dataDir = await mkdtemp(join(tmpdir(), "accord-npm-start-"))
    const npm = spawn("npm", ["start", "--silent"], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...envWithoutDatabase(), NO_COLOR: "1", PORT: String(port), HOST: "127.0.0.1", ACCORD_DATA_DIR: dataDir }
    })
    let output = ""
    npm.stdout.on("data", (chunk) => (output += chunk))
    npm.stderr.on("data", (chunk) => (output += chunk))
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      npm.once("exit", (code, signal) => resolve(signal ?? code))
    )
    try {
      // Generous: a first embedded start on a loaded machine can take tens of seconds.
      const deadline = Date.now() + 90_000
      let ready = false
      while (!ready && Date.now() < deadline && npm.exitCode === null) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.status === 200,
          () => false
        )
        if (!ready) await sleep(200)
      }
      assert.isTrue(ready, `not ready within 90 s:\n${output}`)

      npm.kill("SIGTERM")
      const ended = await Promise.race([exited, sleep(15_000).then(() => "still running" as const)])
      assert.notStrictEqual(ended, "still running", output)
      assert.isFalse(await listening(port), `something still listens on ${port} after npm ended:\n${output}`)
      const lines = output.trim().split("\n")
      assert.match(lines.filter((line) => line.includes("level=")).at(-1) ?? "", /message=stopped/, output)
    } finally {
      if (npm.exitCode === null && npm.signalCode === null) npm.kill("SIGKILL")
      await rm(dataDir, { recursive: true, force: true })
    }
  }, 150_000)
})
