import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { classificationRules } from "../../../core/ingest/Classify.ts"
import { emissionRules, eventFamilies, neverSend } from "../../../core/ingest/EmissionRules.ts"
import { cliInProcess, tempFiles, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

describe("accord install handoff (in process)", () => {
  it.live("writes the markdown handoff from core's definitions", () =>
    Effect.gen(function* () {
      const out = join(tempFiles({}), "handoff.md")
      const result = yield* cliInProcess(["install", "handoff", "--target", "markdown", "--out", out])
      assert.strictEqual(result.code, 0, result.stderr)
      const text = readFileSync(out, "utf8")
      for (const family of eventFamilies) for (const name of family.names) assert.include(text, `\`${name}\``)
      for (const rule of emissionRules) assert.include(text, rule)
      for (const item of neverSend) assert.include(text, item)
      for (const rule of classificationRules) assert.include(text, `| \`${rule.rule}\` | \`${rule.classification}\` |`)
      assert.include(text, "`SERVICE_INGEST_API_KEY`: the ingest key. **Server-only**")
      assert.include(text, "`SERVICE_API_KEY`: a key of scope `developer:read`")
      assert.include(text, "accord validate events.json --source direct --json")
      assert.include(text, "accord send-test-event event.json")
    })
  )

  it.live("writes AGENTS.md and a Cursor rule, and refuses to overwrite without --force", () =>
    Effect.gen(function* () {
      const dir = tempFiles({})
      const agents = join(dir, "AGENTS.md")
      writeFileSync(agents, "# mine\n")
      const [refused, cursor] = yield* Effect.all(
        [
          cliInProcess(["install", "handoff", "--target", "agents-md", "--out", agents]),
          cliInProcess(["install", "handoff", "--target", "cursor", "--out", join(dir, ".cursor/rules/accord.mdc")])
        ],
        { concurrency: "unbounded" }
      )
      assert.strictEqual(refused.code, 2)
      assert.strictEqual(refused.stderr.trim(), `accord: ${agents} exists; pass --force to replace it`)
      assert.strictEqual(readFileSync(agents, "utf8"), "# mine\n")
      assert.strictEqual(cursor.code, 0, cursor.stderr)
      assert.match(
        readFileSync(join(dir, ".cursor/rules/accord.mdc"), "utf8"),
        /^---\ndescription: .+\nalwaysApply: false\n---\n\n# Accord Direct API/
      )
      const forced = yield* cliInProcess(["install", "handoff", "--target", "agents-md", "--out", agents, "--force"])
      assert.strictEqual(forced.code, 0, forced.stderr)
      assert.include(readFileSync(agents, "utf8"), "# Accord Direct API: handoff for coding agents")
    })
  )

  it.live("a wrong --target is a usage error (exit 2)", () =>
    Effect.gen(function* () {
      const result = yield* cliInProcess(["install", "handoff", "--target", "word"])
      assert.strictEqual(result.code, 2)
    })
  )
})
