/**
 * The Direct API over real HTTP on loopback: `POST /api/events/ingest`, the Events view, the account
 * profile and feature gates, on memory storage (the storage contract suites cover the SQL stores).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fc from "fast-check"
import {
  safePayloads,
  stringsIn,
  unsafeEnvelope,
  unsafeIdentifiers,
  unsafePayloads
} from "../../../core/ingest/unsafePayloads.ts"
import { adminKey, bearer, jsonHeaders, type Reply, request, startServer, workspaceId } from "../../../support/http.ts"
import { uuidV7Millis, uuidV7Pattern } from "../../../support/uuid.ts"

const admin = `/api/admin/v1/workspaces/${workspaceId}`
const ingestPath = "/api/events/ingest"

const assertProblem = (reply: Reply, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.json.code, code)
  assert.strictEqual(reply.json.status, status)
}

const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000).toISOString()

const setup = (env?: Record<string, string>, server: "platform" | "node" = "platform") =>
  Effect.gen(function* () {
    const { logs, url } = yield* startServer({ server, ...(env === undefined ? {} : { env }) })
    const key = (scope: string) =>
      Effect.map(
        request(url + admin + "/api-keys", {
          method: "POST",
          headers: jsonHeaders(adminKey),
          body: JSON.stringify({ scope })
        }),
        (reply) => reply.json.secret as string
      )
    const ingestKey = yield* key("ingest")
    const send = (body: unknown, secret = ingestKey, headers: Record<string, string> = {}) =>
      request(url + ingestPath, {
        method: "POST",
        headers: { ...jsonHeaders(secret), ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body)
      })
    const get = (path: string, secret = adminKey) => request(url + admin + path, { headers: bearer(secret) })
    return { url, logs, key, ingestKey, send, get }
  })

/** One server shared by many tests that store nothing (each refused request is checked on its own). */
class SharedServer extends Context.Tag("test/SharedServer")<
  SharedServer,
  Effect.Effect.Success<ReturnType<typeof setup>>
>() {}

const sharedServer = (server: "platform" | "node") => Layer.scoped(SharedServer, setup(undefined, server))

const rollup = (overrides: Record<string, unknown> = {}, day = 1) => ({
  event_name: "usage_rollup_recorded",
  semantic_type: "usage",
  event_kind: "product_action",
  account_id: "acct_42",
  timestamp: new Date(Date.UTC(2026, 9, day + 1)).toISOString(),
  value: 1200,
  properties: {
    product_key: "api",
    metric_key: "requests",
    unit: "request",
    usage_start: new Date(Date.UTC(2026, 9, day)).toISOString(),
    usage_end: new Date(Date.UTC(2026, 9, day + 1)).toISOString(),
    aggregation_grain: "day",
    source_system: "billing_job"
  },
  ...overrides
})

const checkout = (overrides: Record<string, unknown> = {}) => ({
  event_name: "checkout_completed",
  account_id: "acct_42",
  timestamp: minutesAgo(5),
  event_id: "checkout_completed:cs_1",
  value: 49,
  properties: { plan: "pro" },
  ...overrides
})

// The Node runtime answers this route from node:http directly (NodeIngest); the platform app
// answers it everywhere else. Both must behave the same.
for (const server of ["platform", "node"] as const) {
  describe(`POST /api/events/ingest (${server === "node" ? "node:http fast path" : "platform app"})`, () => {
    it.scopedLive("a duplicate key at any depth is 400 duplicate_key naming the path, never an unsafe key", () =>
      Effect.gen(function* () {
        const { get, send } = yield* setup(undefined, server)
        const top = yield* send(`{"event_name":"checkout_completed","account_id":"acct_1","account_id":"acct_2"}`)
        assertProblem(top, 400, "duplicate_key")
        assert.deepStrictEqual(
          top.json.errors.map((e: { path: string }) => e.path),
          ["account_id"]
        )
        const deep = yield* send(
          `{"event_name":"x","properties":{"items":[{"ada@example.com":1,"ada@example.com":2}]}}`
        )
        assertProblem(deep, 400, "duplicate_key")
        assert.deepStrictEqual(
          deep.json.errors.map((e: { path: string }) => e.path),
          ["properties.items.0.<redacted>"]
        )
        assert.notInclude(deep.text, "ada@example.com")
        assert.strictEqual((yield* get("/events")).json.data.length, 0)
      })
    )

    it.scopedLive("a query the app's target check refuses is 400 invalid_query, nothing stored", () =>
      Effect.gen(function* () {
        const { get, ingestKey, url } = yield* setup(undefined, server)
        const reply = yield* request(`${url}${ingestPath}?note=%00`, {
          method: "POST",
          headers: jsonHeaders(ingestKey),
          body: JSON.stringify(checkout())
        })
        assertProblem(reply, 400, "invalid_query")
        assert.strictEqual((yield* get("/events")).json.data.length, 0)
      })
    )

    it.scopedLive(
      "a NUL or an unpaired surrogate anywhere in the body is 400 unstorable_text before any storage call",
      () =>
        Effect.gen(function* () {
          const { get, send } = yield* setup(undefined, server)
          for (const body of [
            `{"event_name":"x","account_id":"acct\\u0000x"}`,
            `{"event_name":"x","properties":{"k":"\\udc00"}}`
          ]) {
            assertProblem(yield* send(body), 400, "unstorable_text")
          }
          assert.strictEqual((yield* get("/events")).json.data.length, 0)
        })
    )

    it.scopedLive("an identifier with a control, bidi or zero-width character is 400", () =>
      Effect.gen(function* () {
        const { send } = yield* setup(undefined, server)
        for (const accountId of [
          "acct\u0001x",
          "acct\u0085x",
          "acct\u202ex",
          "acct\u2066x",
          "acct\u200bx",
          "acct\ufeffx",
          "acct\u061cx"
        ]) {
          const reply = yield* send(checkout({ account_id: accountId }))
          assert.strictEqual(reply.status, 400, reply.text)
          assert.isTrue(reply.json.errors.some((e: { path: string }) => e.path === "account_id"))
        }
        const user = yield* send(checkout({ user_id: "user\u200dx" }))
        assert.strictEqual(user.status, 400, user.text)
      })
    )

    it.scopedLive(
      "each stored event's id is a version 7 UUID of the time it was accepted, later events sorting after earlier ones",
      () =>
        Effect.gen(function* () {
          const { send } = yield* setup(undefined, server)
          const ids: Array<string> = []
          for (let i = 0; i < 3; i++) {
            const before = Date.now()
            const reply = yield* send(checkout({ event_id: `checkout_completed:v7_${i}` }))
            const after = Date.now()
            assert.strictEqual(reply.status, 202, reply.text)
            const id: string = reply.json.id
            assert.match(id, uuidV7Pattern)
            const millis = uuidV7Millis(id)
            assert.isAtLeast(millis, before)
            assert.isAtMost(millis, after)
            ids.push(id)
            yield* Effect.sleep("2 millis")
          }
          assert.deepStrictEqual([...ids].sort(), ids)
        })
    )

    it.scopedLive("a new event: 202 with the stored event_id and account_id, then visible in the Events view", () =>
      Effect.gen(function* () {
        const { get, send } = yield* setup(undefined, server)
        const reply = yield* send(checkout())
        assert.strictEqual(reply.status, 202, reply.text)
        assert.strictEqual(reply.json.event_id, "checkout_completed:cs_1")
        assert.strictEqual(reply.json.account_id, "acct_42")
        assert.isFalse(reply.json.duplicate)
        const events = yield* get("/events")
        assert.strictEqual(events.status, 200)
        assert.strictEqual(events.json.data.length, 1)
        assert.strictEqual(events.json.data[0].event_name, "checkout_completed")
        assert.strictEqual(events.json.data[0].sentiment, "positive")
        assert.isTrue(events.json.data[0].sentiment_inferred)
      })
    )

    it.scopedLive("a retry with the same event_id and payload: 200 duplicate, stored once", () =>
      Effect.gen(function* () {
        const { get, send } = yield* setup(undefined, server)
        const event = checkout()
        assert.strictEqual((yield* send(event)).status, 202)
        const again = yield* send({ ...event, properties: { plan: "pro" } })
        assert.strictEqual(again.status, 200)
        assert.isTrue(again.json.duplicate)
        assert.strictEqual((yield* get("/events")).json.data.length, 1)
      })
    )

    it.scopedLive("the same event_id with a different payload: 409, the original kept", () =>
      Effect.gen(function* () {
        const { get, send } = yield* setup(undefined, server)
        assert.strictEqual((yield* send(checkout())).status, 202)
        assertProblem(yield* send(checkout({ value: 99 })), 409, "event_id_conflict")
        const events = yield* get("/events")
        assert.strictEqual(events.json.data.length, 1)
        assert.strictEqual(events.json.data[0].value, 49)
      })
    )

    it.scopedLive("without event_id the event is stored as sent, every time", () =>
      Effect.gen(function* () {
        const { get, send } = yield* setup(undefined, server)
        const { event_id: _, ...event } = checkout()
        assert.strictEqual((yield* send(event)).status, 202)
        assert.strictEqual((yield* send(event)).status, 202)
        assert.strictEqual((yield* get("/events")).json.data.length, 2)
      })
    )

    it.scopedLive("an array: 400 pointing to rollups", () =>
      Effect.gen(function* () {
        const { send } = yield* setup(undefined, server)
        const reply = yield* send([checkout()])
        assertProblem(reply, 400, "batch_not_accepted")
        assert.include(reply.json.detail, "usage_rollup_recorded")
      })
    )

    it.scopedLive("a missing account_id is explained by name; every failing field is listed", () =>
      Effect.gen(function* () {
        const { send } = yield* setup(undefined, server)
        const { account_id: _, ...event } = checkout({ event_name: "CheckoutCompleted", timestamp: "yesterday" })
        const reply = yield* send(event)
        assertProblem(reply, 400, "invalid_event")
        const paths = reply.json.errors.map((e: { path: string }) => e.path)
        assert.includeMembers(paths, ["account_id", "event_name", "timestamp"])
        const accountError = reply.json.errors.find((e: { path: string }) => e.path === "account_id")
        assert.include(accountError.message, "account")
        assert.notInclude(reply.text, "yesterday")
      })
    )

    it.scopedLive("an unsafe property: 422 naming the path, never the value, and nothing stored", () =>
      Effect.gen(function* () {
        const { get, send } = yield* setup(undefined, server)
        const secret = "sk_live_51HxQ9mJv0aBcDeFgHiJkLmNoPqRsTuV"
        const reply = yield* send(checkout({ properties: { plan: "pro", note_ref: secret } }))
        assertProblem(reply, 422, "unsafe_property")
        assert.strictEqual(reply.json.errors[0].path, "properties.note_ref")
        assert.notInclude(reply.text, secret)
        assert.strictEqual((yield* get("/events")).json.data.length, 0)
      })
    )

    it.scopedLive("a page view: 422 not_revenue_relevant saying why", () =>
      Effect.gen(function* () {
        const { send } = yield* setup(undefined, server)
        const reply = yield* send({ event_name: "page_viewed", account_id: "acct_42", timestamp: minutesAgo(1) })
        assertProblem(reply, 422, "not_revenue_relevant")
        assert.include(reply.json.detail.toLowerCase(), "page view")
      })
    )

    it.scopedLive("keys: none 401, an admin key 403, a revoked ingest key 401", () =>
      Effect.gen(function* () {
        const { ingestKey, send, url } = yield* setup(undefined, server)
        assertProblem(yield* request(url + ingestPath, { method: "POST", body: "{}" }), 401, "unauthorized")
        assertProblem(yield* send(checkout(), adminKey), 403, "forbidden")
        const keys = yield* request(url + admin + "/api-keys", { headers: bearer(adminKey) })
        const id = keys.json.data.find((k: { scope: string }) => k.scope === "ingest").id
        yield* request(url + admin + "/api-keys/" + id, { method: "DELETE", headers: bearer(adminKey) })
        const reply = yield* send(checkout(), ingestKey)
        assertProblem(reply, 401, "unauthorized")
        assert.notInclude(reply.text, ingestKey)
      })
    )

    it.scopedLive("content type other than JSON: 415; over 32 KiB: 413; malformed JSON: 400", () =>
      Effect.gen(function* () {
        const { send } = yield* setup(undefined, server)
        assertProblem(
          yield* send(JSON.stringify(checkout()), undefined, { "content-type": "text/plain" }),
          415,
          "unsupported_media_type"
        )
        assertProblem(yield* send(checkout({ properties: { plan: "x".repeat(40_000) } })), 413, "content_too_large")
        assertProblem(yield* send("{not json"), 400, "malformed_json")
      })
    )

    it.scopedLive("each request is logged with method, path, status and duration, never the key or the body", () =>
      Effect.gen(function* () {
        const { ingestKey, logs, send } = yield* setup(undefined, server)
        assert.strictEqual((yield* send(checkout())).status, 202)
        assert.strictEqual((yield* send(checkout({ account_id: undefined }))).status, 400)
        const lines = logs.filter((line) => line.includes(`path=${ingestPath}`))
        assert.strictEqual(
          lines.filter((line) => line.includes("status=202") && line.includes("method=POST")).length,
          1
        )
        assert.strictEqual(lines.filter((line) => line.includes("status=400")).length, 1)
        assert.isTrue(lines.every((line) => /durationMs=[\d.]+/.test(line)))
        assert.isFalse(logs.some((line) => line.includes(ingestKey) || line.includes("acct_42")))
      })
    )

    it.scopedLive("a chunked body (no Content-Length): read in full under 32 KiB, 413 over it", () =>
      Effect.gen(function* () {
        const { ingestKey, url } = yield* setup(undefined, server)
        const chunked = (text: string) => {
          const bytes = new TextEncoder().encode(text)
          const stream = new ReadableStream<Uint8Array>({
            start(controller) {
              for (let i = 0; i < bytes.length; i += 1000) controller.enqueue(bytes.slice(i, i + 1000))
              controller.close()
            }
          })
          return request(url + ingestPath, {
            method: "POST",
            headers: jsonHeaders(ingestKey),
            body: stream,
            duplex: "half"
          } as RequestInit)
        }
        const accepted = yield* chunked(JSON.stringify(checkout({ event_id: "chunked" })))
        assert.strictEqual(accepted.status, 202, accepted.text)
        assertProblem(
          yield* chunked(JSON.stringify(checkout({ properties: { plan: "x".repeat(40_000) } }))),
          413,
          "content_too_large"
        )
      })
    )

    it.scopedLive("over the key's rate: 429 with Retry-After", () =>
      Effect.gen(function* () {
        const { send } = yield* setup({ ACCORD_INGEST_RATE_LIMIT: "3" }, server)
        const replies = yield* Effect.forEach(
          Array.from({ length: 6 }, (_, i) => i),
          (i) => send(checkout({ event_id: `checkout_completed:r${i}` }))
        )
        const limited = replies.filter((r) => r.status === 429)
        assert.isAbove(limited.length, 0)
        assertProblem(limited[0]!, 429, "rate_limited")
        assert.match(limited[0]!.headers.get("retry-after") ?? "", /^\d+$/)
      })
    )

    it.scopedLive("the rate is per key: another key is not limited by the first one's requests", () =>
      Effect.gen(function* () {
        const { key, send } = yield* setup({ ACCORD_INGEST_RATE_LIMIT: "3" }, server)
        const first = yield* Effect.forEach(
          Array.from({ length: 6 }, (_, i) => i),
          (i) => send(checkout({ event_id: `checkout_completed:a${i}` }))
        )
        assert.isAbove(first.filter((r) => r.status === 429).length, 0)
        const second = yield* key("ingest")
        const replies = yield* Effect.forEach(
          Array.from({ length: 3 }, (_, i) => i),
          (i) => send(checkout({ event_id: `checkout_completed:b${i}` }), second)
        )
        assert.deepStrictEqual(
          replies.map((r) => r.status),
          [202, 202, 202]
        )
      })
    )

    it.scopedLive(
      "unsafe data next to a broken contract: 422 listing the unsafe paths first, then every other issue, with codes",
      () =>
        Effect.gen(function* () {
          const { get, send } = yield* setup(undefined, server)
          const { account_id: _, ...event } = checkout({
            timestamp: "yesterday",
            user_id: "bob@example.org",
            properties: { contact: "ada@example.com", seat_count: -1 }
          })
          const reply = yield* send(event)
          assertProblem(reply, 422, "unsafe_property")
          assert.deepStrictEqual(
            reply.json.errors.map((e: { code: string; path: string }) => [e.code, e.path]),
            [
              ["unsafe_property", "user_id"],
              ["unsafe_property", "properties.contact"],
              ["invalid_event", "account_id"],
              ["invalid_event", "timestamp"],
              ["invalid_event", "properties.seat_count"]
            ]
          )
          for (const value of ["bob@example.org", "ada@example.com", "yesterday"]) assert.notInclude(reply.text, value)
          assert.strictEqual((yield* get("/events")).json.data.length, 0)
        })
    )

    it.scopedLive(
      "a usage rollup without event_id: 202 with a suggested_event_id that is a valid event_id for the same bucket",
      () =>
        Effect.gen(function* () {
          const { get, send } = yield* setup(undefined, server)
          const first = yield* send(rollup({ account_id: "Acme Corp: EU" }))
          assert.strictEqual(first.status, 202, first.text)
          const suggested = first.json.suggested_event_id as string
          assert.strictEqual(
            suggested,
            "usage_rollup_recorded:Acme%20Corp%3A%20EU:api:requests:2026-10-01T00:00:00.000Z:2026-10-02T00:00:00.000Z"
          )
          assert.isNull(first.json.event_id)
          const withId = yield* send(rollup({ account_id: "Acme Corp: EU", event_id: suggested }))
          assert.strictEqual(withId.status, 202, withId.text)
          assert.isUndefined(withId.json.suggested_event_id)
          const retry = yield* send(rollup({ account_id: "Acme Corp: EU", event_id: suggested }))
          assert.strictEqual(retry.status, 200)
          assert.isTrue(retry.json.duplicate)
          assert.strictEqual((yield* get("/events")).json.data.length, 2)
        })
    )

    layer(sharedServer(server), { excludeTestServices: true })(
      "unsafe data: 422 naming the path, never echoed, nothing stored",
      (it) => {
        /** Refused at `path`; the offending text in no message, no value sent anywhere in the answer. */
        const refusedWithoutTrace = (body: unknown, path: string, offending: string, values: ReadonlyArray<string>) =>
          Effect.gen(function* () {
            const { get, send } = yield* SharedServer
            const reply = yield* send(body)
            assertProblem(reply, 422, "unsafe_property")
            const errors: ReadonlyArray<{ code: string; path: string; message: string }> = reply.json.errors
            assert.isTrue(
              errors.some((e) => e.code === "unsafe_property" && e.path === path),
              reply.text
            )
            for (const message of [reply.json.detail, ...errors.map((e) => e.message)])
              assert.notInclude(message, offending)
            for (const value of values) if (value.length >= 4) assert.notInclude(reply.text, value)
            assert.deepStrictEqual((yield* get("/events")).json.data, [])
          })

        for (const [label, properties, path, offending] of unsafePayloads) {
          it.effect(`${label} at ${path}`, () =>
            refusedWithoutTrace(checkout({ properties }), path, offending, stringsIn(properties))
          )
        }

        for (const [field, value] of unsafeIdentifiers) {
          it.effect(`${value.slice(0, 24)} as ${field}`, () =>
            refusedWithoutTrace(checkout({ [field]: value }), field, value, [value])
          )
        }

        for (const [path, fields, offending] of unsafeEnvelope) {
          it.effect(`${offending.slice(0, 16)}… as ${path}`, () =>
            refusedWithoutTrace(checkout(fields), path, offending, [offending])
          )
        }

        it.effect(
          "an unsafe value planted anywhere in a safe event: refused, and nowhere in the answer (fast-check samples)",
          () =>
            Effect.gen(function* () {
              const { send } = yield* SharedServer
              const safeEntries = safePayloads.flatMap(([, properties]) => Object.entries(properties))
              const planted = unsafePayloads.flatMap(([, properties]) => {
                const value = (properties as Record<string, unknown>).k
                return typeof value === "string" && value.length >= 6 ? [value] : []
              })
              const sample = fc.sample(
                fc.tuple(
                  fc.uniqueArray(fc.constantFrom(...safeEntries), { maxLength: 6, selector: ([k]) => k }),
                  fc.array(
                    fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/).map((w) => `f_${w}`),
                    { minLength: 1, maxLength: 3 }
                  ),
                  fc.constantFrom(...planted)
                ),
                { seed: 19, numRuns: 40 }
              )
              for (const [entries, path, value] of sample) {
                let nested: unknown = value
                for (let i = path.length - 1; i >= 1; i--) nested = { [path[i]!]: nested }
                const reply = yield* send(
                  checkout({ properties: { ...Object.fromEntries(entries), [path[0]!]: nested } })
                )
                assertProblem(reply, 422, "unsafe_property")
                assert.notInclude(reply.text, value)
                assert.notInclude(reply.text, JSON.stringify(value).slice(1, -1))
              }
            })
        )

        it.effect("a 32 KiB body full of faults: at most 20 field errors, the rest counted, under 8 KiB", () =>
          Effect.gen(function* () {
            const { get, send } = yield* SharedServer
            const properties = Object.fromEntries(
              Array.from({ length: 50 }, (_, i) => [`contact_${i}`, `person${i}@example.com`])
            )
            const body: Record<string, unknown> = checkout({ properties, user_id: "bob@example.org" })
            for (let i = 0; JSON.stringify(body).length < 32 * 1024 - 64; i++) body[`unknown_field_${i}`] = i
            const text = JSON.stringify(body)
            assert.isAtMost(text.length, 32 * 1024)
            const reply = yield* send(text)
            assertProblem(reply, 422, "unsafe_property")
            assert.isAtMost(reply.text.length, 8 * 1024, `${reply.text.length} bytes`)
            assert.isAtMost(reply.json.errors.length, 20)
            assert.isAbove(reply.json.errors_omitted, 1000)
            assert.deepStrictEqual(
              reply.json.errors[0],
              reply.json.errors.find((e: { path: string }) => e.path === "user_id")
            )
            assert.notInclude(reply.text, "@example.")
            assert.deepStrictEqual((yield* get("/events")).json.data, [])
          })
        )
      }
    )

    it.scopedLive("every safe payload of the table is accepted (202)", () =>
      Effect.gen(function* () {
        const { send } = yield* setup(undefined, server)
        for (const [label, properties] of safePayloads) {
          const reply = yield* send(
            checkout({ event_id: `checkout_completed:${label.replace(/\W+/g, "_")}`, properties })
          )
          assert.strictEqual(reply.status, 202, `${label}: ${reply.text}`)
        }
      })
    )
  })
}

describe("usage rollups", () => {
  const daily = (unit: string, day: number) => {
    const event = rollup({ event_id: `usage_rollup_recorded:acct_42:api:requests:${day}` }, day)
    return { ...event, properties: { ...event.properties, unit } }
  }

  it.scopedLive(
    "a rollup without event_id is identified by its bucket: a resend replaces the value, never adds to it",
    () =>
      Effect.gen(function* () {
        const { get, send } = yield* setup()
        const first = yield* send(rollup({ value: 1200 }))
        assert.strictEqual(first.status, 202, first.text)
        const retry = yield* send(rollup({ value: 1200 }))
        assert.strictEqual(retry.status, 200, retry.text)
        assert.isTrue(retry.json.duplicate)
        const corrected = yield* send(rollup({ value: 1500 }))
        assert.strictEqual(corrected.status, 202, corrected.text)
        const events = (yield* get("/events")).json.data
        assert.strictEqual(events.length, 1)
        assert.strictEqual(events[0].value, 1500)
        // another pricing_version is another bucket
        const repriced = yield* send(
          rollup({ value: 7, properties: { ...rollup().properties, pricing_version: "v2" } })
        )
        assert.strictEqual(repriced.status, 202, repriced.text)
        assert.strictEqual((yield* get("/events")).json.data.length, 2)
      })
  )

  it.scopedLive("a closed daily bucket is accepted; changing the unit of the meter is refused with advice", () =>
    Effect.gen(function* () {
      const { send } = yield* setup()
      assert.strictEqual((yield* send(daily("request", 1))).status, 202)
      assert.strictEqual((yield* send(daily("request", 2))).status, 202)
      const changed = yield* send(daily("thousand_requests", 3))
      assertProblem(changed, 422, "unit_changed")
      assert.include(changed.json.errors[0].message, "pricing_version")
    })
  )
})

describe("account profile", () => {
  it.scopedLive("facts come from properties; the latest by event timestamp wins, whatever the arrival order", () =>
    Effect.gen(function* () {
      const { get, send } = yield* setup()
      assert.strictEqual(
        (yield* send(checkout({ event_id: "a", timestamp: minutesAgo(10), properties: { plan: "team" } }))).status,
        202
      )
      assert.strictEqual(
        (yield* send(checkout({ event_id: "b", timestamp: minutesAgo(30), properties: { plan: "starter" } }))).status,
        202
      )
      const profile = yield* get("/accounts/acct_42")
      assert.strictEqual(profile.status, 200)
      const plan = profile.json.facts.find((f: { name: string }) => f.name === "plan")
      assert.strictEqual(plan.value, "team")
      assertProblem(yield* get("/accounts/acct_nobody"), 404, "not_found")
    })
  )

  it.scopedLive("each fact embeds its source event: id, event_name, event_id and timestamp", () =>
    Effect.gen(function* () {
      const { get, send } = yield* setup()
      const at = minutesAgo(10)
      const stored = yield* send(
        checkout({ event_id: "checkout_completed:cs_9", timestamp: at, properties: { plan: "team", seat_count: 7 } })
      )
      assert.strictEqual(stored.status, 202)
      const profile = yield* get("/accounts/acct_42")
      const source = {
        id: stored.json.id,
        event_name: "checkout_completed",
        event_id: "checkout_completed:cs_9",
        timestamp: at
      }
      assert.deepStrictEqual(
        profile.json.facts.map((f: { name: string; sourceEventId: string; sourceEvent: unknown }) => [
          f.name,
          f.sourceEventId,
          f.sourceEvent
        ]),
        [
          ["plan", stored.json.id, source],
          ["seat_count", stored.json.id, source]
        ]
      )
    })
  )

  it.scopedLive("last login and active users come from login events with a user_id", () =>
    Effect.gen(function* () {
      const { get, send } = yield* setup()
      const login = (userId: string, minutes: number, eventName = "user_logged_in") =>
        send({
          event_name: eventName,
          semantic_type: "login",
          account_id: "acct_42",
          user_id: userId,
          timestamp: minutesAgo(minutes),
          event_id: `${eventName}:${userId}:${minutes}`
        })
      for (const reply of [
        yield* login("u1", 5),
        yield* login("u2", 60 * 24 * 10, "session_started"),
        yield* login("u1", 60)
      ]) {
        assert.strictEqual(reply.status, 202, reply.text)
      }
      const facts = (yield* get("/accounts/acct_42")).json.facts as ReadonlyArray<{ name: string; value: unknown }>
      const value = (name: string) => facts.find((f) => f.name === name)?.value
      assert.strictEqual(value("active_users_7d"), 1)
      assert.strictEqual(value("active_users_30d"), 2)
      assert.strictEqual(value("last_login_user_id"), "u1")
    })
  )
})

describe("feature gate unlock", () => {
  const journeyId = "66666666-7777-4888-9999-aaaaaaaaaaaa"
  const versionId = "12345678-90ab-4cde-8f01-234567890abc"
  const access = (overrides: Record<string, unknown> = {}, properties: Record<string, unknown> = {}) => ({
    event_id: "entitlement_active:act_1:advanced_reports",
    event_name: "entitlement_active",
    account_id: "acct_42",
    timestamp: minutesAgo(1),
    semantic_type: "activation",
    event_kind: "product_action",
    properties: {
      feature_key: "advanced_reports",
      funnel_journey_id: journeyId,
      funnel_version_id: versionId,
      ...properties
    },
    ...overrides
  })
  const createGate = (url: string, startedAt: string) =>
    request(url + admin + "/feature-gates", {
      method: "POST",
      headers: jsonHeaders(adminKey),
      body: JSON.stringify({ accountId: "acct_42", journeyId, versionId, featureKey: "advanced_reports", startedAt })
    })

  it.scopedLive(
    "stays checking on feature_adopted, a receipt or a mismatched entitlement; unlocks on the matching one",
    () =>
      Effect.gen(function* () {
        const { get, send, url } = yield* setup()
        const gate = yield* createGate(url, minutesAgo(10))
        assert.strictEqual(gate.status, 201, gate.text)
        assert.strictEqual(gate.json.state, "checking")
        const status = () => Effect.map(get(`/feature-gates/${gate.json.id}`), (r) => r.json.state as string)
        const nonMatching = [
          access({ event_id: "fa", event_name: "feature_adopted" }),
          { event_name: "payment_succeeded", account_id: "acct_42", timestamp: minutesAgo(1), event_id: "pay" },
          access({ event_id: "other_account", account_id: "acct_7" }),
          access({ event_id: "other_version" }, { funnel_version_id: "00000000-0000-4000-8000-000000000000" }),
          access({ event_id: "too_early", timestamp: minutesAgo(20) })
        ]
        for (const event of nonMatching) {
          const reply = yield* send(event)
          assert.strictEqual(reply.status, 202, reply.text)
        }
        assert.strictEqual(yield* status(), "checking")
        assert.strictEqual((yield* send(access())).status, 202)
        const unlocked = yield* get(`/feature-gates/${gate.json.id}`)
        assert.strictEqual(unlocked.json.state, "unlocked")
        assert.isString(unlocked.json.unlockEventId)
      })
  )

  it.scopedLive("evidence that arrived before the gate was created unlocks it at creation", () =>
    Effect.gen(function* () {
      const { send, url } = yield* setup()
      assert.strictEqual((yield* send(access())).status, 202)
      const gate = yield* createGate(url, minutesAgo(10))
      assert.strictEqual(gate.json.state, "unlocked")
    })
  )

  it.scopedLive(
    "earlier evidence is found behind more than a page (200) of newer access events for other features",
    () =>
      Effect.gen(function* () {
        const { send, url } = yield* setup()
        assert.strictEqual((yield* send(access({ timestamp: minutesAgo(9) }))).status, 202)
        for (let i = 0; i < 205; i++) {
          const reply = yield* send(
            access({ event_id: `entitlement_active:act_${i}:feature_${i}` }, { feature_key: `feature_${i}` })
          )
          assert.strictEqual(reply.status, 202, reply.text)
        }
        const gate = yield* createGate(url, minutesAgo(10))
        assert.strictEqual(gate.json.state, "unlocked")
      })
  )

  it.scopedLive("upper-case funnel ids unlock a gate, whether sent in the gate or in the event", () =>
    Effect.gen(function* () {
      const { get, send, url } = yield* setup()
      const upper = { funnel_journey_id: journeyId.toUpperCase(), funnel_version_id: versionId.toUpperCase() }
      const before = yield* createGate(url, minutesAgo(10))
      assert.strictEqual(before.json.state, "checking")
      assert.strictEqual((yield* send(access({}, upper))).status, 202)
      assert.strictEqual((yield* get(`/feature-gates/${before.json.id}`)).json.state, "unlocked")
      const created = yield* request(url + admin + "/feature-gates", {
        method: "POST",
        headers: jsonHeaders(adminKey),
        body: JSON.stringify({
          accountId: "acct_42",
          journeyId: journeyId.toUpperCase(),
          versionId: versionId.toUpperCase(),
          featureKey: "advanced_reports",
          startedAt: minutesAgo(10)
        })
      })
      assert.strictEqual(created.json.state, "unlocked")
    })
  )

  it.scopedLive("the account view lists the account's gates with their state", () =>
    Effect.gen(function* () {
      const { get, send, url } = yield* setup()
      const gate = yield* createGate(url, minutesAgo(10))
      const states = () =>
        Effect.map(get("/accounts/acct_42"), (r) =>
          r.json.featureGates.map((g: { id: string; state: string }) => [g.id, g.state])
        )
      assert.deepStrictEqual(yield* states(), [[gate.json.id, "checking"]])
      assert.strictEqual((yield* send(access())).status, 202)
      assert.deepStrictEqual(yield* states(), [[gate.json.id, "unlocked"]])
    })
  )
})

describe("Events view", () => {
  it.scopedLive("filters by account and name, newest first, and pages with a cursor exactly once through", () =>
    Effect.gen(function* () {
      const { get, key, send } = yield* setup()
      for (let i = 0; i < 7; i++) {
        yield* send(
          checkout({
            event_id: `e${i}`,
            account_id: i % 2 === 0 ? "acct_even" : "acct_odd",
            timestamp: minutesAgo(60 - i)
          })
        )
      }
      const reader = yield* key("developer:read")
      const seen: Array<string> = []
      let cursor: string | null = null
      do {
        const page: Reply = yield* get(`/events?limit=3${cursor === null ? "" : `&cursor=${cursor}`}`, reader)
        assert.strictEqual(page.status, 200)
        seen.push(...page.json.data.map((e: { event_id: string }) => e.event_id))
        cursor = page.json.nextCursor
      } while (cursor !== null)
      assert.deepStrictEqual(seen, ["e6", "e5", "e4", "e3", "e2", "e1", "e0"])
      const even = yield* get("/events?account_id=acct_even")
      assert.deepStrictEqual(
        even.json.data.map((e: { event_id: string }) => e.event_id),
        ["e6", "e4", "e2", "e0"]
      )
      assertProblem(yield* get("/events?limit=0"), 400, "invalid_query")
      assertProblem(yield* get("/events", yield* key("ingest")), 403, "forbidden")
    })
  )

  it.scopedLive("filters by event_name", () =>
    Effect.gen(function* () {
      const { get, send } = yield* setup()
      yield* send(checkout({ event_id: "c1", timestamp: minutesAgo(3) }))
      yield* send({ event_name: "seat_added", account_id: "acct_42", timestamp: minutesAgo(2), event_id: "s1" })
      yield* send(checkout({ event_id: "c2", timestamp: minutesAgo(1) }))
      const names = (query: string) =>
        Effect.map(get(`/events?${query}`), (r) => r.json.data.map((e: { event_id: string }) => e.event_id))
      assert.deepStrictEqual(yield* names("event_name=checkout_completed"), ["c2", "c1"])
      assert.deepStrictEqual(yield* names("event_name=seat_added"), ["s1"])
      assert.deepStrictEqual(yield* names("event_name=plan_changed"), [])
    })
  )

  it.scopedLive("filters by occurrence time: from inclusive, to exclusive; a malformed time is 400", () =>
    Effect.gen(function* () {
      const { get, send } = yield* setup()
      const times = [minutesAgo(40), minutesAgo(30), minutesAgo(20)]
      for (const [i, timestamp] of times.entries()) yield* send(checkout({ event_id: `t${i}`, timestamp }))
      const between = (from: string, to: string) =>
        Effect.map(get(`/events?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`), (r) =>
          r.json.data.map((e: { event_id: string }) => e.event_id)
        )
      assert.deepStrictEqual(yield* between(times[0]!, times[2]!), ["t1", "t0"])
      assert.deepStrictEqual(yield* between(times[1]!, minutesAgo(0)), ["t2", "t1"])
      assert.deepStrictEqual(yield* between(times[1]!, times[1]!), [])
      const bad = yield* get("/events?from=yesterday")
      assertProblem(bad, 400, "invalid_query")
      assert.deepStrictEqual(
        bad.json.errors.map((e: { path: string }) => e.path),
        ["from"]
      )
      assert.notInclude(bad.text, "yesterday")
    })
  )
})
