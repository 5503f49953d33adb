import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { join } from "node:path"
import { runCliInProcess, tempFiles, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

describe("accord classify (in process)", () => {
  const dir = tempFiles({
    "candidates.json": JSON.stringify({
      billing_provider: "stripe",
      candidates: [
        { name: "report_exported", where: "backend", confirmed_by: "exports row" },
        { name: "plan_upgraded", where: "backend", confirmed_by: "subscriptions row" },
        { name: "pricing_page_viewed", where: "browser" },
        { name: "integration_connected", where: "webhook", covered_by: "segment" }
      ]
    }),
    "wrong.json": JSON.stringify([{ name: "x", where: "fridge" }])
  })

  it("answers each candidate with its class and deciding rule (--json)", async () => {
    const result = await runCliInProcess(["classify", join(dir, "candidates.json"), "--json"])
    assert.strictEqual(result.code, 0, result.stderr)
    const { candidates } = JSON.parse(result.stdout) as {
      candidates: Array<{ name: string; classification: string; rule: string }>
    }
    assert.deepStrictEqual(
      candidates.map((c) => [c.name, c.classification, c.rule]),
      [
        ["report_exported", "direct_api_now", "durable_backend_event"],
        ["plan_upgraded", "existing_source", "billing_provider_authoritative"],
        ["pricing_page_viewed", "web_sdk_follow_up", "client_side_only"],
        ["integration_connected", "existing_source", "covered_by_connected_source"]
      ]
    )
    const text = await runCliInProcess(["classify", join(dir, "candidates.json")])
    assert.strictEqual(text.code, 0)
    assert.match(text.stdout, /direct_api_now\s+report_exported/)
  })

  it("refuses a file that is not a candidate list (exit 2)", async () => {
    const result = await runCliInProcess(["classify", join(dir, "wrong.json")])
    assert.strictEqual(result.code, 2)
    assert.include(result.stderr, "not a candidate file")
  })
})
