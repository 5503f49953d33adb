import { assert, describe, it } from "@effect/vitest"
import { execFileSync, spawn } from "node:child_process"
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { vi } from "vitest"
import * as Effect from "effect/Effect"
import { adminKey, bearer, request, startServer, workspaceId } from "../../support/http.ts"
import { cleanEnv, cli, cliInProcess, createApiKey, entry, processTestTimeout, root, tempFiles } from "./cli.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

vi.setConfig({ testTimeout: processTestTimeout })

const day = 86_400_000
/** Midnight UTC, `daysAgo` days back. */
const midnight = (daysAgo: number) => Math.floor(Date.now() / day) * day - daysAgo * day

/** One daily rollup per account for each day (newest day first in the file, to check the order). */
const rollups = (days: ReadonlyArray<number>, accounts: ReadonlyArray<string>) =>
  days.flatMap((daysAgo) =>
    accounts.map((account, i) => ({
      event_name: "usage_rollup_recorded",
      semantic_type: "usage",
      event_kind: "product_action",
      account_id: account,
      timestamp: new Date(midnight(daysAgo) + day).toISOString(),
      value: 100 + i,
      properties: {
        product_key: "api",
        metric_key: "requests",
        unit: "request",
        usage_start: new Date(midnight(daysAgo)).toISOString(),
        usage_end: new Date(midnight(daysAgo) + day).toISOString(),
        aggregation_grain: "day",
        source_system: "billing_job"
      }
    }))
  )

interface Summary {
  rows: number
  ranges: number
  accepted: number
  duplicate: number
  skipped: number
  refused: Array<unknown>
  throttled: number
  maxConcurrencyReached: number
}

describe("accord backfill (real server with a low ingest rate limit)", () => {
  it.scopedLive("sends oldest days first, backs off on 429, and a rerun resumes or stays idempotent", () =>
    Effect.gen(function* () {
      const server = yield* startServer({ env: { ACCORD_INGEST_RATE_LIMIT: "3" } })
      const env = { ACCORD_SERVICE_URL: server.url, SERVICE_INGEST_API_KEY: yield* createApiKey(server.url, "ingest") }
      const rows = rollups([2, 3, 4, 5], ["acct_a", "acct_b", "acct_c", "acct_d"])
      const dir = tempFiles({ "usage.jsonl": rows.map((r) => JSON.stringify(r)).join("\n") + "\n" })
      const file = join(dir, "usage.jsonl")

      // as a process: the client must not share this process's event loop with the server, or the
      // server's rate limit may never be reached on a loaded machine (where a process takes long to start)
      const first = yield* cli(["backfill", file, "--json"], { env, timeoutMs: 150_000 })
      assert.strictEqual(first.code, 0, first.stderr)
      // --json: stdout is the summary alone, the plain progress lines (one per day) are on stderr
      const lines = first.stderr.split("\n").filter((l) => l.startsWith("range "))
      assert.strictEqual(lines.length, 4, first.stderr)
      const summary = JSON.parse(first.stdout) as Summary
      assert.strictEqual(summary.rows, 16)
      assert.strictEqual(summary.ranges, 4)
      assert.strictEqual(summary.accepted, 16)
      assert.isAbove(summary.throttled, 0, "the low rate limit answered 429 at least once")
      assert.isAbove(summary.maxConcurrencyReached, 1, "concurrency rose while accepts were healthy")

      // stored oldest day first: every row of an older day was received before any of a newer day
      const page = yield* request(`${server.url}/api/admin/v1/workspaces/${workspaceId}/events?limit=100`, {
        headers: bearer(adminKey)
      })
      const stored = page.json.data as Array<{
        received_at: string
        properties: { usage_start: string }
        event_id?: string
      }>
      assert.strictEqual(stored.length, 16)
      const byStart = new Map<string, Array<number>>()
      for (const e of stored)
        byStart.set(e.properties.usage_start, [
          ...(byStart.get(e.properties.usage_start) ?? []),
          Date.parse(e.received_at)
        ])
      const days = [...byStart.keys()].sort()
      for (let i = 1; i < days.length; i++) {
        assert.isAtMost(
          Math.max(...byStart.get(days[i - 1]!)!),
          Math.min(...byStart.get(days[i]!)!),
          `${days[i - 1]} before ${days[i]}`
        )
      }

      // resumed: the state file says everything is done
      const resumed = JSON.parse((yield* cliInProcess(["backfill", file, "--json"], { env })).stdout) as Summary
      assert.deepStrictEqual([resumed.skipped, resumed.accepted, resumed.duplicate], [16, 0, 0])

      // without the state file: the same deterministic event_ids, so nothing is stored twice
      rmSync(`${file}.backfill-state.json`)
      const again = JSON.parse((yield* cliInProcess(["backfill", file, "--json"], { env })).stdout) as Summary
      assert.deepStrictEqual([again.accepted, again.duplicate], [0, 16])
      const after = yield* request(`${server.url}/api/admin/v1/workspaces/${workspaceId}/events?limit=100`, {
        headers: bearer(adminKey)
      })
      assert.strictEqual(after.json.data.length, 16)
    })
  )

  it.scopedLive("resumes a partial run: only the rows not yet answered are sent", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const env = { ACCORD_SERVICE_URL: server.url, SERVICE_INGEST_API_KEY: yield* createApiKey(server.url, "ingest") }
      const rows = rollups([3, 2], ["acct_a", "acct_b"])
      const dir = tempFiles({ "usage.json": JSON.stringify(rows) })
      const file = join(dir, "usage.json")
      const state = join(dir, "state.json")
      // a first run that stopped after the oldest day
      const firstDay = new Date(midnight(3)).toISOString()
      const ids = (start: string) =>
        ["acct_a", "acct_b"].map(
          (a) => `usage_rollup_recorded:${a}:api:requests:${start}:${new Date(Date.parse(start) + day).toISOString()}`
        )
      writeFileSync(state, JSON.stringify({ done: ids(firstDay) }))
      const result = yield* cliInProcess(["backfill", file, "--state", state, "--json"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      const summary = JSON.parse(result.stdout) as Summary
      assert.deepStrictEqual([summary.skipped, summary.accepted], [2, 2])
      assert.isTrue(existsSync(state))
      assert.strictEqual((JSON.parse(readFileSync(state, "utf8")) as { done: Array<string> }).done.length, 4)
    })
  )

  it.scopedLive("past the per-event size the file goes to the bulk import, with a progress bar; a rerun resumes", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const env = { ACCORD_SERVICE_URL: server.url, SERVICE_INGEST_API_KEY: yield* createApiKey(server.url, "ingest") }
      const at = new Date(midnight(2)).toISOString()
      const rows = Array.from({ length: 10_001 }, (_, i) =>
        JSON.stringify({
          event_name: "checkout_completed",
          account_id: "acct_bulk",
          timestamp: at,
          event_id: `bulk:${i}`
        })
      )
      const dir = tempFiles({ "huge.jsonl": [...rows, '{"event_name": "page_viewed"'].join("\n") })
      const file = join(dir, "huge.jsonl")
      const result = yield* cliInProcess(["backfill", file, "--json"], { env })
      // one refused line: findings, exit code 1
      assert.strictEqual(result.code, 1, result.stderr)
      const status = JSON.parse(result.stdout) as {
        state: string
        lines_committed: number
        accepted: number
        refused: number
        errors: Array<{ line: number; code: string }>
      }
      assert.strictEqual(status.state, "completed")
      assert.deepStrictEqual([status.lines_committed, status.accepted, status.refused], [10_002, 10_001, 1])
      assert.deepStrictEqual(status.errors, [{ line: 10_002, code: "malformed_json" }])
      assert.include(result.stderr, "100.0% 10002/10002 lines")
      const again = JSON.parse((yield* cliInProcess(["backfill", file, "--json"], { env })).stdout) as typeof status
      assert.deepStrictEqual([again.lines_committed, again.accepted], [10_002, 10_001])
    })
  )

  it.live("refuses rows that break the rules, and rows without a stable event_id, before sending anything", () =>
    Effect.gen(function* () {
      const [good] = rollups([2], ["acct_a"])
      const open = {
        ...good!,
        properties: { ...good!.properties, usage_end: new Date(Date.now() + day).toISOString() }
      }
      const dir = tempFiles({
        "open.json": JSON.stringify([good, open]),
        "noid.json": JSON.stringify([
          { event_name: "seat_added", account_id: "a", timestamp: new Date(midnight(2)).toISOString() }
        ])
      })
      const env = {
        ACCORD_SERVICE_URL: "http://127.0.0.1:9",
        SERVICE_INGEST_API_KEY: "acc_ingest_not-a-real-key-0123456789abcdef"
      }
      const [openResult, noId] = yield* Effect.all(
        [
          cliInProcess(["backfill", join(dir, "open.json")], { env }),
          cliInProcess(["backfill", join(dir, "noid.json")], { env })
        ],
        { concurrency: "unbounded" }
      )
      assert.strictEqual(openResult.code, 1)
      assert.include(openResult.stdout, "properties.usage_end [invalid_event]")
      assert.include(openResult.stdout, "nothing sent")
      assert.strictEqual(noId.code, 1)
      assert.include(noId.stdout, "have no event_id")
    })
  )

  const hasScript = (() => {
    try {
      execFileSync("script", ["--version"], { stdio: "ignore" })
      return process.platform === "linux"
    } catch {
      return false
    }
  })()

  it.scopedLive.skipIf(!hasScript)("on a terminal: a progress bar with rate and ETA instead of plain lines", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const env = { ACCORD_SERVICE_URL: server.url, SERVICE_INGEST_API_KEY: yield* createApiKey(server.url, "ingest") }
      const dir = tempFiles({ "usage.json": JSON.stringify(rollups([3, 2], ["acct_a", "acct_b"])) })
      // util-linux script(1) gives the command a pseudo-terminal
      const command = [process.execPath, ...nodeArgs(entry), "backfill", join(dir, "usage.json")]
        .map((a) => `'${a}'`)
        .join(" ")
      // asynchronously: the server runs in this process
      const result = yield* Effect.promise(
        () =>
          new Promise<{ status: number | null; stdout: string }>((resolve) => {
            const child = spawn("script", ["-qec", command, "/dev/null"], {
              cwd: root,
              env: { ...cleanEnv(), NO_COLOR: "1", ...env }
            })
            let stdout = ""
            child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
            const timer = setTimeout(() => child.kill("SIGKILL"), 120_000)
            child.on("close", (status) => {
              clearTimeout(timer)
              resolve({ status, stdout })
            })
          })
      )
      assert.strictEqual(result.status, 0, result.stdout)
      assert.match(result.stdout, /\r\[#+-*\] \d+\/4 [\d.]+\/s eta \S+ c=\d/)
      assert.notMatch(result.stdout, /^range /m)
      assert.include(result.stdout, "backfill: 4 rows in 2 ranges: 4 accepted")
    })
  )
})
