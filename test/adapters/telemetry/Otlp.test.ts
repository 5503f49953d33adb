/**
 * OTLP export from the real server process: with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a loopback
 * collector stub (a real HTTP server that records every POST), the server sends its spans to
 * /v1/traces and its metrics to /v1/metrics (the last batch when it stops on SIGTERM); nothing it
 * sends holds a secret or a personal value, even when requests carry them in the path, the query,
 * headers and the body.
 */
import { spawn } from "node:child_process"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { freePort, sleep } from "../../support/ports.ts"
import { envWithoutDatabase } from "../../support/postgres.ts"
import { nodeArgs } from "../../../scripts/entrypoint.ts"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const workspaceId = "5d0c1a52-7a3e-4f0e-9b7e-2f1c6f9b4d21"
const adminKey = "otlp-test-admin-key-9f8e7d6c5b4a39281706"
const masterKey = Buffer.alloc(32, 0x5c).toString("base64")
const email = "grace.hopper@example.com"
const accountId = "acct_personal_5521"

interface Recorded {
  readonly path: string
  readonly contentType: string | undefined
  readonly body: string
}

const readBody = (request: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
  })

/** Every string attribute key of every span in an OTLP/JSON traces body. */
const spansOf = (body: string): Array<{ name: string; attributes: Record<string, unknown> }> =>
  (JSON.parse(body).resourceSpans ?? []).flatMap((resource: any) =>
    (resource.scopeSpans ?? []).flatMap((scope: any) =>
      (scope.spans ?? []).map((span: any) => ({
        name: span.name,
        attributes: Object.fromEntries(
          (span.attributes ?? []).map((a: any) => [a.key, Object.values(a.value ?? {})[0]])
        )
      }))
    )
  )

describe("OTLP export", () => {
  it("sends traces and metrics to the collector, with no secret or personal value in any of it", async () => {
    const recorded: Array<Recorded> = []
    const collector = createServer(async (request, response) => {
      recorded.push({
        path: request.url ?? "",
        contentType: request.headers["content-type"],
        body: await readBody(request)
      })
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
    const collectorPort = (collector.address() as AddressInfo).port
    const port = await freePort()
    const child = spawn(process.execPath, nodeArgs("runtimes/node/main.ts"), {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...envWithoutDatabase(),
        NO_COLOR: "1",
        PORT: String(port),
        HOST: "127.0.0.1",
        ACCORD_DATA_DIR: "memory://",
        ACCORD_MASTER_KEY: masterKey,
        ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
        ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}/`,
        OTEL_SERVICE_NAME: "accord-otlp-test"
      }
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    const base = `http://127.0.0.1:${port}`
    let ingestKey = ""
    try {
      // Generous: an embedded start on a loaded machine can take a minute or more.
      const deadline = Date.now() + 150_000
      while (
        !(await fetch(`${base}/readyz`).then(
          (r) => r.ok,
          () => false
        ))
      ) {
        assert.isBelow(Date.now(), deadline, output)
        await sleep(200)
      }
      const admin = `${base}/api/admin/v1/workspaces/${workspaceId}`
      const auth = {
        authorization: `Bearer ${adminKey}`,
        "content-type": "application/json",
        "user-agent": `agent ${email}`
      }
      const key = await fetch(`${admin}/api-keys`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ scope: "ingest" })
      })
      ingestKey = ((await key.json()) as { secret: string }).secret
      const ingest = await fetch(`${base}/api/events/ingest`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${ingestKey}`,
          "content-type": "application/json",
          "x-customer-email": email
        },
        body: JSON.stringify({
          event_name: "checkout_completed",
          account_id: accountId,
          timestamp: new Date(Date.now() - 60_000).toISOString(),
          event_id: "checkout_completed:otlp_1",
          value: 10
        })
      })
      assert.strictEqual(ingest.status, 202, await ingest.text())
      await fetch(`${admin}/accounts/${accountId}?email=${encodeURIComponent(email)}`, { headers: auth }).then((r) =>
        r.text()
      )
      await fetch(`${admin}/events?account_id=${accountId}`, { headers: auth }).then((r) => r.text())
      child.kill("SIGTERM")
      assert.strictEqual(await exited, 0, output)
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      await new Promise((resolve) => collector.close(resolve))
    }

    assert.include(
      output,
      `telemetry: exporting traces and metrics over OTLP/HTTP to 127.0.0.1:${collectorPort} as accord-otlp-test`
    )
    assert.include(output, "metrics: GET /metrics (open; set ACCORD_METRICS_TOKEN to require a token)")
    const traces = recorded.filter((entry) => entry.path === "/v1/traces")
    const metrics = recorded.filter((entry) => entry.path === "/v1/metrics")
    assert.isAtLeast(traces.length, 1, JSON.stringify(recorded.map((entry) => entry.path)))
    assert.isAtLeast(metrics.length, 1, JSON.stringify(recorded.map((entry) => entry.path)))
    assert.strictEqual(traces[0]!.contentType, "application/json")

    const spans = traces.flatMap((entry) => spansOf(entry.body))
    const server = spans.filter((span) => span.name.startsWith("http.server "))
    assert.isAtLeast(server.length, 3, JSON.stringify(spans.map((span) => span.name)))
    for (const span of server) {
      assert.deepStrictEqual(
        Object.keys(span.attributes).filter(
          (key) =>
            key.startsWith("url.") ||
            key.startsWith("http.request.header") ||
            key === "client.address" ||
            key === "user_agent.original"
        ),
        [],
        JSON.stringify(span)
      )
    }
    assert.isTrue(
      server.some(
        (span) =>
          span.attributes["http.route"] !== undefined && span.attributes["http.response.status_code"] !== undefined
      ),
      JSON.stringify(server)
    )
    const metricsText = metrics.map((entry) => entry.body).join("\n")
    assert.include(metricsText, "accord_ingest_accepted_total")
    assert.include(metricsText, "accord-otlp-test")

    const everything = recorded.map((entry) => entry.body).join("\n")
    for (const value of [adminKey, ingestKey, masterKey, email, encodeURIComponent(email), accountId]) {
      assert.notInclude(everything, value)
    }
  }, 300_000)
})
