import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { join } from "node:path"
import { hasStackTrace, runCliInProcess, tempFiles, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

const at = "2026-11-20T10:00:00.000Z"
const event = (fields: Record<string, unknown>) => ({ account_id: "acct_42", timestamp: at, ...fields })
const secretValue = "sk_live_51HzQe2XyZabcdefghijklmnopqrstuvw"
const leakedEmail = "jane.doe@example.com"

const good = event({ event_name: "checkout_completed", event_id: "checkout_completed:co_1" })
const unsafe = event({
  event_name: "integration_connected",
  event_id: "integration_connected:x",
  properties: { api_key: secretValue, contact: leakedEmail }
})
const invalid = { event_name: "Checkout Completed", timestamp: "yesterday" }
const noise = event({ event_name: "pricing_page_viewed" })

interface Report {
  ok: boolean
  source: string
  events: Array<{
    index: number
    line?: number
    event_name?: string
    status: string
    refusal?: string
    issues: Array<{ path: string; code: string; message: string }>
    warnings: Array<{ code: string; path: string }>
  }>
  warnings: Array<{ code: string }>
  summary: { events: number; valid: number; refused: number; warnings: number }
}

describe("accord validate (in process)", () => {
  const dir = tempFiles({
    "one.json": JSON.stringify(good),
    "array.json": JSON.stringify([good, unsafe, invalid, noise]),
    "lines.jsonl": [good, unsafe].map((e) => JSON.stringify(e)).join("\n") + "\n",
    "bad.json": "{ not json",
    "badline.jsonl": JSON.stringify(good) + "\n{oops\n",
    "smells.json": JSON.stringify([
      event({ event_name: "checkout_completed" }),
      event({ event_name: "first_report_exported", event_id: "first_report_exported:r1" }),
      event({ event_name: "subscription_upgraded", event_id: "s:1" }),
      event({ event_name: "seat_added", event_id: "seat_added:1" }),
      event({ event_name: "report_exported", event_id: "r:1" }),
      event({ event_name: "sync_completed", event_id: "y:1" }),
      event({ event_name: "feature_used", event_id: "f:1" })
    ])
  })
  const path = (name: string) => join(dir, name)

  it("passes one valid event (exit 0)", async () => {
    const result = await runCliInProcess(["validate", path("one.json"), "--source", "direct"])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, "1 event: 1 valid, 0 refused")
  })

  it("reports each event of an array by path and code, never the unsafe value (exit 1, --json)", async () => {
    const result = await runCliInProcess(["validate", path("array.json"), "--source", "direct", "--json"])
    assert.strictEqual(result.code, 1, result.stderr)
    assert.notInclude(result.stdout, secretValue)
    assert.notInclude(result.stdout, leakedEmail)
    const report = JSON.parse(result.stdout) as Report
    assert.isFalse(report.ok)
    assert.strictEqual(report.source, "direct")
    assert.deepStrictEqual(report.summary, { events: 4, valid: 1, refused: 3, warnings: 0 })
    assert.deepStrictEqual(
      report.events.map((e) => e.status),
      ["valid", "refused", "refused", "refused"]
    )
    const [, secret, broken, pageView] = report.events
    assert.strictEqual(secret!.refusal, "unsafe_property")
    assert.deepStrictEqual(secret!.issues.map((i) => [i.path, i.code]).sort(), [
      ["properties.api_key", "unsafe_property"],
      ["properties.contact", "unsafe_property"]
    ])
    assert.strictEqual(broken!.refusal, "invalid_event")
    assert.deepStrictEqual(broken!.issues.map((i) => i.path).sort(), ["account_id", "event_name", "timestamp"])
    assert.isUndefined(broken!.event_name)
    assert.strictEqual(pageView!.refusal, "not_revenue_relevant")
    assert.deepStrictEqual(
      pageView!.issues.map((i) => [i.path, i.code]),
      [["event_name", "not_revenue_relevant"]]
    )
  })

  it("reads JSON Lines and names the line of each event", async () => {
    const result = await runCliInProcess(["validate", path("lines.jsonl"), "--json"])
    assert.strictEqual(result.code, 1)
    const report = JSON.parse(result.stdout) as Report
    assert.deepStrictEqual(
      report.events.map((e) => [e.line, e.status]),
      [
        [1, "valid"],
        [2, "refused"]
      ]
    )
    assert.notInclude(result.stdout, secretValue)
  })

  it("prints the human report without the unsafe values", async () => {
    const result = await runCliInProcess(["validate", path("lines.jsonl")])
    assert.strictEqual(result.code, 1)
    assert.include(result.stdout, "properties.api_key [unsafe_property]")
    assert.notInclude(result.stdout + result.stderr, secretValue)
    assert.notInclude(result.stdout + result.stderr, leakedEmail)
  })

  it("warns on emission-rule smells without failing (exit 0)", async () => {
    const result = await runCliInProcess(["validate", path("smells.json"), "--json", "--billing-source", "provider"])
    assert.strictEqual(result.code, 0, result.stderr)
    const report = JSON.parse(result.stdout) as Report
    const codes = (i: number) => report.events[i]!.warnings.map((w) => w.code).sort()
    assert.deepStrictEqual(codes(0), ["billing_provider_source_of_truth", "missing_event_id"])
    assert.deepStrictEqual(codes(1), ["first_milestone"])
    assert.deepStrictEqual(codes(2), ["billing_provider_source_of_truth"])
    assert.deepStrictEqual(codes(3), [])
    assert.deepStrictEqual(
      report.warnings.map((w) => w.code),
      ["too_many_event_names"]
    )
    // without --billing-source provider the backend may be the billing source of truth
    const backend = JSON.parse((await runCliInProcess(["validate", path("smells.json"), "--json"])).stdout) as Report
    assert.deepStrictEqual(backend.events[2]!.warnings, [])
  })

  const usageError = async (args: ReadonlyArray<string>, expected: RegExp) => {
    const result = await runCliInProcess(args)
    assert.strictEqual(result.code, 2, `${args.join(" ")}: ${result.stdout}${result.stderr}`)
    assert.isFalse(hasStackTrace(result.stderr))
    assert.match(result.stderr, expected)
    return result
  }

  it("a missing file: one line, exit 2", async () => {
    const result = await usageError(["validate", path("missing.json")], /no such file/)
    assert.strictEqual(result.stderr.trim().split("\n").length, 1)
  })

  it("a file that is not JSON: one line, exit 2", async () => {
    const result = await usageError(["validate", path("bad.json")], /not JSON or JSON Lines/)
    assert.strictEqual(result.stderr.trim().split("\n").length, 1)
    await usageError(["validate", path("badline.jsonl")], /line 2 is not JSON/)
  })

  it("a wrong --source: exit 2", async () => {
    await usageError(["validate", path("one.json"), "--source", "web"], /direct/)
  })
})
