/**
 * Killing the process with SIGKILL in the middle of a stream of writes loses no committed row, on
 * PGlite on disk and on PostgreSQL: every index the writer printed (after its commit returned) is
 * in the database when it is opened again.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import * as Database from "../../../adapters/sql/Database.ts"
import { databaseUrl, inSchema, warnIfSkipped } from "../../support/postgres.ts"

const root = fileURLToPath(new URL("../../..", import.meta.url))

/** Starts the writer, waits until it reports `atLeast` commits, SIGKILLs it; returns the reported indexes. */
const writeThenKill = (args: ReadonlyArray<string>, atLeast: number): Promise<ReadonlyArray<number>> =>
  new Promise((resolve, reject) => {
    // One process (`node --import tsx`), not the `tsx` CLI: that one runs the script in a child
    // process, and a SIGKILL would only kill the wrapper while the writer kept writing.
    const child = spawn(process.execPath, ["--import", "tsx", "test/support/writer.ts", ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let buffered = ""
    const committed: Array<number> = []
    let stderr = ""
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString()
      const lines = buffered.split("\n")
      buffered = lines.pop()!
      for (const line of lines) committed.push(Number(line))
      if (committed.length >= atLeast && child.exitCode === null && !child.killed) child.kill("SIGKILL")
    })
    child.on("exit", (code, signal) => {
      if (signal === "SIGKILL") resolve(committed)
      else reject(new Error(`writer exited with ${code}: ${stderr.slice(0, 500)}`))
    })
  })

const survivors = (client: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ nonce: string }>`SELECT nonce FROM accord_nonces WHERE scope = 'crash'`
    return new Set(rows.map((r) => Number(r.nonce.slice("crash-".length))))
  }).pipe(Effect.provide(client))

describe("SIGKILL mid-write loses no committed row", () => {
  it.live(
    "PGlite on disk",
    () =>
      Effect.gen(function* () {
        const dir = mkdtempSync(join(tmpdir(), "accord-crash-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const committed = yield* Effect.promise(() => writeThenKill(["pglite", dir], 300))
        assert.isAtLeast(committed.length, 300)
        const present = yield* survivors(Database.layerPglite(dir))
        const lost = committed.filter((i) => !present.has(i))
        assert.deepStrictEqual(lost, [], `committed rows lost after SIGKILL: ${lost.length}`)
      }).pipe(Effect.scoped),
    120_000
  )

  warnIfSkipped("crash durability")
  it.live.skipIf(databaseUrl === undefined)(
    "PostgreSQL",
    () =>
      Effect.gen(function* () {
        const schema = `accord_crash_${Date.now()}`
        const admin = new pg.Client({ connectionString: databaseUrl })
        yield* Effect.acquireRelease(
          Effect.promise(async () => {
            await admin.connect()
            await admin.query(`CREATE SCHEMA ${schema}`)
          }),
          () =>
            Effect.promise(async () => {
              await admin.query(`DROP SCHEMA ${schema} CASCADE`)
              await admin.end()
            })
        )
        const url = inSchema(databaseUrl!, schema)
        const committed = yield* Effect.promise(() => writeThenKill(["postgres", Redacted.value(url)], 300))
        assert.isAtLeast(committed.length, 300)
        const present = yield* survivors(Database.layerPg(url))
        const lost = committed.filter((i) => !present.has(i))
        assert.deepStrictEqual(lost, [], `committed rows lost after SIGKILL: ${lost.length}`)
      }).pipe(Effect.scoped),
    120_000
  )
})
