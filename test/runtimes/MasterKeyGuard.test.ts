/**
 * The master-key guard on the real server process: the first start records the key's check in the
 * database; a restart with another key on the same database refuses to run, with one line naming
 * ACCORD_MASTER_KEY and a non-zero exit; a restart with the first key starts. On PGlite in a data
 * directory, and on PostgreSQL (a fresh schema) when DATABASE_URL is set, where a start without
 * ACCORD_MASTER_KEY also warns that the key lives in a local file.
 */
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { chmod, mkdtemp, rm, stat } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { freePort, sleep } from "../support/ports.ts"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { databaseUrl, envWithoutDatabase, freshSchemaUrl, warnIfSkipped } from "../support/postgres.ts"
import { nodeArgs } from "../../scripts/entrypoint.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))
const keyA = Buffer.alloc(32, 0xa1).toString("base64")
const keyB = Buffer.alloc(32, 0xb2).toString("base64")

interface Run {
  /** `ready` when /readyz answered 200 (the server is then stopped with SIGTERM), else its exit code. */
  readonly result: "ready" | number | null
  readonly output: string
}

/** Starts the Node server with `env`; stops it with SIGTERM once ready, or waits for it to exit. */
const startServer = async (env: Record<string, string>): Promise<Run> => {
  const port = await freePort()
  const child = spawn(process.execPath, nodeArgs("runtimes/node/main.ts"), {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...envWithoutDatabase(), NO_COLOR: "1", PORT: String(port), HOST: "127.0.0.1", ...env }
  })
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  try {
    // Generous: a first embedded start on a loaded machine can take tens of seconds.
    const deadline = Date.now() + 90_000
    while (Date.now() < deadline && child.exitCode === null) {
      if (
        await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.status === 200,
          () => false
        )
      ) {
        child.kill("SIGTERM")
        await exited
        return { result: "ready", output }
      }
      await sleep(200)
    }
    return { result: await Promise.race([exited, sleep(5_000).then(() => null)]), output }
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  }
}

const refusal =
  /ACCORD_MASTER_KEY is not the master key this database was first started with; set ACCORD_MASTER_KEY to that key/

const guarded = async (env: Record<string, string>) => {
  const first = await startServer({ ...env, ACCORD_MASTER_KEY: keyA })
  assert.strictEqual(first.result, "ready", first.output)
  assert.include(first.output, "master key: check recorded in the database (first start)")

  const other = await startServer({ ...env, ACCORD_MASTER_KEY: keyB })
  assert.notStrictEqual(other.result, "ready", other.output)
  assert.notStrictEqual(other.result, 0, other.output)
  assert.notStrictEqual(other.result, null, other.output)
  assert.match(other.output, refusal)
  assert.strictEqual(other.output.split("\n").filter((line) => refusal.test(line)).length, 1, other.output)

  const again = await startServer({ ...env, ACCORD_MASTER_KEY: keyA })
  assert.strictEqual(again.result, "ready", again.output)
  assert.include(again.output, "master key: matches the database")
  assert.include(again.output, "migrations: none pending")
  assert.notInclude(again.output, "creating the embedded database")
  return first
}

describe("master-key guard", () => {
  it("PGlite: key A starts, key B is refused with one line and a non-zero exit, key A starts again", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "accord-key-guard-"))
    try {
      await chmod(dataDir, 0o755)
      const first = await guarded({ ACCORD_DATA_DIR: dataDir })
      // an existing directory open to others is made private before the database opens
      assert.strictEqual((await stat(dataDir)).mode & 0o777, 0o700)
      // a start without the key makes a new one: refused by the guard, and leaves no key file behind
      const noKey = await startServer({ ACCORD_DATA_DIR: dataDir })
      assert.notStrictEqual(noKey.result, "ready", noKey.output)
      assert.match(noKey.output, /the key file in ACCORD_DATA_DIR is not the master key/)
      assert.isFalse(existsSync(join(dataDir, "master.key")), noKey.output)
      // What a newcomer's first start says: progress, the migrations, the next step.
      assert.include(first.output, "storage: creating the embedded database (first start")
      assert.match(first.output, /migrations: applied 0001_init, .*0010_master_key_check/)
      assert.include(first.output, "no workspace exists yet: to create one with an administrator key")
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  }, 300_000)

  warnIfSkipped("master-key guard on PostgreSQL")
  it.live.skipIf(databaseUrl === undefined)(
    "PostgreSQL: the same, and the warning when the key lives in a local file",
    () =>
      Effect.gen(function* () {
        const url = Redacted.value(yield* freshSchemaUrl(databaseUrl!))
        const dataDir = yield* Effect.acquireRelease(
          Effect.promise(() => mkdtemp(join(tmpdir(), "accord-key-guard-pg-"))),
          (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
        )
        yield* Effect.promise(() => guarded({ DATABASE_URL: url, ACCORD_DATA_DIR: dataDir }))
        // No ACCORD_MASTER_KEY: a new key file in the data directory, another key than A.
        const fileKey = yield* Effect.promise(() => startServer({ DATABASE_URL: url, ACCORD_DATA_DIR: dataDir }))
        assert.match(
          fileKey.output,
          /DATABASE_URL is set but ACCORD_MASTER_KEY is not, so the key that opens the stored connector secrets lives only in /
        )
        assert.match(
          fileKey.output,
          /the key file in ACCORD_DATA_DIR is not the master key this database was first started with/
        )
        assert.notStrictEqual(fileKey.result, "ready", fileKey.output)
        // the refused start kept no key file for a later start or a rotation to pick up
        assert.isFalse(existsSync(join(dataDir, "master.key")), fileKey.output)
      }).pipe(Effect.scoped),
    300_000
  )
})
