/**
 * The context server as a coding agent uses it: `accord context-server start` spawned as a process
 * and driven over stdio by the official `@modelcontextprotocol/sdk` Client, against the real Accord
 * server on loopback.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { spawn } from "node:child_process"
import { vi } from "vitest"
import * as Effect from "effect/Effect"
import { adminKey, jsonHeaders, request, startServer, workspaceId } from "../../support/http.ts"
import { cleanEnv, cli, closedPort, createApiKey, entry, processTestTimeout, root } from "../../runtimes/cli/cli.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

vi.setConfig({ testTimeout: processTestTimeout })

const secretValue = "sk_live_51HzQe2XyZabcdefghijklmnopqrstuvw"
const readTools = [
  "account_profile",
  "classify_candidates",
  "event_contract",
  "feature_gate_status",
  "recent_events",
  "validate_payload"
]

/** An MCP client connected over stdio to a spawned `accord context-server start`. */
const connect = (env: Record<string, string>, flags: ReadonlyArray<string> = []) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [...nodeArgs(entry), "context-server", "start", ...flags],
        cwd: root,
        env: { ...cleanEnv(), NO_COLOR: "1", ...env },
        stderr: "pipe"
      })
      const client = new Client({ name: "accord-test-agent", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

type CallResult = { isError?: boolean; content: Array<{ type: string; text?: string }>; structuredContent?: unknown }

const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.promise(async () => {
    const result = (await client.callTool({ name, arguments: args })) as CallResult
    const text = result.content.map((c) => c.text ?? "").join("")
    return { isError: result.isError === true, text, json: JSON.parse(text) as any }
  })

const at = () => new Date(Date.now() - 60_000).toISOString()

describe("accord context-server start (MCP over stdio, real server)", () => {
  it.scopedLive("lists the read-only tools, answers each from the running server, and has no send tool", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const ingestKey = yield* createApiKey(server.url, "ingest")
      const readKey = yield* createApiKey(server.url, "developer:read")
      const sent = yield* request(`${server.url}/api/events/ingest`, {
        method: "POST",
        headers: jsonHeaders(ingestKey),
        body: JSON.stringify({
          event_name: "plan_upgraded",
          event_id: "plan_upgraded:1",
          account_id: "acct_mcp",
          timestamp: at(),
          properties: { plan: "pro" }
        })
      })
      assert.strictEqual(sent.status, 202)
      const gate = yield* request(`${server.url}/api/admin/v1/workspaces/${workspaceId}/feature-gates`, {
        method: "POST",
        headers: jsonHeaders(adminKey),
        body: JSON.stringify({
          accountId: "acct_mcp",
          journeyId: "7d8c1a52-7a8e-4a51-9b0c-1c2d3e4f5a6b",
          versionId: "8e9d2b63-8b9f-4b62-8c1d-2d3e4f5a6b7c",
          featureKey: "advanced_reports",
          startedAt: at()
        })
      })
      assert.strictEqual(gate.status, 201, gate.text)

      const client = yield* connect({
        ACCORD_SERVICE_URL: server.url,
        ACCORD_WORKSPACE_ID: workspaceId,
        SERVICE_API_KEY: readKey
      })
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), readTools)
      for (const tool of tools) assert.strictEqual(tool.annotations?.readOnlyHint, true, tool.name)

      const events = yield* call(client, "recent_events", { account_id: "acct_mcp", limit: 5 })
      assert.isFalse(events.isError, events.text)
      assert.deepStrictEqual(
        events.json.data.map((e: { event_id: string }) => e.event_id),
        ["plan_upgraded:1"]
      )

      const profile = yield* call(client, "account_profile", { account_id: "acct_mcp" })
      assert.isFalse(profile.isError, profile.text)
      assert.include(profile.text, "acct_mcp")

      const gateStatus = yield* call(client, "feature_gate_status", { gate_id: gate.json.id })
      assert.isFalse(gateStatus.isError, gateStatus.text)
      assert.strictEqual(gateStatus.json.state ?? gateStatus.json.status, "checking")
      const missingGate = yield* call(client, "feature_gate_status", {
        gate_id: "00000000-0000-4000-8000-000000000000"
      })
      assert.isTrue(missingGate.isError)

      const contract = yield* call(client, "event_contract")
      assert.isFalse(contract.isError)
      assert.includeMembers(
        contract.json.fields.map((f: { field: string }) => f.field),
        ["event_name", "account_id", "timestamp"]
      )
      assert.isAtLeast(contract.json.classification_rules.length, 6)

      const validated = yield* call(client, "validate_payload", {
        events: [
          {
            event_name: "integration_connected",
            account_id: "a",
            timestamp: at(),
            properties: { api_key: secretValue }
          }
        ]
      })
      assert.isFalse(validated.isError, validated.text)
      assert.strictEqual(validated.json.events[0].refusal, "unsafe_property")
      assert.notInclude(validated.text, secretValue)

      const classified = yield* call(client, "classify_candidates", {
        billing_provider: "stripe",
        candidates: [
          { name: "plan_upgraded", where: "backend", confirmed_by: "subscriptions row" },
          { name: "report_exported", where: "backend", confirmed_by: "exports row" }
        ]
      })
      assert.deepStrictEqual(
        classified.json.candidates.map((c: { classification: string }) => c.classification),
        ["existing_source", "direct_api_now"]
      )

      const send = yield* Effect.promise(() =>
        client.callTool({ name: "send_test_event", arguments: { event: {} } }).then(
          (r) => (r as CallResult).isError === true,
          () => true
        )
      )
      assert.isTrue(send, "send_test_event must not exist without the flag")
      for (const text of [events.text, profile.text, contract.text]) {
        assert.notInclude(text, readKey)
        assert.notInclude(text, ingestKey)
      }
    })
  )

  it.scopedLive("with --allow-send-test-event and SERVICE_INGEST_API_KEY: send_test_event sends one event", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const ingestKey = yield* createApiKey(server.url, "ingest")
      const readKey = yield* createApiKey(server.url, "developer:read")
      const client = yield* connect(
        {
          ACCORD_SERVICE_URL: server.url,
          ACCORD_WORKSPACE_ID: workspaceId,
          SERVICE_API_KEY: readKey,
          SERVICE_INGEST_API_KEY: ingestKey
        },
        ["--allow-send-test-event"]
      )
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), [...readTools, "send_test_event"].sort())
      const sent = yield* call(client, "send_test_event", {
        event: { event_name: "seat_added", event_id: "seat_added:mcp", account_id: "acct_send", timestamp: at() }
      })
      assert.isFalse(sent.isError, sent.text)
      assert.strictEqual(sent.json.status, "accepted")
      const refused = yield* call(client, "send_test_event", {
        event: {
          event_name: "seat_added",
          account_id: "acct_send",
          timestamp: at(),
          properties: { password: secretValue }
        }
      })
      assert.isTrue(refused.isError)
      assert.notInclude(refused.text, secretValue)
      const events = yield* call(client, "recent_events", { account_id: "acct_send" })
      assert.deepStrictEqual(
        events.json.data.map((e: { event_id: string }) => e.event_id),
        ["seat_added:mcp"]
      )
    })
  )

  it.scopedLive(
    "refuses to start with a key of another scope, an unknown key, or the send flag without an ingest key (exit 2)",
    () =>
      Effect.gen(function* () {
        const server = yield* startServer()
        const ingestKey = yield* createApiKey(server.url, "ingest")
        const readKey = yield* createApiKey(server.url, "developer:read")
        const base = { ACCORD_SERVICE_URL: server.url, ACCORD_WORKSPACE_ID: workspaceId }
        const start = (env: Record<string, string>, flags: ReadonlyArray<string> = []) =>
          cli(["context-server", "start", ...flags], { env: { ...base, ...env } })
        const port = yield* Effect.promise(closedPort)
        const [admin, ingest, unknown, noIngest, unreachable] = yield* Effect.all(
          [
            start({ SERVICE_API_KEY: adminKey }),
            start({ SERVICE_API_KEY: ingestKey }),
            start({ SERVICE_API_KEY: "acc_read_not-a-real-key-0123456789abcdef" }),
            start({ SERVICE_API_KEY: readKey }, ["--allow-send-test-event"]),
            start({ SERVICE_API_KEY: readKey, ACCORD_SERVICE_URL: `http://127.0.0.1:${port}` })
          ],
          { concurrency: 3 }
        )
        for (const [result, expected] of [
          [admin, "accord: SERVICE_API_KEY has scope admin; the context server reads only with a developer:read key"],
          [ingest, "accord: SERVICE_API_KEY was refused (403): it needs a developer:read key of ACCORD_WORKSPACE_ID"],
          [unknown, "accord: SERVICE_API_KEY was refused (401): the key is unknown or revoked"],
          [noIngest, "accord: SERVICE_INGEST_API_KEY is required (--allow-send-test-event sends with the ingest key)"],
          [unreachable, `accord: cannot reach the service at http://127.0.0.1:${port}`]
        ] as const) {
          assert.strictEqual(result.code, 2, result.stderr)
          assert.strictEqual(result.stderr.trim(), expected)
          for (const key of [adminKey, ingestKey, readKey]) assert.notInclude(result.stderr + result.stdout, key)
        }
      })
  )

  it.scopedLive("serves streamable HTTP with --http PORT behind the token it prints", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const readKey = yield* createApiKey(server.url, "developer:read")
      const port = yield* Effect.promise(closedPort)
      const child = yield* Effect.acquireRelease(
        Effect.sync(() =>
          spawn(process.execPath, [...nodeArgs(entry), "context-server", "start", "--http", String(port)], {
            cwd: root,
            env: {
              ...cleanEnv(),
              NO_COLOR: "1",
              ACCORD_SERVICE_URL: server.url,
              ACCORD_WORKSPACE_ID: workspaceId,
              SERVICE_API_KEY: readKey
            },
            stdio: ["ignore", "pipe", "pipe"]
          })
        ),
        (child) => Effect.sync(() => child.kill("SIGTERM"))
      )
      const url = `http://127.0.0.1:${port}/mcp`
      // no ACCORD_CONTEXT_TOKEN: the server generates a token and prints it once
      const token = yield* Effect.promise(
        () =>
          new Promise<string>((resolve, reject) => {
            let stderr = ""
            child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
              stderr += chunk
              const printed = /bearer token (\S+)\n/.exec(stderr)
              if (stderr.includes(url) && printed !== null) resolve(printed[1]!)
            })
            child.on("exit", (code) => reject(new Error(`exited ${code}: ${stderr}`)))
          })
      )
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          // the listening line comes just before the socket is bound: retry the first connect briefly
          for (let attempt = 0; ; attempt++) {
            const client = new Client({ name: "accord-test-agent", version: "1.0.0" })
            try {
              await client.connect(
                new StreamableHTTPClientTransport(new URL(url), {
                  requestInit: { headers: { authorization: `Bearer ${token}` } }
                })
              )
              return client
            } catch (error) {
              if (attempt >= 20) throw error
              await new Promise((r) => setTimeout(r, 250))
            }
          }
        }),
        (client) => Effect.promise(() => client.close())
      )
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), readTools)
      const contract = yield* call(client, "event_contract")
      assert.isFalse(contract.isError)
      assert.isAtLeast(contract.json.emission_rules.length, 7)
    })
  )
})
