/**
 * Fuzzed edges: every inbound route of the service, over real HTTP on loopback,
 * with generated bodies, headers, content types, methods and request targets (raw bytes on the
 * socket, so NUL and invalid UTF-8 reach the server). For every answer: 2xx or 4xx, never 5xx; a
 * 4xx from the service is an RFC 9457 problem; nothing is stored for a refused request; the process
 * keeps serving. Fixed seed, bounded runs: CI replays the same requests.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fc from "fast-check"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import { maxEventBytes } from "../../../adapters/http/routes/Ingest.ts"
import { completionPath, maxCompletionBytes } from "../../../adapters/http/routes/Completion.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { headerNames } from "../../../core/protocol/Signing.ts"
import { adminKey, startServer, workspaceId } from "../../support/http.ts"
import { bodies, contentType, headerValue, methods, seed, targets, utf8 } from "../../support/fuzz.ts"
import { type RawReply, type RawRequest, rawRequest } from "../../support/rawHttp.ts"
import { cipherLayer, withServices } from "../../support/storage.ts"
import { intakeInput } from "../../support/deliveries.ts"
import { startService } from "../../core/connector/connection/support.ts"
import { connect } from "../../core/connector/dispatch/support.ts"
import * as Redacted from "effect/Redacted"

const ingestPath = "/api/events/ingest"
const adminPrefix = (workspace: string) => `/api/admin/v1/workspaces/${workspace}`

/**
 * Node's own HTTP parser refuses a malformed request line or header (NUL in the target, a bad
 * method token) with a bare `400`, and a request line or headers over its 16 KiB limit with a bare
 * `431`, and closes, before the service sees the request.
 */
const isParserRefusal = (reply: RawReply) =>
  (reply.status === 400 || reply.status === 431) &&
  reply.headers["content-type"] === undefined &&
  reply.body.length === 0

/** 2xx or 4xx; a 4xx from the service is `application/problem+json` with type, title, status, code. */
const assertAnswer = (request: RawRequest, reply: RawReply) => {
  const what = `${request.method} ${String(request.target).slice(0, 120)} -> ${reply.status} ${reply.text.slice(0, 300)}`
  assert.isTrue(reply.status >= 200 && reply.status < 500, what)
  if (reply.status < 400 || isParserRefusal(reply)) return
  assert.strictEqual(reply.headers["content-type"], "application/problem+json", what)
  if (request.method === "HEAD") return
  assert.strictEqual(reply.json.status, reply.status, what)
  assert.isString(reply.json.code, what)
  assert.strictEqual(reply.json.type, `urn:accord:problem:${reply.json.code}`, what)
  assert.isString(reply.json.title, what)
}

const bearer = fc.oneof(
  fc.constant(undefined),
  headerValue,
  headerValue.map((text) => `Bearer ${text}`),
  fc.constantFrom("Bearer", "Bearer ", "bearer " + adminKey, "Basic Zm9vOmJhcg==", `Bearer ${adminKey} x`)
)

const headerList = (entries: Record<string, string | undefined>): Array<readonly [string, string]> =>
  Object.entries(entries).flatMap(([name, value]) => (value === undefined ? [] : [[name, value] as const]))

const checkout = {
  event_name: "checkout_completed",
  account_id: "acct_42",
  timestamp: new Date(Date.now() - 5 * 60_000).toISOString(),
  event_id: "checkout_completed:cs_1",
  value: 49,
  properties: { plan: "pro" }
}

const rollup = {
  event_name: "usage_rollup_recorded",
  semantic_type: "usage",
  event_kind: "product_action",
  account_id: "acct_42",
  timestamp: new Date(Date.UTC(2026, 9, 2)).toISOString(),
  value: 1200,
  properties: {
    product_key: "api",
    metric_key: "requests",
    unit: "request",
    usage_start: new Date(Date.UTC(2026, 9, 1)).toISOString(),
    usage_end: new Date(Date.UTC(2026, 9, 2)).toISOString(),
    aggregation_grain: "day",
    source_system: "billing_job"
  }
}

const completion = {
  type: "customer.customer_action.completion",
  protocolVersion: 1,
  workspaceId,
  actionRequestId: "1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e",
  completionId: "7c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e",
  outcome: "succeeded",
  providerReference: "trial_ext_1",
  completedAt: "2026-11-22T10:15:30.000Z"
}

const runs = { seed, numRuns: 150, endOnFailure: true } as const

describe("fuzzed edges of the service", () => {
  it.scopedLive(
    "POST /api/events/ingest (node:http fast path) and the completion route: never 5xx, refused ingests store nothing",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer({ server: "node" })
        const port = Number(new URL(url).port)
        const send = (request: RawRequest) => Effect.promise(() => rawRequest(port, request))
        const created = yield* send({
          method: "POST",
          target: adminPrefix(workspaceId) + "/api-keys",
          headers: [
            ["authorization", `Bearer ${adminKey}`],
            ["content-type", "application/json"]
          ],
          body: utf8(JSON.stringify({ scope: "ingest" }))
        })
        const ingestKey = created.json.secret as string
        const eventCount = () =>
          rawRequest(port, {
            method: "GET",
            target: adminPrefix(workspaceId) + "/events?limit=200",
            headers: [["authorization", `Bearer ${adminKey}`]]
          }).then((reply) => {
            assert.strictEqual(reply.status, 200, reply.text)
            assert.isBelow(reply.json.data.length, 200)
            return reply.json.data.length as number
          })

        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              bodies([checkout, rollup], [maxEventBytes, 65_536]),
              contentType,
              fc.oneof(fc.constant(`Bearer ${ingestKey}`), fc.constant(`Bearer ${ingestKey}`), bearer),
              fc.constantFrom("", "?x=1", "?%ff", "?\u00ff"),
              async (body, type, authorization, query) => {
                const before = await eventCount()
                const request: RawRequest = {
                  method: "POST",
                  target: ingestPath + query,
                  headers: headerList({ "content-type": type, authorization }),
                  body
                }
                const reply = await rawRequest(port, request)
                assertAnswer(request, reply)
                if (reply.status >= 400)
                  assert.strictEqual(await eventCount(), before, "a refused ingest stored an event")
              }
            ),
            runs
          )
        )

        const signatureHeaders = fc.record({
          [headerNames.version]: fc.oneof(fc.constant("1"), headerValue, fc.constant(undefined)),
          [headerNames.timestamp]: fc.oneof(fc.constant(new Date().toISOString()), headerValue, fc.constant(undefined)),
          [headerNames.nonce]: fc.oneof(fc.uuid(), headerValue, fc.constant(undefined)),
          [headerNames.signature]: fc.oneof(
            fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => "v1=" + hex),
            headerValue,
            fc.constant(undefined)
          ),
          [headerNames.connectionRevision]: fc.oneof(
            fc.constantFrom("1", "0", "-1", "99999999999999999999"),
            headerValue,
            fc.constant(undefined)
          )
        })
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              bodies([completion], [maxCompletionBytes]),
              contentType,
              signatureHeaders,
              async (body, type, signed) => {
                const request: RawRequest = {
                  method: "POST",
                  target: completionPath,
                  headers: headerList({ "content-type": type, ...signed }),
                  body
                }
                const reply = await rawRequest(port, request)
                assertAnswer(request, reply)
                // No connection is registered: no completion can be authentic.
                assert.isAtLeast(reply.status, 400, reply.text)
              }
            ),
            runs
          )
        )

        const health = yield* send({ method: "GET", target: "/healthz" })
        assert.strictEqual(health.status, 200)
      }),
    60_000
  )

  it.scopedLive(
    "every route, method and request target, with and without the admin key: never 5xx",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer({ server: "node" })
        const port = Number(new URL(url).port)
        const admin = adminPrefix(workspaceId)
        const prefixes = [
          "/healthz",
          "/readyz",
          ingestPath,
          completionPath,
          admin,
          admin + "/api-keys",
          admin + "/connector",
          admin + "/connector/check",
          admin + "/feature-gates",
          admin + "/action-requests",
          admin + "/events",
          admin + "/accounts",
          adminPrefix("not-a-uuid"),
          adminPrefix("0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a12"),
          "/api/admin/v1/workspaces"
        ]
        const validBodies = [
          { scope: "ingest", name: "fuzz" },
          { key: "gate_1", name: "Gate" },
          {
            endpoint: "https://customer.invalid/accord",
            actionSigningSecret: "as_" + "1".repeat(40),
            completionSecret: "cs_" + "2".repeat(40)
          },
          intakeInput() as unknown as Record<string, unknown>
        ]
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              methods,
              targets(prefixes),
              fc.oneof(fc.constant(`Bearer ${adminKey}`), bearer),
              contentType,
              fc.option(bodies(validBodies, [65_536]), { nil: undefined }),
              async (method, target, authorization, type, body) => {
                const request: RawRequest = {
                  method,
                  target,
                  headers: headerList({ "content-type": type, authorization }),
                  ...(body === undefined ? {} : { body })
                }
                const reply = await rawRequest(port, request)
                assertAnswer(request, reply)
              }
            ),
            { ...runs, numRuns: 300 }
          )
        )
        const health = yield* Effect.promise(() => rawRequest(port, { method: "GET", target: "/healthz" }))
        assert.strictEqual(health.status, 200)
      }),
    60_000
  )
})

layer(withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer)), { excludeTestServices: true })((it) => {
  it.scoped(
    "POST /action-requests on an active connection: never 5xx, a refused intake adds no action",
    () =>
      Effect.gen(function* () {
        const ledger = yield* ActionLedger
        let created = 0
        const counted = {
          ...ledger,
          create: (options: Parameters<typeof ledger.create>[0]) =>
            Effect.tap(ledger.create(options), () => Effect.sync(() => created++))
        }
        const service = yield* startService().pipe(Effect.provideService(ActionLedger, counted))
        yield* connect("https://customer.example/accord", {
          workspaceId: service.workspaceId,
          connectionId: globalThis.crypto.randomUUID(),
          secrets: {
            actionSigning: Redacted.make("as_" + "5".repeat(40)),
            completion: Redacted.make("cs_" + "6".repeat(40))
          }
        })
        const port = Number(new URL(service.url).port)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              bodies([intakeInput() as unknown as Record<string, unknown>], [65_536]),
              contentType,
              fc.oneof(fc.constant(`Bearer ${service.adminKey}`), fc.constant(`Bearer ${service.adminKey}`), bearer),
              fc.option(headerValue, { nil: undefined }),
              async (body, type, authorization, idempotencyKey) => {
                const before = created
                const request: RawRequest = {
                  method: "POST",
                  target: adminPrefix(service.workspaceId) + "/action-requests",
                  headers: headerList({ "content-type": type, authorization, "idempotency-key": idempotencyKey }),
                  body
                }
                const reply = await rawRequest(port, request)
                assertAnswer(request, reply)
                if (reply.status >= 400) assert.strictEqual(created, before, "a refused intake stored an action")
              }
            ),
            runs
          )
        )
        const health = yield* Effect.promise(() => rawRequest(port, { method: "GET", target: "/healthz" }))
        assert.strictEqual(health.status, 200)
      }),
    60_000
  )
})
