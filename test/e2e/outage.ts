/**
 * The customer kit against the real Accord server through a service outage, over real HTTP on
 * loopback. The kit (`test/support/kitProcess.ts`, its own process, on PGlite on disk or
 * PostgreSQL) accepts an action; the server goes down while the kit's executor is still running;
 * the kit persists the completion and keeps redelivering it into the outage; the kit process is
 * killed (SIGKILL) and started again on the same storage, and goes on redelivering; the server comes
 * back on the same port and storage. The service records the completion exactly once: one
 * `completionId` across every attempt of both kit processes, one completion in the history, the
 * action `verified`, and the host's operation ran once.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import { intakeInput } from "../core/connector/dispatch/support.ts"
import { type KitProcess, secrets, spawnKit } from "../support/customer.ts"
import { request } from "../support/http.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../support/postgres.ts"
import { actionStatus, admin, bootService, connect, waitFor } from "./support.ts"

/** The lines a kit process printed that start with `prefix`. */
const printed = (kit: KitProcess, prefix: string) =>
  Effect.sync(() => kit.lines.filter((line) => line.startsWith(prefix)))

const started = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const kit = spawnKit(args, false, env)
    yield* Effect.addFinalizer(() => Effect.sync(() => kit.child.kill("SIGKILL")))
    return { kit, url: `http://127.0.0.1:${yield* Effect.promise(() => kit.port)}/connector` }
  })

/** `serverEnv` places the server's storage, `kitStorage` the kit's (`pglite <dir>` or `postgres <url>`). */
const throughOutage = (serverEnv: Record<string, string>, kitStorage: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const serverScope = yield* Scope.make()
    const service = yield* Scope.extend(bootService({ env: serverEnv }), serverScope)
    const kitArgs = [...kitStorage, service.base]
    const first = yield* started(kitArgs, { ACCORD_TEST_HOLD_EXECUTION: "1" })
    yield* connect(service, first.url, secrets)

    const created = yield* request(`${service.ws}/action-requests`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(intakeInput("acct_outage"))
    })
    assert.strictEqual(created.status, 202)
    const id: string = created.json.actionRequestId
    yield* waitFor(actionStatus(service, id), (s) => s.state === "accepted", "the kit's acknowledgement")
    yield* waitFor(printed(first.kit, "execute "), (lines) => lines.length === 1, "the execution to start")

    // The service goes down after the acceptance, before the completion exists.
    yield* Scope.close(serverScope, Exit.void)
    first.kit.child.kill("SIGUSR2")
    const failedBefore = yield* waitFor(
      printed(first.kit, "deliver "),
      (lines) => lines.length >= 2,
      "two failed deliveries"
    )
    for (const line of failedBefore) assert.include(line, " failed ")

    // The kit process dies during the outage and starts again on the same storage.
    first.kit.child.kill("SIGKILL")
    assert.strictEqual(yield* Effect.promise(() => first.kit.exited), "SIGKILL")
    const second = yield* started(kitArgs)
    yield* waitFor(printed(second.kit, "deliver "), (lines) => lines.length >= 1, "a redelivery by the restarted kit")

    // The service comes back on the same port and storage.
    const back = yield* bootService({ env: serverEnv, port: service.port })
    const delivered = yield* waitFor(
      printed(second.kit, "deliver "),
      (lines) => lines.some((line) => / status 2\d\d$/.test(line)),
      "the completion to be accepted"
    )
    const status = yield* actionStatus(back, id)
    assert.strictEqual(status.state, "verified")
    assert.deepStrictEqual(
      status.history.map((h: { toState: string }) => h.toState),
      ["dispatching", "accepted", "verified"]
    )
    const completions = status.history.filter((h: { trigger: string }) => h.trigger === "completion")
    assert.strictEqual(completions.length, 1)
    const completionId: string = completions[0].detail.completionId

    // Every attempt of both processes carried that one completion; the first 2xx was the last attempt.
    const attempts = [...(yield* printed(first.kit, "deliver ")), ...delivered]
    assert.deepStrictEqual([...new Set(attempts.map((line) => line.split(" ")[1]))], [completionId])
    assert.deepStrictEqual(
      delivered.filter((line) => / status 2\d\d$/.test(line)),
      [delivered.at(-1)]
    )
    // The host's operation ran once, in the first process; the second never executed or looked up.
    assert.deepStrictEqual(yield* printed(first.kit, "execute "), [`execute ${id}`])
    assert.deepStrictEqual(
      [...(yield* printed(second.kit, "execute ")), ...(yield* printed(second.kit, "lookup "))],
      []
    )
  })

const pgliteCase = () =>
  it.live(
    "PGlite on disk on both sides",
    () =>
      Effect.gen(function* () {
        const dir = mkdtempSync(join(tmpdir(), "accord-outage-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        yield* throughOutage({ ACCORD_DATA_DIR: join(dir, "service") }, ["pglite", join(dir, "kit")])
      }).pipe(Effect.scoped),
    180_000
  )

const postgresCase = () => {
  warnIfSkipped("service outage end to end")
  it.live.skipIf(databaseUrl === undefined)(
    "PostgreSQL on both sides (DATABASE_URL)",
    () =>
      Effect.gen(function* () {
        const dir = mkdtempSync(join(tmpdir(), "accord-outage-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const serviceSchema = yield* freshSchemaUrl(databaseUrl!)
        const kitSchema = yield* freshSchemaUrl(databaseUrl!)
        // The data directory keeps only the server's master key file, which must survive the restart too.
        yield* throughOutage({ DATABASE_URL: Redacted.value(serviceSchema), ACCORD_DATA_DIR: dir }, [
          "postgres",
          Redacted.value(kitSchema)
        ])
      }).pipe(Effect.scoped),
    180_000
  )
}

/** One storage variant's case; each runs from a test file of its own, so the two run in parallel. */
export const suite = (name: "pglite" | "postgres"): void => {
  describe("customer kit and the real server through a service outage and a kit restart", () => {
    if (name === "pglite") pgliteCase()
    else postgresCase()
  })
}
