/**
 * A start against a PostgreSQL that is not there is bounded: a host that accepts connections and
 * never answers fails the start within the storage bound, with the reason in one line (what the
 * runtime prints before it exits); a refused
 * connection says ECONNREFUSED; `ACCORD_DATABASE_WAIT` keeps trying, a line per attempt.
 */
import { createServer, type Socket } from "node:net"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { createServer as createHttpServer } from "node:http"
import * as Server from "../../runtimes/Server.ts"
import { closedPort } from "../core/connector/dispatch/support.ts"
import { configFrom } from "../support/http.ts"
import * as StartupLog from "../../adapters/config/StartupLog.ts"

/** A TCP listener that accepts every connection and never says a word. */
const blackHole = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ readonly port: number; readonly close: () => void }>((resolve) => {
        const sockets = new Set<Socket>()
        const server = createServer((socket) => {
          sockets.add(socket)
          socket.on("error", () => undefined)
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({
            port: (server.address() as { port: number }).port,
            close: () => {
              for (const socket of sockets) socket.destroy()
              server.close()
            }
          })
        )
      })
  ),
  (hole) => Effect.sync(hole.close)
)

/** Starts the server (and stops it) with `env`; its exit. */
const startWith = (env: Record<string, string>) =>
  Effect.flatMap(configFrom({ ACCORD_DATA_DIR: "memory://", ...env }), (config) =>
    Effect.exit(
      Effect.scoped(Server.start(config, NodeHttpServer.layerServer(createHttpServer, { port: 0, host: "127.0.0.1" })))
    )
  )

describe("start against an unreachable PostgreSQL", () => {
  it.live("a listener that never answers: the start fails within 15 s, its reason in one line", () =>
    Effect.gen(function* () {
      const hole = yield* blackHole
      const started = Date.now()
      const exit = yield* startWith({
        DATABASE_URL: `postgres://accord@127.0.0.1:${hole.port}/accord`,
        ACCORD_STORAGE_TIMEOUT: "2s"
      })
      assert.isBelow(Date.now() - started, 15_000)
      assert.isTrue(Exit.isFailure(exit))
      const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      assert.isTrue(Option.isSome(failure))
      if (Option.isSome(failure)) {
        const lines = StartupLog.startFailure(failure.value)
        assert.strictEqual(lines.filter((line) => line.includes("cannot connect to PostgreSQL")).length, 1)
        assert.match(lines.join("\n"), /cannot connect to PostgreSQL: timeout: no answer within 2 s/)
      }
    }).pipe(Effect.scoped)
  )

  it.live("a refused connection fails with ECONNREFUSED; ACCORD_DATABASE_WAIT retries with a line per attempt", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(closedPort)
      const lines: Array<string> = []
      const logger = Logger.make(({ message }) => {
        lines.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      const start = (wait: string) =>
        startWith({ DATABASE_URL: `postgres://accord@127.0.0.1:${port}/accord`, ACCORD_DATABASE_WAIT: wait }).pipe(
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )

      const once = yield* start("0")
      assert.isTrue(Exit.isFailure(once))
      if (Exit.isFailure(once)) assert.match(String(once.cause), /ECONNREFUSED/)
      assert.isFalse(
        lines.some((line) => line.includes("attempt")),
        lines.join("\n")
      )

      const waited = yield* start("3s")
      assert.isTrue(Exit.isFailure(waited))
      if (Exit.isFailure(waited)) assert.match(String(waited.cause), /after \d attempts\): .*ECONNREFUSED/)
      const attempts = lines.filter((line) =>
        /cannot connect to PostgreSQL yet \(attempt \d\): .*ECONNREFUSED/.test(line)
      )
      assert.isAtLeast(attempts.length, 2, lines.join("\n"))
    })
  )
})
