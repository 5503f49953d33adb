import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { assert, describe, it } from "@effect/vitest"

const run = promisify(execFile)
const root = fileURLToPath(new URL("..", import.meta.url))
const bin = (name: string) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url))
const smoke = "test/runtime/smoke.ts"

const runtimes: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
  ["node", bin("tsx"), [smoke]],
  ["bun", bin("bun"), [smoke]],
  ["deno", bin("deno"), ["run", "--no-prompt", "--allow-read", smoke]]
]

describe("runtime smoke: core and both Crypto layers sign and verify the vectors", () => {
  for (const [runtime, command, args] of runtimes) {
    it(runtime, async () => {
      const { stdout } = await run(command, [...args], { cwd: root, timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } })
      const report = JSON.parse(stdout.trim().split("\n").at(-1)!)
      assert.strictEqual(report.runtime, runtime)
      assert.isTrue(report.ok)
      assert.isAbove(report.vectorsVerified.webcrypto, 0)
      assert.strictEqual(report.vectorsVerified.webcrypto, report.vectorsVerified.nodeCrypto)
    }, 90_000)
  }
})
