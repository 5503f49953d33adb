import { assert, describe, it } from "@effect/vitest"
import { captureConsole } from "./quietConsole.ts"

const fakeConsole = () => {
  const printed: Array<string> = []
  const target = {
    log: (...args: ReadonlyArray<unknown>) => printed.push(`log ${args.join(" ")}`),
    info: (...args: ReadonlyArray<unknown>) => printed.push(`info ${args.join(" ")}`),
    warn: (...args: ReadonlyArray<unknown>) => printed.push(`warn ${args.join(" ")}`),
    error: (...args: ReadonlyArray<unknown>) => printed.push(`error ${args.join(" ")}`),
    debug: (...args: ReadonlyArray<unknown>) => printed.push(`debug ${args.join(" ")}`),
    trace: (...args: ReadonlyArray<unknown>) => printed.push(`trace ${args.join(" ")}`)
  } as unknown as Console
  return { printed, target }
}

describe("quietConsole", () => {
  it("holds output back while capturing and prints it, in order, on flush", () => {
    const { printed, target } = fakeConsole()
    const captured = captureConsole(target, () => true)
    target.log("level=INFO", "one")
    target.error("two")
    target.debug("three")
    assert.deepStrictEqual(printed, [])
    captured.flush()
    assert.deepStrictEqual(printed, ["log level=INFO one", "error two", "debug three"])
    captured.flush()
    assert.lengthOf(printed, 3)
  })

  it("drops held output on clear", () => {
    const { printed, target } = fakeConsole()
    const captured = captureConsole(target, () => true)
    target.info("passing test noise")
    captured.clear()
    captured.flush()
    assert.deepStrictEqual(printed, [])
  })

  it("passes output straight through while not capturing (a skip notice at collection)", () => {
    const { printed, target } = fakeConsole()
    let capturing = false
    const captured = captureConsole(target, () => capturing)
    target.warn("PostgreSQL suites SKIPPED")
    capturing = true
    target.warn("held")
    assert.deepStrictEqual(printed, ["warn PostgreSQL suites SKIPPED"])
    captured.flush()
    assert.deepStrictEqual(printed, ["warn PostgreSQL suites SKIPPED", "warn held"])
  })

  it("restores the original methods", () => {
    const { printed, target } = fakeConsole()
    const original = target.log
    const captured = captureConsole(target, () => true)
    assert.notStrictEqual(target.log, original)
    captured.restore()
    assert.strictEqual(target.log, original)
    target.log("direct")
    assert.deepStrictEqual(printed, ["log direct"])
  })
})
