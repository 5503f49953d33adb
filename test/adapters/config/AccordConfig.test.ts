/**
 * Configuration: defaults, one clear line per bad variable (never its value), and the master key
 * file of the embedded default.
 */
import { execFile } from "node:child_process"
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as AccordConfig from "../../../adapters/config/AccordConfig.ts"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { configFrom } from "../../support/http.ts"

const base64Of = (length: number, fill = 7): string => btoa(String.fromCharCode(...new Uint8Array(length).fill(fill)))

const problemsOf = (env: Record<string, string>) => Effect.map(Effect.flip(configFrom(env)), (error) => error.problems)

const fileExists = (path: string) =>
  Effect.promise(() =>
    stat(path).then(
      () => true,
      () => false
    )
  )

const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "accord-config-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

describe("AccordConfig.load", () => {
  it.effect("has the documented defaults", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({})
      assert.strictEqual(config.port, 8787)
      assert.strictEqual(config.host, "127.0.0.1")
      assert.strictEqual(config.dataDir, "./.accord-data")
      assert.isTrue(Option.isNone(config.databaseUrl))
      assert.isTrue(Option.isNone(config.masterKey))
      assert.isFalse(config.allowInsecureEndpoints)
      assert.isTrue(Option.isNone(config.bootstrap))
      assert.strictEqual(config.logLevel, LogLevel.Info)
      assert.strictEqual(config.maxBodyBytes, 65536)
    })
  )

  it.effect("reads every variable", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({
        PORT: "9000",
        HOST: "0.0.0.0",
        ACCORD_DATA_DIR: "/var/lib/accord",
        DATABASE_URL: "postgres://accord:pw@db:5432/accord",
        ACCORD_MASTER_KEY: base64Of(32),
        ACCORD_ALLOW_INSECURE_ENDPOINTS: "1",
        ACCORD_BOOTSTRAP_WORKSPACE_ID: "0B4C3F4E-8E0E-4A8E-9C35-5A3A7E0F1A11",
        ACCORD_BOOTSTRAP_ADMIN_KEY: "k".repeat(32),
        LOG_LEVEL: "debug",
        ACCORD_MAX_BODY_BYTES: "1024"
      })
      assert.strictEqual(config.port, 9000)
      assert.strictEqual(config.host, "0.0.0.0")
      assert.strictEqual(config.dataDir, "/var/lib/accord")
      assert.isTrue(Option.isSome(config.databaseUrl))
      assert.deepStrictEqual(Redacted.value(Option.getOrThrow(config.masterKey)), new Uint8Array(32).fill(7))
      assert.isTrue(config.allowInsecureEndpoints)
      assert.strictEqual(Option.getOrThrow(config.bootstrap).workspaceId, "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11")
      assert.isTrue(Option.isNone(Option.getOrThrow(config.bootstrap).ingestKey))
      assert.strictEqual(config.logLevel, LogLevel.Debug)
      assert.strictEqual(config.maxBodyBytes, 1024)
      // Secrets stay redacted when printed.
      assert.notInclude(String(config.databaseUrl), "pw@db")
    })
  )

  const cases: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
    [
      "a master key of the wrong length",
      { ACCORD_MASTER_KEY: base64Of(31) },
      "ACCORD_MASTER_KEY must be base64 of exactly 32 bytes (got 31 bytes)"
    ],
    [
      "a master key that is not base64",
      { ACCORD_MASTER_KEY: "not*base64*at*all*but*secret" },
      "ACCORD_MASTER_KEY must be base64 of exactly 32 bytes (it is not valid base64)"
    ],
    ["a PORT that is not a number", { PORT: "80a" }, "PORT must be an integer from 0 to 65535"],
    ["a PORT out of range", { PORT: "70000" }, "PORT must be an integer from 0 to 65535"],
    [
      "a short bootstrap admin key",
      {
        ACCORD_BOOTSTRAP_WORKSPACE_ID: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
        ACCORD_BOOTSTRAP_ADMIN_KEY: "short-secret-value"
      },
      "ACCORD_BOOTSTRAP_ADMIN_KEY must be at least 32 characters (got 18)"
    ],
    [
      "a bootstrap workspace id that is not a UUID",
      { ACCORD_BOOTSTRAP_WORKSPACE_ID: "workspace-1", ACCORD_BOOTSTRAP_ADMIN_KEY: "k".repeat(40) },
      "ACCORD_BOOTSTRAP_WORKSPACE_ID must be a UUID (8-4-4-4-12 hex digits)"
    ],
    [
      "a bootstrap workspace without its key",
      { ACCORD_BOOTSTRAP_WORKSPACE_ID: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11" },
      "ACCORD_BOOTSTRAP_WORKSPACE_ID and ACCORD_BOOTSTRAP_ADMIN_KEY must be set together"
    ],
    [
      "a bootstrap ingest key without a bootstrap workspace",
      { ACCORD_BOOTSTRAP_INGEST_KEY: "i".repeat(40) },
      "ACCORD_BOOTSTRAP_INGEST_KEY needs ACCORD_BOOTSTRAP_WORKSPACE_ID and ACCORD_BOOTSTRAP_ADMIN_KEY"
    ],
    [
      "a short bootstrap ingest key",
      {
        ACCORD_BOOTSTRAP_WORKSPACE_ID: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
        ACCORD_BOOTSTRAP_ADMIN_KEY: "k".repeat(40),
        ACCORD_BOOTSTRAP_INGEST_KEY: "short-ingest-key"
      },
      "ACCORD_BOOTSTRAP_INGEST_KEY must be at least 32 characters (got 16)"
    ],
    [
      "a bootstrap ingest key equal to the admin key",
      {
        ACCORD_BOOTSTRAP_WORKSPACE_ID: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
        ACCORD_BOOTSTRAP_ADMIN_KEY: "same-key-for-both-".repeat(3),
        ACCORD_BOOTSTRAP_INGEST_KEY: "same-key-for-both-".repeat(3)
      },
      "ACCORD_BOOTSTRAP_INGEST_KEY must differ from ACCORD_BOOTSTRAP_ADMIN_KEY"
    ],
    [
      "a DATABASE_URL that is not PostgreSQL",
      { DATABASE_URL: "mysql://root:hunter2@db/accord" },
      "DATABASE_URL must be a postgres:// or postgresql:// URL"
    ],
    [
      "an unknown LOG_LEVEL",
      { LOG_LEVEL: "loud" },
      "LOG_LEVEL must be one of All, Trace, Debug, Info, Warning, Error, Fatal, None"
    ],
    [
      "a non-boolean ACCORD_ALLOW_INSECURE_ENDPOINTS",
      { ACCORD_ALLOW_INSECURE_ENDPOINTS: "maybe" },
      "ACCORD_ALLOW_INSECURE_ENDPOINTS must be true or false (or 1 or 0)"
    ],
    [
      "a zero ACCORD_MAX_BODY_BYTES",
      { ACCORD_MAX_BODY_BYTES: "0" },
      "ACCORD_MAX_BODY_BYTES must be an integer from 1 to 16777216"
    ],
    [
      "a zero ACCORD_DATABASE_POOL_SIZE",
      { ACCORD_DATABASE_POOL_SIZE: "0" },
      "ACCORD_DATABASE_POOL_SIZE must be an integer from 1 to 1000 (connections to PostgreSQL at once)"
    ]
  ]
  for (const [name, env, expected] of cases) {
    it.effect(`rejects ${name} with a clear message and without the value`, () =>
      Effect.gen(function* () {
        const problems = yield* problemsOf(env)
        assert.include(problems, expected)
        for (const value of Object.values(env)) {
          if (value.length >= 8) assert.notInclude(problems.join("\n"), value)
        }
      })
    )
  }

  it.effect("reports every problem at once, one line each", () =>
    Effect.gen(function* () {
      const problems = yield* problemsOf({ PORT: "x", ACCORD_MASTER_KEY: base64Of(16), LOG_LEVEL: "x" })
      assert.strictEqual(problems.length, 3)
      for (const problem of problems) assert.notInclude(problem, "\n")
    })
  )
})

describe("AccordConfig.resolveMasterKey", () => {
  it.scoped("a new key is written to <dataDir>/master.key (base64, mode 0600) only when persisted, then reused", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const dataDir = join(dir, "nested", "data")
      const config = yield* configFrom({ ACCORD_DATA_DIR: dataDir })
      const first = yield* Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer)
      assert.strictEqual(first.source, "created")
      const path = join(dataDir, "master.key")
      assert.strictEqual(first.path, path)
      assert.strictEqual(Redacted.value(first.key).length, 32)
      // resolving writes nothing: a start refused later leaves no key file behind
      assert.isFalse(yield* fileExists(path))
      if (process.platform !== "win32")
        assert.strictEqual((yield* Effect.promise(() => stat(dataDir))).mode & 0o777, 0o700)

      yield* AccordConfig.persistMasterKey(first)
      const file = yield* Effect.promise(() => stat(path))
      if (process.platform !== "win32") assert.strictEqual(file.mode & 0o777, 0o600)
      const text = yield* Effect.promise(() => readFile(path, "utf8"))
      assert.deepStrictEqual(AccordConfig.decodeBase64(text.trim()), Redacted.value(first.key))

      const second = yield* Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer)
      assert.strictEqual(second.source, "file")
      assert.isUndefined(second.warning)
      assert.deepStrictEqual(Redacted.value(second.key), Redacted.value(first.key))
      // persisting a key read from its file writes nothing
      yield* AccordConfig.persistMasterKey(second)
    })
  )

  it.scoped("two starts racing on a new data directory: the second to persist a different key is refused", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const config = yield* configFrom({ ACCORD_DATA_DIR: dir })
      const a = yield* Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer)
      const b = yield* Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer)
      yield* AccordConfig.persistMasterKey(a)
      yield* AccordConfig.persistMasterKey(a) // the same key again: accepted
      const refused = yield* Effect.either(AccordConfig.persistMasterKey(b))
      assert.isTrue(Either.isLeft(refused))
      assert.include(Either.isLeft(refused) ? refused.left.message : "", "start again")
      const text = yield* Effect.promise(() => readFile(join(dir, "master.key"), "utf8"))
      assert.deepStrictEqual(AccordConfig.decodeBase64(text.trim()), Redacted.value(a.key))
    })
  )

  it.scoped("prefers ACCORD_MASTER_KEY and then touches no file", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const config = yield* configFrom({ ACCORD_DATA_DIR: dir, ACCORD_MASTER_KEY: base64Of(32, 9) })
      const key = yield* Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer)
      assert.strictEqual(key.source, "environment")
      assert.deepStrictEqual(Redacted.value(key.key), new Uint8Array(32).fill(9))
      const exists = yield* Effect.promise(() =>
        stat(join(dir, "master.key")).then(
          () => true,
          () => false
        )
      )
      assert.isFalse(exists)
    })
  )

  it.scoped("rejects a key file of the wrong length without printing its content", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const content = base64Of(20, 3)
      yield* Effect.promise(() => writeFile(join(dir, "master.key"), content, { mode: 0o600 }))
      const config = yield* configFrom({ ACCORD_DATA_DIR: dir })
      const result = yield* Effect.either(Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer))
      assert.isTrue(Either.isLeft(result))
      const text = Either.isLeft(result) ? result.left.message : ""
      assert.strictEqual(text, `${join(dir, "master.key")} must be base64 of exactly 32 bytes (got 20 bytes)`)
      assert.notInclude(text, content)
    })
  )

  it.scoped("warns when the key file is readable by others", () =>
    Effect.gen(function* () {
      if (process.platform === "win32") return
      const dir = yield* tempDir
      yield* Effect.promise(() => writeFile(join(dir, "master.key"), base64Of(32)))
      yield* Effect.promise(() => chmod(join(dir, "master.key"), 0o644))
      const config = yield* configFrom({ ACCORD_DATA_DIR: dir })
      const key = yield* Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer)
      assert.include(key.warning ?? "", "chmod 600")
    })
  )
})

describe("AccordConfig.securePrivateDirectory", () => {
  it.scoped.skipIf(process.platform === "win32")("tightens an existing directory open to others to 0700", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      yield* Effect.promise(() => chmod(dir, 0o755))
      yield* AccordConfig.securePrivateDirectory(dir)
      assert.strictEqual((yield* Effect.promise(() => stat(dir))).mode & 0o777, 0o700)
      // files created afterwards are the owner's only (umask 077)
      yield* Effect.promise(() => writeFile(join(dir, "later"), "x", { mode: 0o666 }))
      assert.strictEqual((yield* Effect.promise(() => stat(join(dir, "later")))).mode & 0o777, 0o600)
    })
  )

  it.scoped.skipIf(process.platform === "win32" || process.getuid?.() !== 0)(
    "refuses a directory that belongs to another user, with the fix",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const theirs = join(dir, "theirs")
        yield* Effect.promise(() => mkdir(theirs).then(() => chmod(theirs, 0o755)))
        yield* Effect.promise(() => chown(theirs, 65534, 65534))
        const refused = yield* Effect.either(AccordConfig.securePrivateDirectory(theirs))
        assert.isTrue(Either.isLeft(refused))
        const message = Either.isLeft(refused) ? refused.left.message : ""
        assert.include(message, "belongs to another user (uid 65534")
        assert.include(message, "use a directory this user owns")
        assert.strictEqual((yield* Effect.promise(() => stat(theirs))).mode & 0o777, 0o755)
      })
  )
})

describe("the server with a bad configuration", () => {
  it("prints one line per problem and exits 1, with no stack trace and no secret", async () => {
    const root = fileURLToPath(new URL("../../..", import.meta.url))
    const tsx = fileURLToPath(new URL("../../../node_modules/.bin/tsx", import.meta.url))
    const masterKey = base64Of(31, 5)
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        tsx,
        ["runtimes/node/main.ts"],
        {
          cwd: root,
          timeout: 60_000,
          env: {
            ...process.env,
            NO_COLOR: "1",
            PORT: "http",
            ACCORD_MASTER_KEY: masterKey,
            ACCORD_DATA_DIR: "memory://"
          }
        },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number | null), stdout, stderr })
      )
    })
    assert.strictEqual(result.code, 1)
    assert.deepStrictEqual(result.stderr.trim().split("\n"), [
      "Accord cannot start: invalid configuration",
      "  - PORT must be an integer from 0 to 65535",
      "  - ACCORD_MASTER_KEY must be base64 of exactly 32 bytes (got 31 bytes)"
    ])
    assert.notInclude(result.stdout + result.stderr, masterKey)
    assert.notInclude(result.stdout + result.stderr, "    at ")
  }, 60_000)
})
