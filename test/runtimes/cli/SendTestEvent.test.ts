import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { adminKey, bearer, request, startServer, workspaceId } from "../../support/http.ts"
import { cliInProcess, closedPort, createApiKey, hasStackTrace, tempFiles, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

const at = () => new Date(Date.now() - 60_000).toISOString()
const secretValue = "sk_live_51HzQe2XyZabcdefghijklmnopqrstuvw"

describe("accord send-test-event (in process, real server on loopback)", () => {
  const dir = tempFiles({
    "good.json": JSON.stringify({
      event_name: "checkout_completed",
      event_id: "checkout_completed:co_9",
      account_id: "acct_7",
      timestamp: at()
    }),
    "unsafe.json": JSON.stringify({
      event_name: "integration_connected",
      account_id: "acct_7",
      timestamp: at(),
      properties: { token: secretValue }
    }),
    "two.json": JSON.stringify([{ event_name: "seat_added" }, { event_name: "seat_added" }])
  })
  const file = (name: string) => join(dir, name)

  it.scopedLive("sends one event, prints the answer and the Events view route; a resend is a duplicate", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const env = {
        ACCORD_SERVICE_URL: server.url,
        SERVICE_INGEST_API_KEY: yield* createApiKey(server.url, "ingest"),
        ACCORD_WORKSPACE_ID: workspaceId
      }
      const first = yield* cliInProcess(["send-test-event", file("good.json")], { env })
      assert.strictEqual(first.code, 0, first.stderr)
      assert.include(first.stdout, "accepted: event_id checkout_completed:co_9 for account acct_7")
      assert.include(first.stdout, `${server.url}/api/admin/v1/workspaces/${workspaceId}/events?account_id=acct_7`)
      const again = yield* cliInProcess(["send-test-event", file("good.json"), "--json"], { env })
      assert.strictEqual(again.code, 0, again.stderr)
      assert.strictEqual(JSON.parse(again.stdout).status, "duplicate")
      const events = yield* request(`${server.url}/api/admin/v1/workspaces/${workspaceId}/events?account_id=acct_7`, {
        headers: bearer(adminKey)
      })
      assert.deepStrictEqual(
        events.json.data.map((e: { event_id: string }) => e.event_id),
        ["checkout_completed:co_9"]
      )
      assert.isFalse(server.logs.some((line) => line.includes(env.SERVICE_INGEST_API_KEY)))
    })
  )

  it.scopedLive("does not send an event its own rules refuse, and never prints the unsafe value (exit 1)", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const env = { ACCORD_SERVICE_URL: server.url, SERVICE_INGEST_API_KEY: yield* createApiKey(server.url, "ingest") }
      const result = yield* cliInProcess(["send-test-event", file("unsafe.json")], { env })
      assert.strictEqual(result.code, 1)
      assert.include(result.stdout, "properties.token [unsafe_property]")
      assert.include(result.stdout, "not sent")
      assert.notInclude(result.stdout + result.stderr, secretValue)
      const events = yield* request(`${server.url}/api/admin/v1/workspaces/${workspaceId}/events`, {
        headers: bearer(adminKey)
      })
      assert.deepStrictEqual(events.json.data, [])
    })
  )

  it.scopedLive("a missing key, a wrong-scope key, a file of two events: one line each, exit 2", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const readKey = yield* createApiKey(server.url, "developer:read")
      const [missing, wrongScope, unknown, two] = yield* Effect.all(
        [
          cliInProcess(["send-test-event", file("good.json")], { env: { ACCORD_SERVICE_URL: server.url } }),
          cliInProcess(["send-test-event", file("good.json")], {
            env: { ACCORD_SERVICE_URL: server.url, SERVICE_INGEST_API_KEY: readKey }
          }),
          cliInProcess(["send-test-event", file("good.json")], {
            env: {
              ACCORD_SERVICE_URL: server.url,
              SERVICE_INGEST_API_KEY: "acc_ingest_not-a-real-key-0123456789abcdef"
            }
          }),
          cliInProcess(["send-test-event", file("two.json")], {
            env: { ACCORD_SERVICE_URL: server.url, SERVICE_INGEST_API_KEY: readKey }
          })
        ],
        { concurrency: "unbounded" }
      )
      for (const [result, expected] of [
        [missing, "accord: SERVICE_INGEST_API_KEY is required (an ingest key, server-side only)"],
        [wrongScope, "accord: SERVICE_INGEST_API_KEY was refused (403): it needs a key of scope ingest"],
        [unknown, "accord: SERVICE_INGEST_API_KEY was refused (401): the key is unknown or revoked"],
        [two, `accord: ${file("two.json")}: send-test-event sends one event; the file holds 2`]
      ] as const) {
        assert.strictEqual(result.code, 2, result.stderr)
        assert.strictEqual(result.stderr.trim(), expected)
        assert.notInclude(result.stderr + result.stdout, readKey)
      }
    })
  )

  it.live("an unreachable service: one line, exit 2, no stack trace", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(closedPort)
      const result = yield* cliInProcess(["send-test-event", file("good.json")], {
        env: {
          ACCORD_SERVICE_URL: `http://127.0.0.1:${port}`,
          SERVICE_INGEST_API_KEY: "acc_ingest_not-a-real-key-0123456789abcdef"
        }
      })
      assert.strictEqual(result.code, 2)
      assert.strictEqual(
        result.stderr.trim(),
        `accord: cannot reach the service at http://127.0.0.1:${port} (network_error)`
      )
      assert.isFalse(hasStackTrace(result.stderr))
    })
  )
})
