/**
 * The storage fault log line and counter: one WARN line per distinct fault per interval, saying
 * the driver's code and message and how many of the same it did not log, never a stack trace;
 * every fault counted by its cause in `accord_storage_faults_total`, whether logged or not.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as TestClock from "effect/TestClock"
import { toStorageError } from "../../../adapters/sql/SqlSupport.ts"
import * as StorageFaultLog from "../../../adapters/telemetry/StorageFaultLog.ts"
import { StorageError, type StorageFault } from "../../../core/ports/StorageError.ts"
import * as Metrics from "../../../core/telemetry/Metrics.ts"

interface Line {
  readonly level: string
  readonly message: string
  readonly stackFree: boolean
  readonly annotations: Record<string, unknown>
}

/** Runs `effect` with the log lines it writes captured (and nothing printed). */
const captured = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const lines: Array<Line> = []
    const logger = Logger.make(({ annotations, cause, logLevel, message }) => {
      lines.push({
        level: logLevel.label,
        message: Array.isArray(message) ? message.join(" ") : String(message),
        stackFree: Cause.isEmpty(cause),
        annotations: Object.fromEntries(HashMap.toEntries(annotations))
      })
    })
    yield* effect.pipe(
      Logger.withMinimumLogLevel(LogLevel.All),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger))
    )
    return lines
  })

/** A fault no other test of this process logs (the log remembers faults for the whole process). */
const fault = (message: string, kind: StorageFault = "timeout", code: string | null = "57014") =>
  new StorageError({
    operation: "ingest.write",
    message: `${message} ${Math.random().toString(36).slice(2)}`,
    fault: kind,
    ...(code === null ? {} : { code })
  })

const counted = (cause: StorageFault) =>
  Effect.map(Metric.value(Metric.tagged(Metrics.storageFaults, "cause", cause)), (state) => state.count)

describe("StorageFaultLog", () => {
  it.effect("one WARN line per distinct fault per interval, with the driver's code and message", () =>
    Effect.gen(function* () {
      const timeout = fault("canceling statement due to statement timeout")
      const lines = yield* captured(
        Effect.gen(function* () {
          for (let i = 0; i < 5; i++) yield* StorageFaultLog.warn(timeout)
          yield* TestClock.adjust(StorageFaultLog.interval - 1)
          yield* StorageFaultLog.warn(timeout)
        })
      )
      assert.strictEqual(lines.length, 1)
      assert.strictEqual(lines[0]!.level, "WARN")
      assert.strictEqual(lines[0]!.message, `storage unavailable: timeout 57014: ${timeout.message}`)
      assert.deepStrictEqual(lines[0]!.annotations, { operation: "ingest.write", cause: "timeout", code: "57014" })
    })
  )

  it.effect("the next line after the interval says how many of the same were not logged", () =>
    Effect.gen(function* () {
      const lost = fault("Connection terminated unexpectedly", "connection", null)
      const lines = yield* captured(
        Effect.gen(function* () {
          yield* StorageFaultLog.warn(lost)
          yield* TestClock.adjust(1_000)
          yield* StorageFaultLog.warn(lost)
          yield* StorageFaultLog.warn(lost)
          yield* TestClock.adjust(StorageFaultLog.interval)
          yield* StorageFaultLog.warn(lost)
        })
      )
      assert.deepStrictEqual(
        lines.map((line) => line.annotations["repeated"]),
        [undefined, "2"]
      )
      assert.strictEqual(lines[1]!.message, `storage unavailable: connection: ${lost.message}`)
      assert.notProperty(lines[1]!.annotations, "code")
    })
  )

  it.effect("distinct faults each get their line within the same interval", () =>
    Effect.gen(function* () {
      const lines = yield* captured(
        Effect.gen(function* () {
          yield* StorageFaultLog.warn(fault("canceling statement due to statement timeout"))
          yield* StorageFaultLog.warn(fault("sorry, too many clients already", "overloaded", "53300"))
          yield* StorageFaultLog.warn(fault("could not serialize access", "conflict", "40001"))
        })
      )
      assert.deepStrictEqual(
        lines.map((line) => line.annotations["cause"]),
        ["timeout", "overloaded", "conflict"]
      )
    })
  )

  it.effect("no stack trace below ERROR: the line carries no cause, and its text is one line", () =>
    Effect.gen(function* () {
      const lines = yield* captured(StorageFaultLog.warn(fault("connect ECONNREFUSED", "connection", "ECONNREFUSED")))
      assert.strictEqual(lines.length, 1)
      assert.isTrue(lines[0]!.stackFree)
      assert.notInclude(lines[0]!.message, "\n")
      assert.notMatch(lines[0]!.message, /\bat .+:\d+:\d+/)
    })
  )

  it.effect("every fault is counted by its cause, logged or not", () =>
    Effect.gen(function* () {
      const driverErrors: ReadonlyArray<readonly [StorageFault, unknown]> = [
        ["timeout", Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" })],
        ["connection", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
        ["connection", new Error("Connection terminated unexpectedly")],
        ["timeout", new Error("Connection terminated due to connection timeout", { cause: new Error("terminated") })],
        ["conflict", Object.assign(new Error("could not serialize access"), { code: "40001" })],
        ["overloaded", Object.assign(new Error("sorry, too many clients already"), { code: "53300" })],
        ["refused", Object.assign(new Error("duplicate key value"), { code: "23505" })],
        ["other", new Error("something else")]
      ]
      const causes = ["timeout", "connection", "conflict", "overloaded", "refused", "other"] as const
      const before = yield* Effect.forEach(causes, counted)
      const mapped = driverErrors.map(([, error]) => toStorageError("test", { cause: error }))
      assert.deepStrictEqual(
        mapped.map((error) => error.fault),
        driverErrors.map(([kind]) => kind)
      )
      const after = yield* Effect.forEach(causes, counted)
      assert.deepStrictEqual(
        causes.map((_, i) => after[i]! - before[i]!),
        [2, 2, 1, 1, 1, 1]
      )
    })
  )
})
