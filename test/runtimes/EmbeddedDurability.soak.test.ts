/**
 * The embedded default keeps every acknowledged event when its process is killed with SIGKILL: a
 * server on PGlite in a data directory takes events from several concurrent senders, is killed while
 * requests are still in flight, and the data directory, opened again, holds every event that was
 * answered 202. One spawned process, kept short: the data directory starts from the suite's
 * migrated archive, so the server finds its schema in place instead of creating it.
 */
import { spawn } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Reactivity from "@effect/experimental/Reactivity"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as PgliteClient from "../../adapters/pglite/PgliteClient.ts"
import { freePort, sleep } from "../support/ports.ts"
import { envWithoutDatabase } from "../support/postgres.ts"
import { templateArchives } from "../support/pgliteTemplate.ts"
import { nodeArgs } from "../../scripts/entrypoint.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))
const workspaceId = "5b0c1f6e-7a2d-4c8e-9f10-2b3c4d5e6f70"
const adminKey = "durability-admin-key-0123456789abcdef0123"
const ingestKey = "durability-ingest-key-0123456789abcdef012"

describe("the embedded default under kill -9", () => {
  it("keeps every event answered 202 before the process was killed", async () => {
    const port = await freePort()
    const dataDir = await mkdtemp(join(tmpdir(), "accord-durability-"))
    const database = join(dataDir, "pglite")
    const { migrated } = await templateArchives()
    await Effect.runPromise(
      Effect.scoped(PgliteClient.make({ dataDir: database, loadDataDir: migrated, durability: "relaxed" })).pipe(
        Effect.provide(Reactivity.layer)
      )
    )
    const server = spawn(process.execPath, nodeArgs("runtimes/node/main.ts"), {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...envWithoutDatabase(),
        NO_COLOR: "1",
        LOG_LEVEL: "Warning",
        PORT: String(port),
        HOST: "127.0.0.1",
        ACCORD_DATA_DIR: dataDir,
        ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
        ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
        ACCORD_BOOTSTRAP_INGEST_KEY: ingestKey
      }
    })
    let output = ""
    server.stdout.on("data", (chunk) => (output += chunk))
    server.stderr.on("data", (chunk) => (output += chunk))
    const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()))
    try {
      const deadline = Date.now() + 90_000
      let ready = false
      while (!ready && Date.now() < deadline && server.exitCode === null) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (response) => response.status === 200,
          () => false
        )
        if (!ready) await sleep(100)
      }
      assert.isTrue(ready, `not ready within 90 s:\n${output}`)

      const acknowledged: Array<string> = []
      let next = 0
      let killed = false
      const send = async (): Promise<void> => {
        while (!killed) {
          const eventId = `durable:${next++}`
          const status = await fetch(`http://127.0.0.1:${port}/api/events/ingest`, {
            method: "POST",
            headers: { authorization: `Bearer ${ingestKey}`, "content-type": "application/json" },
            body: JSON.stringify({
              event_name: "checkout_completed",
              account_id: `acct_${next % 7}`,
              timestamp: new Date().toISOString(),
              event_id: eventId
            })
          }).then(
            (response) => response.status,
            () => 0
          )
          if (status === 202) acknowledged.push(eventId)
        }
      }
      const senders = Array.from({ length: 8 }, send)
      while (acknowledged.length < 200) await sleep(5)
      // Killed while the senders still have requests in flight.
      server.kill("SIGKILL")
      await exited
      killed = true
      await Promise.all(senders)

      const stored = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const sql = yield* PgliteClient.make({ dataDir: database })
            return yield* sql<{ readonly eventId: string }>`SELECT event_id AS "eventId" FROM accord_events`
          })
        ).pipe(Effect.provide(Reactivity.layer))
      )
      const present = new Set(stored.map((row) => row.eventId))
      const lost = acknowledged.filter((eventId) => !present.has(eventId))
      assert.deepStrictEqual(lost, [], `${lost.length} of ${acknowledged.length} acknowledged events lost`)
      assert.isAtLeast(acknowledged.length, 200)
    } finally {
      if (server.exitCode === null && server.signalCode === null) server.kill("SIGKILL")
      await exited
      await rm(dataDir, { recursive: true, force: true })
    }
  }, 150_000)
})
