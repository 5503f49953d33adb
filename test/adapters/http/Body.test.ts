/**
 * The one body reader's limits, shared by the platform route and the `node:http` ingest route.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { declaresTooMuch, drainBytes, limitedBody } from "../../../adapters/http/Body.ts"

const bytes = (n: number, fill = 1) => new Uint8Array(n).fill(fill)

describe("limitedBody", () => {
  it.effect("a body within the limit is its chunks joined in order", () =>
    Effect.gen(function* () {
      const body = limitedBody(8)
      assert.isTrue(body.add(bytes(3, 1)))
      assert.isTrue(body.add(bytes(5, 2)))
      assert.deepStrictEqual(Array.from(yield* body.result()), [1, 1, 1, 2, 2, 2, 2, 2])
    })
  )

  it.effect("past the limit the rest is drained up to drainBytes, then reading stops; either way 413", () =>
    Effect.gen(function* () {
      const body = limitedBody(8)
      assert.isTrue(body.add(bytes(9)))
      assert.isTrue(body.add(bytes(drainBytes - 1)))
      const problem = yield* Effect.flip(body.result())
      assert.strictEqual(problem.status, 413)
      assert.strictEqual(problem.code, "content_too_large")
      assert.isFalse(body.add(bytes(1)))
      assert.strictEqual((yield* Effect.flip(body.result())).status, 413)
    })
  )

  it.effect("an empty body is empty", () =>
    Effect.map(limitedBody(8).result(), (body) => assert.strictEqual(body.length, 0))
  )
})

describe("declaresTooMuch", () => {
  it("refuses only a plain decimal Content-Length over the limit", () => {
    assert.isTrue(declaresTooMuch("9", 8))
    assert.isTrue(declaresTooMuch(" 100 ", 8))
    assert.isFalse(declaresTooMuch("8", 8))
    assert.isFalse(declaresTooMuch(undefined, 8))
    assert.isFalse(declaresTooMuch("1e3", 8))
  })
})
