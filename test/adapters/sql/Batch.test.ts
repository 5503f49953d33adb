/**
 * The statement batcher's round splitting: the rule that lets one statement serve many callers
 * without ever seeing a key twice.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import { inRounds, rounds } from "../../../adapters/sql/Batch.ts"

const keyLists = fc.array(fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f"), { minLength: 1, maxLength: 3 }), { maxLength: 40 })

describe("Batch rounds", () => {
  it.prop("every item lands in exactly one round, in order, and no round repeats a key", [keyLists], ([items]) => {
    const split = rounds(items, (k) => k)
    assert.deepStrictEqual(split.flat().sort((a, b) => a - b), items.map((_, i) => i))
    for (const round of split) {
      assert.deepStrictEqual([...round].sort((a, b) => a - b), round)
      const keys = round.flatMap((i) => Array.from(new Set(items[i]!)))
      assert.strictEqual(new Set(keys).size, keys.length)
    }
  })

  it.prop("an item waits for a later round only because the round before holds one of its keys", [keyLists], ([items]) => {
    const split = rounds(items, (k) => k)
    split.forEach((round, r) => {
      if (r === 0) return
      const held = new Set(split[r - 1]!.flatMap((j) => items[j]!))
      for (const i of round) assert.isTrue(items[i]!.some((k) => held.has(k)))
    })
  })

  it.prop("each key's items keep their order across rounds", [keyLists], ([items]) => {
    const split = rounds(items, (k) => k)
    const roundOf = new Map(split.flatMap((round, r) => round.map((i) => [i, r] as const)))
    items.forEach((keys, i) => {
      items.forEach((other, j) => {
        if (j > i && other.some((k) => keys.includes(k))) assert.isTrue(roundOf.get(j)! > roundOf.get(i)!)
      })
    })
  })

  it.effect("inRounds answers each item in its own position, one statement per round", () =>
    Effect.gen(function*() {
      const statements: Array<ReadonlyArray<string>> = []
      const items = ["x", "y", "x", "z", "x", "y"]
      const answers = yield* inRounds(items, (k) => [k], (round) => {
        statements.push(round)
        return Effect.succeed(round.map((k) => `${k}@${statements.length}`))
      })
      assert.deepStrictEqual(statements, [["x", "y", "z"], ["x", "y"], ["x"]])
      assert.deepStrictEqual(answers, ["x@1", "y@1", "x@2", "z@1", "x@3", "y@2"])
    }))
})
