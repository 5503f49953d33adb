import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { UsageMeterStore } from "../../core/ports/UsageMeterStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const T = 1_700_000_000_000

/**
 * The UsageMeterStore contract (spec "Usage rollup event": a meter's `unit` keeps a stable meaning).
 * One store per suite; each test uses workspaces of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<UsageMeterStore, unknown>) =>
  describe(`UsageMeterStore contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const claim = (workspaceId: string, meterKey: string, unit: string, now = T) =>
        Effect.flatMap(UsageMeterStore, (store) => store.claimUnit({ workspaceId, meterKey, unit, now }))

      it.effect("the first claim records the unit (none); later claims return it, whatever unit they bring", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          assert.deepStrictEqual(yield* claim(workspaceId, "api.requests", "request"), Option.none())
          assert.deepStrictEqual(yield* claim(workspaceId, "api.requests", "token", T + 1), Option.some("request"))
          assert.deepStrictEqual(yield* claim(workspaceId, "api.requests", "request", T + 2), Option.some("request"))
        })
      )

      it.effect("meters are independent per workspace and per meter key", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const other = uid("ws-")
          assert.deepStrictEqual(yield* claim(workspaceId, "storage", "gb"), Option.none())
          assert.deepStrictEqual(yield* claim(other, "storage", "tb"), Option.none())
          assert.deepStrictEqual(yield* claim(workspaceId, "seats", "seat"), Option.none())
          assert.deepStrictEqual(yield* claim(workspaceId, "storage", "x"), Option.some("gb"))
          assert.deepStrictEqual(yield* claim(other, "storage", "x"), Option.some("tb"))
          assert.deepStrictEqual(yield* claim(workspaceId, "seats", "x"), Option.some("seat"))
        })
      )

      it.effect("20 concurrent claims with different units: exactly one records, all others see its unit", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const units = Array.from({ length: 20 }, (_, i) => `unit-${i}`)
          const results = yield* Effect.all(
            units.map((unit) => claim(workspaceId, "contended", unit)),
            {
              concurrency: "unbounded"
            }
          )
          const winners = units.filter((_, i) => Option.isNone(results[i]!))
          assert.strictEqual(winners.length, 1)
          const winner = winners[0]!
          for (const [i, result] of results.entries()) {
            if (units[i] !== winner) assert.deepStrictEqual(result, Option.some(winner))
          }
          assert.deepStrictEqual(yield* claim(workspaceId, "contended", "late"), Option.some(winner))
        })
      )

      it.effect("releasing a unit forgets it only when it is the meter's unit", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const store = yield* UsageMeterStore
          assert.deepStrictEqual(yield* claim(workspaceId, "api.requests", "request"), Option.none())
          yield* store.releaseUnit({ workspaceId, meterKey: "api.requests", unit: "token" })
          assert.deepStrictEqual(yield* claim(workspaceId, "api.requests", "token"), Option.some("request"))
          yield* store.releaseUnit({ workspaceId, meterKey: "api.requests", unit: "request" })
          assert.deepStrictEqual(yield* claim(workspaceId, "api.requests", "token"), Option.none())
          assert.deepStrictEqual(yield* claim(uid("ws-"), "api.requests", "other"), Option.none())
        })
      )
    })
  })
