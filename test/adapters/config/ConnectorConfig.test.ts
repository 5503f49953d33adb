/**
 * `ACCORD_RECONCILIATION_WINDOW` and `ACCORD_DISPATCH_CONCURRENCY`: defaults, accepted forms, and one clear problem line for a bad
 * value (never the value).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as AccordConfig from "../../../adapters/config/AccordConfig.ts"
import { defaultReconciliationWindowMillis } from "../../../core/connector/ConnectionMaintenance.ts"
import { configFrom } from "../../support/http.ts"

describe("ACCORD_RECONCILIATION_WINDOW", () => {
  it.effect("defaults to 30 days, the core's default", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({})
      assert.strictEqual(config.reconciliationWindowMillis, 30 * 86_400_000)
      assert.strictEqual(config.reconciliationWindowMillis, defaultReconciliationWindowMillis)
    })
  )

  it.effect("accepts seconds, minutes, hours and days", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [string, number]> = [
        ["90d", 90 * 86_400_000],
        ["12h", 12 * 3_600_000],
        ["45m", 45 * 60_000],
        ["3600s", 3_600_000],
        [" 7D ", 7 * 86_400_000],
        ["", 30 * 86_400_000]
      ]
      for (const [value, millis] of cases) {
        assert.strictEqual(
          (yield* configFrom({ ACCORD_RECONCILIATION_WINDOW: value })).reconciliationWindowMillis,
          millis,
          value
        )
      }
    })
  )

  it.effect("refuses malformed and out-of-range values with one line that does not quote them", () =>
    Effect.gen(function* () {
      for (const value of ["30", "30 days", "-1d", "59s", "3651d", "1.5h", "d"]) {
        const problems = yield* Effect.map(
          Effect.flip(configFrom({ ACCORD_RECONCILIATION_WINDOW: value })),
          (e) => e.problems
        )
        assert.deepStrictEqual(
          problems,
          ["ACCORD_RECONCILIATION_WINDOW must be a duration from 1m to 3650d, such as 30d, 12h or 90m"],
          value
        )
      }
      assert.strictEqual(AccordConfig.parseDuration("2h"), 7_200_000)
    })
  )
})

describe("ACCORD_DISPATCH_CONCURRENCY", () => {
  it.effect("defaults to 32 and accepts integers from 1 to 1024", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* configFrom({})).dispatchConcurrency, 32)
      for (const [value, limit] of [
        ["1", 1],
        ["128", 128],
        [" 1024 ", 1024],
        ["", 32]
      ] as const) {
        assert.strictEqual(
          (yield* configFrom({ ACCORD_DISPATCH_CONCURRENCY: value })).dispatchConcurrency,
          limit,
          value
        )
      }
    })
  )

  it.effect(
    "refuses zero, negative, fractional, too large and non-numeric values with one line that does not quote them",
    () =>
      Effect.gen(function* () {
        for (const value of ["0", "-4", "2.5", "1025", "many"]) {
          const problems = yield* Effect.map(
            Effect.flip(configFrom({ ACCORD_DISPATCH_CONCURRENCY: value })),
            (e) => e.problems
          )
          assert.deepStrictEqual(
            problems,
            ["ACCORD_DISPATCH_CONCURRENCY must be an integer from 1 to 1024 (deliveries in flight)"],
            value
          )
        }
      })
  )
})
