import { assert, describe, it } from "@effect/vitest"
import * as Problem from "../../../adapters/http/Problem.ts"

const issues = (n: number, message = "is not a field of the event; put custom data in properties") =>
  Array.from({ length: n }, (_, i) => ({ path: `field_${i}`, message, code: "invalid_event" }))

describe("Problem", () => {
  it("keeps up to 20 field errors as they are, without errors_omitted", () => {
    const problem = Problem.make(400, "invalid_event", "d", { errors: issues(Problem.maxFieldErrors) })
    assert.strictEqual(problem.errors?.length, Problem.maxFieldErrors)
    assert.isUndefined(problem.errors_omitted)
    assert.notProperty(Problem.toAnswer(problem).body as object, "errors_omitted")
  })

  it("keeps the first 20 of more and counts the rest in errors_omitted", () => {
    const problem = Problem.make(400, "invalid_event", "d", { errors: issues(500) })
    assert.deepStrictEqual(problem.errors, issues(500).slice(0, Problem.maxFieldErrors))
    assert.strictEqual(problem.errors_omitted, 480)
  })

  it("bounds the bytes too: long paths and messages are cut, and fewer errors are kept", () => {
    const long = Array.from({ length: 30 }, (_, i) => ({ path: "p".repeat(5000) + i, message: "m".repeat(5000) }))
    const bounded = Problem.boundFieldErrors(long)
    assert.isBelow(JSON.stringify(bounded.errors).length, Problem.maxFieldErrorsBytes)
    assert.strictEqual(bounded.errors.length + bounded.omitted, 30)
    for (const error of bounded.errors) assert.isAtMost(error.path.length + error.message.length, 1024)
  })
})
