/**
 * The statement batcher's round splitting (the rule that lets one statement serve many callers
 * without ever seeing a key twice), and on a real database: callers outside a transaction share a
 * statement, a caller inside one runs alone on its connection.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Scope from "effect/Scope"
import * as fc from "fast-check"
import { inRounds, makeBatcher, rounds } from "../../../adapters/sql/Batch.ts"
import { layerEmpty } from "../../support/pgliteTemplate.ts"
import * as Batcher from "../../../core/ports/Batcher.ts"

const keyLists = fc.array(fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f"), { minLength: 1, maxLength: 3 }), {
  maxLength: 40
})

describe("Batch rounds", () => {
  it.prop("every item lands in exactly one round, in order, and no round repeats a key", [keyLists], ([items]) => {
    const split = rounds(items, (k) => k)
    assert.deepStrictEqual(
      split.flat().sort((a, b) => a - b),
      items.map((_, i) => i)
    )
    for (const round of split) {
      assert.deepStrictEqual(
        [...round].sort((a, b) => a - b),
        round
      )
      const keys = round.flatMap((i) => Array.from(new Set(items[i]!)))
      assert.strictEqual(new Set(keys).size, keys.length)
    }
  })

  it.prop(
    "an item waits for a later round only because the round before holds one of its keys",
    [keyLists],
    ([items]) => {
      const split = rounds(items, (k) => k)
      split.forEach((round, r) => {
        if (r === 0) return
        const held = new Set(split[r - 1]!.flatMap((j) => items[j]!))
        for (const i of round) assert.isTrue(items[i]!.some((k) => held.has(k)))
      })
    }
  )

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
    Effect.gen(function* () {
      const statements: Array<ReadonlyArray<string>> = []
      const items = ["x", "y", "x", "z", "x", "y"]
      const answers = yield* inRounds(
        items,
        (k) => [k],
        (round) => {
          statements.push(round)
          return Effect.succeed(round.map((k) => `${k}@${statements.length}`))
        }
      )
      assert.deepStrictEqual(statements, [["x", "y", "z"], ["x", "y"], ["x"]])
      assert.deepStrictEqual(answers, ["x@1", "y@1", "x@2", "z@1", "x@3", "y@2"])
    })
  )
})

describe("makeBatcher on a real database (PGlite)", () => {
  const withTable = <A, E>(body: (sql: SqlClient.SqlClient) => Effect.Effect<A, E, Scope.Scope>) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE batch_items (id text PRIMARY KEY)`
      return yield* body(sql)
    }).pipe(Effect.scoped, Effect.provide(layerEmpty()))

  it.effect("outside a transaction, callers arriving together share one statement", () =>
    withTable((sql) =>
      Effect.gen(function* () {
        const statements: Array<number> = []
        const insert = yield* makeBatcher(
          (ids: ReadonlyArray<string>) => {
            statements.push(ids.length)
            return Effect.as(
              sql`INSERT INTO batch_items ${sql.insert(ids.map((id) => ({ id })))}`,
              ids.map(() => true)
            )
          },
          { workers: 1, gather: Batcher.gatherNextTurn }
        )
        const answers = yield* Effect.all(
          Array.from({ length: 10 }, (_, i) => insert(`item_${i}`)),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(answers, Array(10).fill(true))
        assert.deepStrictEqual(statements, [10])
      })
    )
  )

  it.effect(
    "inside a caller's transaction, the item runs alone on its connection: it sees the transaction's rows and a rollback takes it back",
    () =>
      withTable((sql) =>
        Effect.gen(function* () {
          const count = yield* makeBatcher(
            (ids: ReadonlyArray<string>) =>
              Effect.map(
                sql<{ n: number }>`SELECT count(*)::int AS n FROM batch_items WHERE id IN ${sql.in(ids)}`,
                (rows) => ids.map(() => rows[0]!.n)
              ),
            { workers: 1 }
          )
          const rolledBack = yield* Effect.either(
            sql.withTransaction(
              Effect.gen(function* () {
                yield* sql`INSERT INTO batch_items (id) VALUES ('inside')`
                // Sent to the batch, this count would wait for PGlite's one connection, which the
                // transaction holds, and never answer.
                assert.strictEqual(yield* count("inside"), 1)
                return yield* Effect.fail("undo" as const)
              })
            )
          )
          assert.deepStrictEqual(rolledBack, Either.left("undo"))
          assert.strictEqual(yield* count("inside"), 0)
        })
      )
  )
})
