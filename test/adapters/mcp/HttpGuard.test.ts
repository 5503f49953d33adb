/**
 * The context server's streamable HTTP transport as a hostile browser, a rebinding attacker and a
 * careless client meet it: the real server on loopback, raw `node:http` requests (so `Host` and
 * `Origin` can be forged), and the official MCP client for the one way in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { request as httpRequest } from "node:http"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Redacted from "effect/Redacted"
import * as ServiceReads from "../../../adapters/cli-support/ServiceReads.ts"
import * as ContextServer from "../../../adapters/mcp/ContextServer.ts"
import { maxBodyBytes } from "../../../adapters/mcp/HttpGuard.ts"
import { closedPort } from "../../runtimes/cli/cli.ts"

const token = "ctx_test_token_0123456789abcdefghijklmnop"

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "probe", version: "1" } }
})

interface Answer {
  readonly status: number
  readonly body: string
}

/** One raw request; `chunks` are written one by one (chunked encoding) when given. */
const send = (
  port: number,
  headers: Record<string, string>,
  body: string | ReadonlyArray<Buffer> = initialize
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/mcp", method: "POST", headers }, (res) => {
      let text = ""
      res.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    // a server may reset a connection whose body it refuses to read: that is an answer too
    req.on("error", (error: NodeJS.ErrnoException) =>
      error.code === "ECONNRESET" || error.code === "EPIPE" ? resolve({ status: 0, body: error.code }) : reject(error)
    )
    if (typeof body === "string") req.end(body)
    else {
      for (const chunk of body) req.write(chunk)
      req.end()
    }
  })

const fine = (port: number): Record<string, string> => ({
  host: `127.0.0.1:${port}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  authorization: `Bearer ${token}`
})

/** The context server on a free loopback port, for the scope. */
const started = Effect.gen(function* () {
  const port = yield* Effect.promise(closedPort)
  const fiber = yield* Effect.forkScoped(
    ContextServer.serve({
      reads: ServiceReads.make({
        serviceUrl: "http://127.0.0.1:9",
        workspaceId: "ws",
        apiKey: Redacted.make("unused")
      }),
      version: "test",
      http: { port, token: Redacted.make(token), printToken: false }
    })
  )
  // listening is set up asynchronously: wait until the guard answers
  for (let attempt = 0; attempt < 100; attempt++) {
    const answered = yield* Effect.promise(() =>
      send(port, { host: `127.0.0.1:${port}` }).then(
        () => true,
        () => false
      )
    )
    if (answered) break
    yield* Effect.sleep("20 millis")
  }
  yield* Effect.addFinalizer(() => Fiber.interrupt(fiber))
  return port
})

const problem = (answer: Answer) => JSON.parse(answer.body) as { status: number; code: string }

describe("context server over HTTP: the guard", () => {
  it.scopedLive("the MCP client with the token lists the tools and calls one", () =>
    Effect.gen(function* () {
      const port = yield* started
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Client({ name: "accord-test-agent", version: "1.0.0" })
          await client.connect(
            new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
              requestInit: { headers: { authorization: `Bearer ${token}` } }
            })
          )
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      const { tools } = yield* Effect.promise(() => client.listTools())
      assert.include(
        tools.map((t) => t.name),
        "event_contract"
      )
      const result = (yield* Effect.promise(() => client.callTool({ name: "event_contract", arguments: {} }))) as {
        isError?: boolean
      }
      assert.notStrictEqual(result.isError, true)
      // `..` would resolve to the workspace route: refused before any request (the reads here point
      // at a closed port, so a request would fail as network_error instead)
      for (const [tool, args] of [
        ["account_profile", { account_id: ".." }],
        ["account_profile", { account_id: "." }],
        ["feature_gate_status", { gate_id: ".." }]
      ] as const) {
        const refused = (yield* Effect.promise(() => client.callTool({ name: tool, arguments: args }))) as {
          isError?: boolean
          content: Array<{ text?: string }>
        }
        assert.isTrue(refused.isError)
        assert.include(refused.content.map((c) => c.text ?? "").join(""), "invalid_id")
      }
    })
  )

  it.scopedLive("a well-formed request passes the guard (baseline for the refusals below)", () =>
    Effect.gen(function* () {
      const port = yield* started
      const answer = yield* Effect.promise(() => send(port, fine(port)))
      assert.strictEqual(answer.status, 200, answer.body)
    })
  )

  it.scopedLive("a rebound Host is refused with 403, even with the token and a matching Origin", () =>
    Effect.gen(function* () {
      const port = yield* started
      const answer = yield* Effect.promise(() =>
        send(port, {
          ...fine(port),
          host: `rebind.evil.example:${port}`,
          origin: `http://rebind.evil.example:${port}`
        })
      )
      assert.strictEqual(answer.status, 403)
      assert.strictEqual(problem(answer).code, "forbidden")
    })
  )

  it.scopedLive("a Host naming another port is refused with 403", () =>
    Effect.gen(function* () {
      const port = yield* started
      const answer = yield* Effect.promise(() => send(port, { ...fine(port), host: `127.0.0.1:${port + 1}` }))
      assert.strictEqual(answer.status, 403)
    })
  )

  it.scopedLive("a browser's cross-origin text/plain POST (no preflight) is refused with 403", () =>
    Effect.gen(function* () {
      const port = yield* started
      const answer = yield* Effect.promise(() =>
        send(port, { host: `127.0.0.1:${port}`, origin: "https://evil.example", "content-type": "text/plain" })
      )
      assert.strictEqual(answer.status, 403)
    })
  )

  it.scopedLive("a loopback Origin with the token is let through", () =>
    Effect.gen(function* () {
      const port = yield* started
      const answer = yield* Effect.promise(() => send(port, { ...fine(port), origin: "http://localhost:5173" }))
      assert.strictEqual(answer.status, 200, answer.body)
    })
  )

  it.scopedLive("no token, a wrong token and a non-Bearer scheme get 401 with the Bearer challenge", () =>
    Effect.gen(function* () {
      const port = yield* started
      const { authorization: _, ...without } = fine(port)
      for (const headers of [
        without,
        { ...without, authorization: `Bearer ${token}x` },
        { ...without, authorization: `Basic ${Buffer.from(`x:${token}`).toString("base64")}` }
      ]) {
        const answer = yield* Effect.promise(() => send(port, headers))
        assert.strictEqual(answer.status, 401)
        assert.strictEqual(problem(answer).code, "unauthorized")
      }
    })
  )

  it.scopedLive("a body that is not JSON is refused with 415", () =>
    Effect.gen(function* () {
      const port = yield* started
      const answer = yield* Effect.promise(() => send(port, { ...fine(port), "content-type": "text/plain" }))
      assert.strictEqual(answer.status, 415)
    })
  )

  it.scopedLive("a declared body over the cap is refused with 413 before it is read", () =>
    Effect.gen(function* () {
      const port = yield* started
      const big = "x".repeat(maxBodyBytes + 1)
      const answer = yield* Effect.promise(() => send(port, fine(port), big))
      assert.strictEqual(answer.status, 413)
    })
  )

  it.scopedLive("a chunked body over the cap is refused or reset, never served", () =>
    Effect.gen(function* () {
      const port = yield* started
      const chunk = Buffer.alloc(256 * 1024, 0x20)
      const answer = yield* Effect.promise(() =>
        send(port, fine(port), [Buffer.from('{"jsonrpc":"2.0","pad":"'), ...Array(8).fill(chunk), Buffer.from('"}')])
      )
      assert.isTrue(answer.status === 0 || answer.status >= 400, `${answer.status} ${answer.body}`)
    })
  )
})
