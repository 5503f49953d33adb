/**
 * Quiet tests: console output (Effect's console loggers, request logs, anything a test prints) is
 * held back while hooks and tests run and printed only when a test fails, so a passing `npm test`
 * prints no log lines. Output written while a file is being collected (a skip notice such as
 * "PostgreSQL suites SKIPPED") passes straight through. Registered as a vitest `setupFiles` entry,
 * so it is installed in every test file before the file's own hooks.
 */
import { afterAll, afterEach, beforeAll } from "vitest"
import type { RunnerTask } from "vitest"

/** The console methods Effect's loggers and the tests use. */
export const capturedMethods = ["log", "info", "warn", "error", "debug", "trace"] as const

type Method = (typeof capturedMethods)[number]

interface Line {
  readonly method: Method
  readonly args: Array<unknown>
}

/**
 * Replaces the console methods with ones that append to a buffer while `capturing()` holds, and
 * returns what is needed to print (`flush`) or drop (`clear`) the buffer and to restore the console.
 */
export const captureConsole = (
  target: Console,
  capturing: () => boolean
): {
  readonly flush: () => void
  readonly clear: () => void
  readonly restore: () => void
} => {
  const originals = Object.fromEntries(capturedMethods.map((method) => [method, target[method]])) as Record<
    Method,
    (...args: Array<unknown>) => void
  >
  let buffer: Array<Line> = []
  for (const method of capturedMethods) {
    target[method] = (...args: Array<unknown>) => {
      if (capturing()) buffer.push({ method, args })
      else originals[method].apply(target, args)
    }
  }
  return {
    flush: () => {
      const lines = buffer
      buffer = []
      for (const { args, method } of lines) originals[method].apply(target, args)
    },
    clear: () => {
      buffer = []
    },
    restore: () => {
      for (const method of capturedMethods) target[method] = originals[method]
    }
  }
}

const failed = (task: RunnerTask): boolean =>
  task.result?.state === "fail" || (task.type === "suite" && task.tasks.some(failed))

let capturing = false
const captured = captureConsole(globalThis.console, () => capturing)

// Collection is over once the first hook runs; from then on everything is held back.
beforeAll(() => {
  capturing = true
})

// The output since the previous test (this test's, and the hooks' before it) is printed only when
// this test failed. This hook is registered first, so with stacked after-hooks it runs last and sees
// the output of the file's own afterEach hooks too.
afterEach(({ task }) => {
  if (task.result?.state === "fail") captured.flush()
  else captured.clear()
})

// What the after-all hooks printed, or a failed before-all hook, is shown when anything in the file
// failed.
afterAll((suite) => {
  if (failed(suite)) captured.flush()
  else captured.clear()
  capturing = false
})
