/**
 * The server SDK against the real Accord server on loopback, and against a loopback server that
 * misbehaves on purpose (rate limits, outages, a dropped connection, refusals).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { IngestRejected, IngestUnavailable, make, makeDirectApiClient } from "../../../adapters/sdk/DirectApiClient.ts"
import { adminKey, request, startServer, workspaceId } from "../../support/http.ts"

const now = () => new Date(Date.now() - 1_000).toISOString()

const ingestKey = (url: string) =>
  Effect.map(
    request(`${url}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ scope: "ingest" })
    }),
    (reply) => reply.json.secret as string
  )

type Step = (req: IncomingMessage, res: ServerResponse) => void

/** A server answering each request with the next step; records every body. */
const scripted = (steps: ReadonlyArray<Step>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const bodies: Array<string> = []
      let n = 0
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          bodies.push(Buffer.concat(chunks).toString())
          const step = steps[Math.min(n++, steps.length - 1)]!
          step(req, res)
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, server }
    }),
    ({ server }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          })
      )
  )

const accepted: Step = (req, res) => {
  void req
  res.writeHead(202, { "content-type": "application/json" }).end(
    JSON.stringify({
      status: "accepted",
      duplicate: false,
      id: globalThis.crypto.randomUUID(),
      event_id: "e1",
      account_id: "a1"
    })
  )
}
const status =
  (code: number, headers: Record<string, string> = {}, body: unknown = {}): Step =>
  (_req, res) =>
    res.writeHead(code, { "content-type": "application/problem+json", ...headers }).end(JSON.stringify(body))

const event = { event_id: "evt_fixed_1", event_name: "plan_upgraded", account_id: "acct_1", timestamp: now() }
const fast = { baseDelayMillis: 1, maxDelayMillis: 50 }

describe("DirectApiClient against the Accord server", () => {
  it.live(
    "accepted, then a retry of the same event is a duplicate; a bad event is a typed refusal with field errors",
    () =>
      Effect.gen(function* () {
        const server = yield* startServer()
        const client = make({ baseUrl: server.url, apiKey: yield* ingestKey(server.url) })
        const first = yield* client.ingest(event)
        assert.deepStrictEqual(first, { status: "accepted", eventId: "evt_fixed_1", accountId: "acct_1" })
        assert.strictEqual((yield* client.ingest(event)).status, "duplicate")
        const refused = yield* Effect.flip(
          client.ingest({ event_name: "Plan Upgraded!", account_id: "acct_1", timestamp: "yesterday" })
        )
        assert.strictEqual(refused._tag, "IngestRejected")
        assert.strictEqual((refused as IngestRejected).status, 400)
        assert.strictEqual((refused as IngestRejected).code, "invalid_event")
        assert.isAbove((refused as IngestRejected).errors.length, 1)
      }).pipe(Effect.scoped)
  )

  it.live("sendFeatureAccess sends entitlement_active with the action's stable id", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const client = makeDirectApiClient({ baseUrl: server.url, apiKey: yield* ingestKey(server.url) })
      const input = {
        accountId: "acct_9",
        featureKey: "advanced_reports",
        journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
        versionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c",
        occurredAt: now(),
        actionRequestId: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
      }
      const sent = yield* Effect.promise(() => client.sendFeatureAccess(input))
      assert.strictEqual(sent.eventId, "entitlement_active:6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b:advanced_reports")
      assert.strictEqual((yield* Effect.promise(() => client.sendFeatureAccess(input))).status, "duplicate")
    }).pipe(Effect.scoped)
  )

  it.live("a wrong key is refused without retry and the error never carries the key", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const key = "acc_ingest_not-a-real-key-0123456789abcdef"
      const client = makeDirectApiClient({ baseUrl: server.url, apiKey: key })
      const error = yield* Effect.promise(() =>
        client.ingest(event).then(
          () => undefined,
          (e: unknown) => e
        )
      )
      assert.instanceOf(error, IngestRejected)
      assert.strictEqual((error as IngestRejected).status, 401)
      assert.notInclude(JSON.stringify(error), key)
      assert.notInclude(String(error), key)
    }).pipe(Effect.scoped)
  )
})

describe("DirectApiClient against a misbehaving server", () => {
  it.live("429 with Retry-After, then 503, then 202: three attempts with the same event_id and bytes", () =>
    Effect.gen(function* () {
      const peer = yield* scripted([status(429, { "retry-after": "0" }), status(503), accepted])
      const result = yield* make({ baseUrl: peer.url, apiKey: "k".repeat(40), ...fast }).ingest(event)
      assert.strictEqual(result.status, "accepted")
      assert.strictEqual(peer.bodies.length, 3)
      assert.strictEqual(new Set(peer.bodies).size, 1)
      assert.strictEqual(JSON.parse(peer.bodies[0]!).event_id, "evt_fixed_1")
    }).pipe(Effect.scoped)
  )

  it.live("an event without event_id gets one, kept across retries", () =>
    Effect.gen(function* () {
      const peer = yield* scripted([status(500), accepted])
      yield* make({ baseUrl: peer.url, apiKey: "k".repeat(40), ...fast }).ingest({
        event_name: "plan_upgraded",
        account_id: "a",
        timestamp: now()
      })
      const ids = peer.bodies.map((b) => JSON.parse(b).event_id)
      assert.strictEqual(ids.length, 2)
      assert.match(ids[0], /^evt_[0-9a-f-]{36}$/)
      assert.strictEqual(ids[0], ids[1])
    }).pipe(Effect.scoped)
  )

  it.live("a dropped connection is retried", () =>
    Effect.gen(function* () {
      const peer = yield* scripted([(req) => req.socket.destroy(), accepted])
      assert.strictEqual(
        (yield* make({ baseUrl: peer.url, apiKey: "k".repeat(40), ...fast }).ingest(event)).status,
        "accepted"
      )
      assert.strictEqual(peer.bodies.length, 2)
    }).pipe(Effect.scoped)
  )

  it.live("422 is not retried and carries code and detail", () =>
    Effect.gen(function* () {
      const peer = yield* scripted([
        status(
          422,
          {},
          {
            code: "unsafe_property",
            detail: "properties.token looks like a secret",
            errors: [{ path: "properties.token", message: "secret-like" }]
          }
        ),
        accepted
      ])
      const error = yield* Effect.flip(make({ baseUrl: peer.url, apiKey: "k".repeat(40), ...fast }).ingest(event))
      assert.strictEqual(peer.bodies.length, 1)
      assert.deepStrictEqual(
        error,
        new IngestRejected({
          status: 422,
          code: "unsafe_property",
          detail: "properties.token looks like a secret",
          errors: [{ path: "properties.token", message: "secret-like" }]
        })
      )
    }).pipe(Effect.scoped)
  )

  it.live("gives up after the configured attempts with the last reason", () =>
    Effect.gen(function* () {
      const peer = yield* scripted([status(503)])
      const error = yield* Effect.flip(
        make({ baseUrl: peer.url, apiKey: "k".repeat(40), ...fast, maxAttempts: 3 }).ingest(event)
      )
      assert.deepStrictEqual(error, new IngestUnavailable({ attempts: 3, reason: "http_503" }))
      assert.strictEqual(peer.bodies.length, 3)
    }).pipe(Effect.scoped)
  )

  it.live("a 503's Retry-After sets the wait instead of the exponential backoff", () =>
    Effect.gen(function* () {
      // The backoff would wait 10–20 s before the second attempt; the server asks for 0 s.
      const peer = yield* scripted([status(503, { "retry-after": "0" }), status(503, { "retry-after": "0" }), accepted])
      const client = make({
        baseUrl: peer.url,
        apiKey: "k".repeat(40),
        baseDelayMillis: 20_000,
        maxDelayMillis: 30_000
      })
      const result = yield* Effect.timeoutFail(client.ingest(event), {
        duration: "8 seconds",
        onTimeout: () => "the retry waited for the backoff, not for Retry-After"
      })
      assert.strictEqual(result.status, "accepted")
      assert.strictEqual(peer.bodies.length, 3)
    }).pipe(Effect.scoped)
  )

  it.live("giving up carries the last answer's Retry-After, for a caller that schedules the next try itself", () =>
    Effect.gen(function* () {
      const peer = yield* scripted([status(503, { "retry-after": "2" })])
      const error = yield* Effect.flip(
        make({ baseUrl: peer.url, apiKey: "k".repeat(40), ...fast, maxAttempts: 1 }).ingest(event)
      )
      assert.deepStrictEqual(error, new IngestUnavailable({ attempts: 1, reason: "http_503", retryAfterMillis: 2_000 }))
    }).pipe(Effect.scoped)
  )

  it.live("attempt: one request, no retry, with the status and Retry-After of a 429", () =>
    Effect.gen(function* () {
      const peer = yield* scripted([status(429, { "retry-after": "7" }), status(503), accepted])
      const client = make({ baseUrl: peer.url, apiKey: "k".repeat(40), ...fast })
      assert.deepStrictEqual(yield* client.attempt(event), { _tag: "Retry", reason: "http_429", afterMillis: 7000 })
      assert.deepStrictEqual(yield* client.attempt(event), { _tag: "Retry", reason: "http_503" })
      const done = yield* client.attempt(event)
      assert.strictEqual(done._tag, "Done")
      assert.strictEqual(peer.bodies.length, 3)
    }).pipe(Effect.scoped)
  )
})
