import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { hasStackTrace, root, runCli, runCliInProcess, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version

/** Every command path, for `--help`. */
const commands: ReadonlyArray<ReadonlyArray<string>> = [
  [],
  ["customer"],
  ["customer", "doctor"],
  ["validate"],
  ["classify"],
  ["send-test-event"],
  ["workspace"],
  ["workspace", "create"],
  ["keys"],
  ["keys", "create"],
  ["install"],
  ["install", "handoff"],
  ["context-server"],
  ["context-server", "start"],
  ["backfill"]
]

describe("accord (process)", () => {
  it("prints its version", async () => {
    const result = await runCli(["--version"])
    assert.strictEqual(result.code, 0)
    assert.strictEqual(result.stdout.trim(), version)
  })

  it("runs as npm run accord -- … in the checkout", async () => {
    const { spawnSync } = await import("node:child_process")
    const result = spawnSync(
      process.platform === "win32" ? "npm.cmd" : "npm",
      ["run", "-s", "accord", "--", "--version"],
      {
        cwd: root,
        encoding: "utf8"
      }
    )
    assert.strictEqual(result.status, 0, result.stderr)
    assert.strictEqual(result.stdout.trim(), version)
  })

  it("has --help on every command", async () => {
    const results: Array<Awaited<ReturnType<typeof runCliInProcess>>> = []
    for (const path of commands) results.push(await runCliInProcess([...path, "--help"]))
    results.forEach((result, i) => {
      const name = ["accord", ...commands[i]!].join(" ")
      assert.strictEqual(result.code, 0, `${name} --help: ${result.stderr}`)
      assert.include(result.stdout, "USAGE", name)
      // @effect/cli shows a subcommand's usage from its own name
      assert.include(result.stdout, `$ ${commands[i]!.at(-1) ?? "accord"}`, name)
    })
  })

  it("generates shell completions", async () => {
    const [bash, zsh] = await Promise.all([
      runCliInProcess(["--completions", "bash"]),
      runCliInProcess(["--completions", "zsh"])
    ])
    assert.strictEqual(bash.code, 0)
    assert.include(bash.stdout, "complete")
    assert.include(bash.stdout, "validate")
    assert.strictEqual(zsh.code, 0)
    assert.include(zsh.stdout, "compdef")
  })

  it("refuses an unknown command with exit 2 and no stack trace", async () => {
    const result = await runCli(["frobnicate"])
    assert.strictEqual(result.code, 2)
    assert.isFalse(hasStackTrace(result.stderr))
    assert.include(result.stderr, "validate")
  })

  it("refuses an unknown option with exit 2", async () => {
    const result = await runCliInProcess(["validate", "--frob", "x.json"])
    assert.strictEqual(result.code, 2)
    assert.isFalse(hasStackTrace(result.stderr))
  })

  describe("customer doctor (moved under the CLI, same flags and environment)", () => {
    const env = {
      ACCORD_WORKSPACE_ID: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
      ACCORD_ACTION_SIGNING_SECRET: "doctor-action-secret-0123456789abcdef-XYZ",
      ACCORD_COMPLETION_SECRET: "doctor-completion-secret-0123456789abcdef-XYZ"
    }

    it("needs --endpoint (exit 2)", async () => {
      const result = await runCliInProcess(["customer", "doctor"], { env })
      assert.strictEqual(result.code, 2)
      assert.include(result.stderr, "--endpoint")
    })

    it("needs its secrets from the environment (exit 2, one line naming the variable)", async () => {
      const result = await runCliInProcess(["customer", "doctor", "--endpoint", "http://127.0.0.1:9/connector"], {
        env: { ACCORD_WORKSPACE_ID: env.ACCORD_WORKSPACE_ID }
      })
      assert.strictEqual(result.code, 2)
      assert.strictEqual(result.stderr.trim(), "accord: ACCORD_ACTION_SIGNING_SECRET is required")
    })

    it("refuses a bad ACCORD_CONNECTION_REVISION (exit 2)", async () => {
      const result = await runCliInProcess(["customer", "doctor", "--endpoint", "http://127.0.0.1:9/c"], {
        env: { ...env, ACCORD_CONNECTION_REVISION: "two" }
      })
      assert.strictEqual(result.code, 2)
      assert.include(result.stderr, "ACCORD_CONNECTION_REVISION")
    })

    it("reports failed checks with exit 1, as JSON with --json, and never prints a secret", async () => {
      const result = await runCliInProcess(
        ["customer", "doctor", "--endpoint", "http://127.0.0.1:9/connector", "--revision", "0", "--json"],
        { env }
      )
      assert.strictEqual(result.code, 1, result.stderr)
      const report = JSON.parse(result.stdout) as { ok: boolean; checks: Array<{ id: string; ok: boolean }> }
      assert.isFalse(report.ok)
      assert.isAbove(report.checks.length, 0)
      for (const secret of [env.ACCORD_ACTION_SIGNING_SECRET, env.ACCORD_COMPLETION_SECRET]) {
        assert.notInclude(result.stdout + result.stderr, secret)
      }
    })
  })
})
