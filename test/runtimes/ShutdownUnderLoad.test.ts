/**
 * Shutdown under load, as a process: the server (from the build when it is fresh, else through tsx) on
 * PostgreSQL with `ACCORD_SHUTDOWN_TIMEOUT=2s`, four keep-alive connections sending ingest events
 * one after another and one connection holding a body open, then SIGTERM. The server answers what
 * is in flight, its last answer on each keep-alive connection says `Connection: close` (none is
 * reset), it accepts no new connection once it is closing, every event answered 202 is stored, and
 * the process is gone by the deadline although a body is still held open.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { freePort, query, startServer } from "../e2e/crashloopProcesses.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../support/postgres.ts"
import { runShutdownUnderLoad } from "./shutdownLoad.ts"

const ingestKey = "shutdown-ingest-key-0123456789abcdef0123456789"
/** The deadline under test, and what a loaded machine adds to a process's exit beyond it. */
const deadlineMillis = 2_000
const exitSlackMillis = 1_000

warnIfSkipped("shutdown under load (PostgreSQL)")

describe.skipIf(databaseUrl === undefined)("shutdown under load (PostgreSQL)", () => {
  it.scoped(
    "SIGTERM: in-flight answered, the last keep-alive answers close, no new connection, every 202 stored, gone by the deadline",
    () =>
      Effect.gen(function* () {
        const url = Redacted.value(yield* freshSchemaUrl(databaseUrl!))
        const port = yield* Effect.promise(freePort)
        const server = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startServer(url, port, {
              ACCORD_BOOTSTRAP_INGEST_KEY: ingestKey,
              ACCORD_SHUTDOWN_TIMEOUT: `${deadlineMillis / 1000}s`,
              ACCORD_INGEST_RATE_LIMIT: "1000000",
              LOG_LEVEL: "Info"
            })
          ),
          (running) => Effect.sync(() => running.child.kill("SIGKILL"))
        )
        const run = yield* Effect.promise(() =>
          runShutdownUnderLoad({
            child: server.child,
            exited: server.exited,
            port,
            key: ingestKey,
            connections: 4,
            warmupAnswers: 20,
            giveUpMillis: 20_000
          })
        )
        const context = `${JSON.stringify({ ...run, connections: run.connections.map((c) => ({ answers: c.answers.length, last: c.answers.at(-1)?.answer.headers, error: c.error, closedByServer: c.closedByServer })), accepted: run.accepted.length })}\n${server.output()}`

        assert.isAtMost(run.exitMillis, deadlineMillis + exitSlackMillis, context)
        assert.strictEqual(run.exit, "0", context)
        for (const connection of run.connections) {
          assert.isTrue(connection.closedByServer, context)
          assert.isUndefined(connection.error, context)
          const last = connection.answers.at(-1)!.answer
          assert.strictEqual(last.headers["connection"], "close", context)
          assert.strictEqual(last.status, 202, context)
        }
        assert.isAbove(run.probes, 0, context)
        assert.strictEqual(run.probesAccepted, 0, context)
        assert.isTrue(run.held.closed, context)

        const stored = yield* Effect.promise(() =>
          query<{ event_id: string }>(
            url,
            `SELECT event_id FROM accord_events WHERE event_id IN (${run.accepted.map((id) => `'${id}'`).join(",")})`
          )
        )
        assert.isAbove(run.accepted.length, 0)
        assert.deepStrictEqual(stored.map((row) => row.event_id).sort(), [...run.accepted].sort())
      }),
    180_000
  )
})
