/**
 * `npm run rotate-master-key` end to end: a database first started with key A (connector secrets and
 * a continuation sealed under it) is rotated by the command process to key B; the real server then
 * starts with B and answers /readyz, refuses A with the guard's line, and the stored connector
 * secrets open with B. On PGlite with the key in the data directory's key file (the command
 * replaces the file), and on PostgreSQL with ACCORD_MASTER_KEY (a fresh schema, when DATABASE_URL is set).
 */
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Database from "../../../adapters/sql/Database.ts"
import * as MasterKeyCheck from "../../../adapters/sql/MasterKeyCheck.ts"
import * as Migrations from "../../../adapters/sql/Migrations.ts"
import * as SecretTable from "../../../adapters/sql/SecretTable.ts"
import { migrations } from "../../../adapters/sql/schema/Migrations.ts"
import * as SecretVault from "../../../core/ports/SecretVault.ts"
import { Cipher, makeAesGcm } from "../../../core/protocol/Cipher.ts"
import * as Server from "../../../runtimes/Server.ts"
import { configFrom } from "../../support/http.ts"
import { databaseUrl, envWithoutDatabase, freshSchemaUrl, warnIfSkipped } from "../../support/postgres.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const bytesA = new Uint8Array(32).fill(0x1a)
const bytesB = new Uint8Array(32).fill(0x2b)
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")
const ref = SecretVault.connectorSecretRef("conn-9", 1, "completion")
const secret = "whsec_completion_secret_for_rotation_test"

/** As a first server start with key A would leave it, plus a stored connector secret. */
const seed = (database: Layer.Layer<SqlClient.SqlClient, SqlError>) =>
  Effect.gen(function* () {
    yield* Migrations.run(migrations)
    const cipher = yield* makeAesGcm(Redacted.make(bytesA))
    yield* Effect.provideService(MasterKeyCheck.check, Cipher, cipher)
    const vault = yield* Effect.provideService(Effect.flatMap(SecretTable.make, SecretVault.make), Cipher, cipher)
    yield* vault.put(ref, Redacted.make(secret), 1)
  }).pipe(Effect.provide(database), Effect.scoped, Effect.orDie)

/** The stored connector secret, opened with `key` (the database is opened for this read only). */
const readSecret = (database: Layer.Layer<SqlClient.SqlClient, SqlError>, key: Uint8Array) =>
  Effect.gen(function* () {
    const cipher = yield* makeAesGcm(Redacted.make(key))
    const vault = yield* Effect.provideService(Effect.flatMap(SecretTable.make, SecretVault.make), Cipher, cipher)
    return yield* vault.get(ref)
  }).pipe(Effect.provide(database), Effect.scoped, Effect.exit)

interface CommandRun {
  readonly code: number | null
  readonly output: string
}

const rotateCommand = (env: Record<string, string>): Promise<CommandRun> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, nodeArgs("runtimes/maintenance/rotate-master-key.ts"), {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...envWithoutDatabase(), NO_COLOR: "1", ...env }
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.once("exit", (code) => resolve({ code, output }))
  })

/** Starts the real server composition with `env`; `ready` when /readyz answered 200, else the start failure. */
const startServer = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const config = yield* configFrom(env)
    const address = yield* Server.start(
      config,
      NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" })
    )
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    const status = yield* Effect.promise(() => fetch(`http://127.0.0.1:${address.port}/readyz`).then((r) => r.status))
    return status === 200 ? "ready" : `readyz ${status}`
  }).pipe(
    Effect.scoped,
    Effect.mapError((error) => error.message),
    Effect.exit
  )

/** The start failure's line, or "" when it started. */
const failure = (exit: Exit.Exit<string, string>): string =>
  Exit.isFailure(exit)
    ? Option.getOrElse(
        Exit.causeOption(exit).pipe(
          Option.flatMap((cause) => Option.fromNullable(cause._tag === "Fail" ? cause.error : undefined))
        ),
        () => ""
      )
    : ""

const refusal = /is not the master key this database was first started with/

describe("npm run rotate-master-key", () => {
  it("is the package script", () => {
    const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts
    assert.strictEqual(scripts["rotate-master-key"], "exec node --import tsx runtimes/maintenance/rotate-master-key.ts")
  })

  it.live(
    "PGlite, key in the data directory's file: rotated, the file holds B, the server starts with B and refuses A",
    () =>
      Effect.gen(function* () {
        const dataDir = yield* Effect.acquireRelease(
          Effect.promise(() => mkdtemp(join(tmpdir(), "accord-rotate-"))),
          (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
        )
        const keyFile = join(dataDir, "master.key")
        yield* Effect.promise(() => writeFile(keyFile, base64(bytesA) + "\n", { mode: 0o600 }))
        const database = Database.layerPglite(join(dataDir, "pglite"))
        yield* seed(database)

        // A wrong new key is refused before anything is opened.
        const bad = yield* Effect.promise(() =>
          rotateCommand({ ACCORD_DATA_DIR: dataDir, ACCORD_NEW_MASTER_KEY: "c2hvcnQ=" })
        )
        assert.notStrictEqual(bad.code, 0, bad.output)
        assert.include(bad.output, "ACCORD_NEW_MASTER_KEY must be base64 of exactly 32 bytes")

        const run = yield* Effect.promise(() =>
          rotateCommand({ ACCORD_DATA_DIR: dataDir, ACCORD_NEW_MASTER_KEY: base64(bytesB) })
        )
        assert.strictEqual(run.code, 0, run.output)
        assert.include(run.output, "accord_secrets: 1 sealed again")
        assert.include(run.output, `key file: ${keyFile} now holds the new key`)
        assert.notInclude(run.output, base64(bytesB))
        assert.notInclude(run.output, base64(bytesA))
        assert.strictEqual((yield* Effect.promise(() => readFile(keyFile, "utf8"))).trim(), base64(bytesB))
        assert.strictEqual((yield* Effect.promise(() => stat(keyFile))).mode & 0o777, 0o600)

        // The same command again: A is no longer the database's key.
        const again = yield* Effect.promise(() =>
          rotateCommand({
            ACCORD_DATA_DIR: dataDir,
            ACCORD_MASTER_KEY: base64(bytesA),
            ACCORD_NEW_MASTER_KEY: base64(bytesB)
          })
        )
        assert.notStrictEqual(again.code, 0, again.output)
        assert.include(again.output, "the old key is not the master key this database was first started with")

        assert.deepStrictEqual(yield* startServer({ ACCORD_DATA_DIR: dataDir }), Exit.succeed("ready"))
        const withA = yield* startServer({ ACCORD_DATA_DIR: dataDir, ACCORD_MASTER_KEY: base64(bytesA) })
        assert.match(failure(withA), refusal)

        const opened = yield* readSecret(database, bytesB)
        assert.isTrue(
          Exit.isSuccess(opened) && Option.isSome(opened.value) && Redacted.value(opened.value.value) === secret
        )
      }).pipe(Effect.scoped),
    300_000
  )

  warnIfSkipped("rotate-master-key on PostgreSQL")
  it.live.skipIf(databaseUrl === undefined)(
    "PostgreSQL with ACCORD_MASTER_KEY: rotated, the server starts with B and refuses A",
    () =>
      Effect.gen(function* () {
        const url = Redacted.value(yield* freshSchemaUrl(databaseUrl!))
        const dataDir = yield* Effect.acquireRelease(
          Effect.promise(() => mkdtemp(join(tmpdir(), "accord-rotate-pg-"))),
          (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
        )
        const database = Database.layerPg(Redacted.make(url))
        yield* seed(database)
        const env = { DATABASE_URL: url, ACCORD_DATA_DIR: dataDir }
        const run = yield* Effect.promise(() =>
          rotateCommand({ ...env, ACCORD_MASTER_KEY: base64(bytesA), ACCORD_NEW_MASTER_KEY: base64(bytesB) })
        )
        assert.strictEqual(run.code, 0, run.output)
        assert.include(run.output, "next: set ACCORD_MASTER_KEY to the value of ACCORD_NEW_MASTER_KEY on every host")
        assert.notInclude(run.output, url)

        assert.deepStrictEqual(yield* startServer({ ...env, ACCORD_MASTER_KEY: base64(bytesB) }), Exit.succeed("ready"))
        const withA = yield* startServer({ ...env, ACCORD_MASTER_KEY: base64(bytesA) })
        assert.match(failure(withA), refusal)
        const opened = yield* readSecret(database, bytesB)
        assert.isTrue(
          Exit.isSuccess(opened) && Option.isSome(opened.value) && Redacted.value(opened.value.value) === secret
        )
        assert.isTrue(Exit.isFailure(yield* readSecret(database, bytesA)))
      }).pipe(Effect.scoped),
    300_000
  )
})
