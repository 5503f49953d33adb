import { assert, describe, it } from "@effect/vitest"
import * as Problem from "../../../adapters/http/Problem.ts"

const issues = (n: number, message = "is not a field of the event; put custom data in properties") =>
  Array.from({ length: n }, (_, i) => ({ path: `field_${i}`, message, code: "invalid_event" }))

describe("Problem", () => {
  it("titles every status the server answers with its reason phrase, never a generic one", () => {
    for (const [status, title] of [
      [400, "Bad Request"],
      [401, "Unauthorized"],
      [403, "Forbidden"],
      [404, "Not Found"],
      [405, "Method Not Allowed"],
      [409, "Conflict"],
      [410, "Gone"],
      [413, "Content Too Large"],
      [415, "Unsupported Media Type"],
      [422, "Unprocessable Content"],
      [429, "Too Many Requests"],
      [500, "Internal Server Error"],
      [503, "Service Unavailable"]
    ] as const)
      assert.strictEqual(Problem.make(status, "x", "d").title, title)
  })

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
