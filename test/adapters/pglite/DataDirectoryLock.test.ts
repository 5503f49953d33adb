/**
 * One writer per embedded database (`adapters/pglite/DataDirectoryLock.ts`): a held data directory
 * refuses a second opener, whether it asks for the lock or opens PGlite there; a lock whose holder
 * was killed is taken over; an abandoned lock of another host is taken over once stale, a fresh one
 * is not.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Reactivity from "@effect/experimental/Reactivity"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as DataDirectoryLock from "../../../adapters/pglite/DataDirectoryLock.ts"
import * as PgliteClient from "../../../adapters/pglite/PgliteClient.ts"

const lockModule = fileURLToPath(new URL("../../../adapters/pglite/DataDirectoryLock.ts", import.meta.url))

/** A fresh folder under the system temp directory, removed when the test's scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "accord-lock-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/**
 * Another process that takes the lock on `dataDir` with this module, says `locked`, and waits to be
 * killed; answers its pid once it holds the lock.
 */
const holderProcess = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.async<{ readonly pid: number; readonly kill: () => Promise<void> }, Error>((resume) => {
      const program = [
        `const Effect = await import("effect/Effect")`,
        `const Lock = await import(${JSON.stringify(lockModule)})`,
        `await Effect.runPromise(Effect.scoped(Effect.zipRight(Lock.acquire(${JSON.stringify(dataDir)}),`,
        `  Effect.zipRight(Effect.sync(() => process.stdout.write("locked\\n")), Effect.never))))`
      ].join("\n")
      const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], {
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stderr = ""
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
      const exited = new Promise<void>((done) => child.on("exit", () => done()))
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        if (chunk.includes("locked"))
          resume(
            Effect.succeed({
              pid: child.pid!,
              kill: () => {
                child.kill("SIGKILL")
                return exited
              }
            })
          )
      })
      child.on("exit", (code) => resume(Effect.fail(new Error(`the holder exited (${code}): ${stderr}`))))
    }),
    (holder) => Effect.promise(holder.kill)
  )

describe("DataDirectoryLock", () => {
  it.scoped("a held directory refuses a second holder, names the holder's pid, and is free once released", () =>
    Effect.gen(function* () {
      const dataDir = join(yield* tempDir, "pglite")
      assert.isTrue(Option.isNone(yield* DataDirectoryLock.holder(dataDir)))
      const held = yield* Effect.scoped(
        Effect.gen(function* () {
          yield* DataDirectoryLock.acquire(dataDir)
          const second = yield* Effect.exit(Effect.scoped(DataDirectoryLock.acquire(dataDir)))
          return { second, holder: yield* DataDirectoryLock.holder(dataDir) }
        })
      )
      assert.isTrue(Exit.isFailure(held.second))
      const failure = Exit.isFailure(held.second) ? held.second.cause : undefined
      assert.include(String(failure), "DataDirectoryLocked")
      assert.deepStrictEqual(held.holder, Option.some({ pid: process.pid }))
      // released: no lock directory, no holder file, and the next holder gets it
      assert.isFalse(existsSync(`${dataDir}.lock`))
      assert.isFalse(existsSync(`${dataDir}.lock.json`))
      assert.isTrue(Option.isNone(yield* DataDirectoryLock.holder(dataDir)))
      yield* Effect.scoped(DataDirectoryLock.acquire(dataDir))
    })
  )

  it.scoped("the refusal is one line that names the directory, the holder and the fix", () =>
    Effect.gen(function* () {
      const dataDir = join(yield* tempDir, "pglite")
      yield* DataDirectoryLock.acquire(dataDir)
      const error = yield* Effect.flip(Effect.scoped(DataDirectoryLock.acquire(dataDir)))
      assert.strictEqual(error._tag, "DataDirectoryLocked")
      assert.strictEqual(
        error.message,
        `the embedded database in ${dataDir} is open in process ${process.pid} (a running Accord server?): ` +
          "stop that process first, or give this one another ACCORD_DATA_DIR"
      )
    })
  )

  it.scoped(
    "PGlite on a held directory does not open: the second opener fails with the lock's refusal",
    () =>
      Effect.gen(function* () {
        const dataDir = join(yield* tempDir, "pglite")
        yield* DataDirectoryLock.acquire(dataDir)
        const error = yield* Effect.flip(
          Effect.scoped(PgliteClient.make({ dataDir })).pipe(Effect.provide(Reactivity.layer))
        )
        assert.include(error.message, `the embedded database in ${dataDir} is open in process ${process.pid}`)
        // nothing was created in the held directory
        assert.isFalse(existsSync(join(dataDir, "PG_VERSION")))
      }),
    60_000
  )

  it.scoped(
    "another process holds the lock while it lives; killed with SIGKILL, its lock is taken over at once",
    () =>
      Effect.gen(function* () {
        const dataDir = join(yield* tempDir, "pglite")
        const other = yield* holderProcess(dataDir)
        assert.deepStrictEqual(yield* DataDirectoryLock.holder(dataDir), Option.some({ pid: other.pid }))
        const refused = yield* Effect.flip(Effect.scoped(DataDirectoryLock.acquire(dataDir)))
        assert.strictEqual(refused._tag, "DataDirectoryLocked")
        assert.include(refused.message, `process ${other.pid}`)

        yield* Effect.promise(other.kill)
        // The killed holder left its lock behind, fresh (renewed within the last 5 s)…
        assert.isTrue(existsSync(`${dataDir}.lock`))
        assert.isTrue(Option.isNone(yield* DataDirectoryLock.holder(dataDir)))
        // …and it is taken over without waiting for it to go stale.
        yield* DataDirectoryLock.acquire(dataDir)
        assert.deepStrictEqual(yield* DataDirectoryLock.holder(dataDir), Option.some({ pid: process.pid }))
      }),
    60_000
  )

  it.scoped("a holder whose lock directory went at a signal, still closing, keeps refusing new openers", () =>
    Effect.gen(function* () {
      const dataDir = join(yield* tempDir, "pglite")
      yield* DataDirectoryLock.acquire(dataDir)
      // what proper-lockfile's exit hook does when this process receives SIGTERM, before it has closed
      rmdirSync(`${dataDir}.lock`)
      assert.deepStrictEqual(yield* DataDirectoryLock.holder(dataDir), Option.some({ pid: process.pid }))
      const refused = yield* Effect.flip(Effect.scoped(DataDirectoryLock.acquire(dataDir)))
      assert.strictEqual(refused._tag, "DataDirectoryLocked")
      // and the refused opener left no lock behind
      assert.isFalse(existsSync(`${dataDir}.lock`))
    })
  )

  it.scoped("a lock held from another host is judged by its age: refused while fresh, taken over once stale", () =>
    Effect.gen(function* () {
      const dataDir = join(yield* tempDir, "pglite")
      mkdirSync(`${dataDir}.lock`)
      writeFileSync(`${dataDir}.lock.json`, JSON.stringify({ pid: 4242, host: "another-host.invalid" }))
      const fresh = yield* Effect.flip(Effect.scoped(DataDirectoryLock.acquire(dataDir, { staleMillis: 5_000 })))
      assert.strictEqual(fresh._tag, "DataDirectoryLocked")
      assert.include(fresh.message, "process 4242")

      // unrenewed for longer than staleMillis: abandoned
      const past = new Date(Date.now() - 60_000)
      utimesSync(`${dataDir}.lock`, past, past)
      assert.isTrue(Option.isNone(yield* DataDirectoryLock.holder(dataDir, { staleMillis: 5_000 })))
      yield* DataDirectoryLock.acquire(dataDir, { staleMillis: 5_000 })
      assert.deepStrictEqual(yield* DataDirectoryLock.holder(dataDir), Option.some({ pid: process.pid }))
    })
  )
})
