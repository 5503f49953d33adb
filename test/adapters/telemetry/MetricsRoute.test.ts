/**
 * `GET /metrics` on the real server composition: ingest accepted and refused by code (both the
 * platform app and the node:http fast path), the connector metric families, the optional bearer
 * token, and no secret or personal value anywhere in the scrape.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { adminKey, bearer, jsonHeaders, request, startServer, workspaceId } from "../../support/http.ts"

const admin = `/api/admin/v1/workspaces/${workspaceId}`
const email = "ada.lovelace@example.com"
const accountId = "acct_personal_7781"

/** The value of one sample line (`name{labels} value`), 0 when absent. */
const sample = (text: string, line: string): number => {
  const found = text.split("\n").find((candidate) => candidate.startsWith(line + " "))
  return found === undefined ? 0 : Number(found.slice(line.length + 1))
}

const event = (eventId: string, properties: Record<string, unknown> = { plan: "pro" }) => ({
  event_name: "checkout_completed",
  account_id: accountId,
  timestamp: new Date(Date.now() - 60_000).toISOString(),
  event_id: eventId,
  value: 49,
  properties
})

for (const server of ["platform", "node"] as const) {
  describe(`GET /metrics (${server})`, () => {
    it.scopedLive(
      "counts ingest accepted and refused by code; lists every Accord family; holds no secret or personal value",
      () =>
        Effect.gen(function* () {
          const { url } = yield* startServer({ server })
          const created = yield* request(url + admin + "/api-keys", {
            method: "POST",
            headers: jsonHeaders(adminKey),
            body: JSON.stringify({ scope: "ingest" })
          })
          const ingestKey = created.json.secret as string
          const scrape = Effect.map(request(url + "/metrics"), (reply) => {
            assert.strictEqual(reply.status, 200)
            assert.strictEqual(reply.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8")
            return reply.text
          })
          const before = yield* scrape
          const send = (body: unknown, secret: string) =>
            request(url + "/api/events/ingest", {
              method: "POST",
              headers: jsonHeaders(secret),
              body: JSON.stringify(body)
            })

          assert.strictEqual((yield* send(event(`checkout_completed:${server}_1`), ingestKey)).status, 202)
          assert.strictEqual((yield* send(event(`checkout_completed:${server}_2`), ingestKey)).status, 202)
          assert.strictEqual(
            (yield* send(event(`checkout_completed:${server}_3`), "ak_wrong_" + "k".repeat(40))).status,
            401
          )
          const unsafe = yield* send(
            event(`checkout_completed:${server}_4`, { plan: "pro", contact: email }),
            ingestKey
          )
          assert.strictEqual(unsafe.status, 422, unsafe.text)
          const malformed = yield* request(url + "/api/events/ingest", {
            method: "POST",
            headers: jsonHeaders(ingestKey),
            body: "{"
          })
          assert.strictEqual(malformed.status, 400)
          yield* request(url + admin + `/accounts/${accountId}`, { headers: bearer(adminKey) })

          const after = yield* scrape
          const delta = (line: string) => sample(after, line) - sample(before, line)
          assert.strictEqual(delta("accord_ingest_accepted_total"), 2, after)
          assert.strictEqual(delta(`accord_ingest_refused_total{code="${malformed.json.code}"}`), 1, after)
          assert.strictEqual(delta(`accord_ingest_refused_total{code="${unsafe.json.code}"}`), 1, after)
          const unauthorizedCodes = after.split("\n").filter((line) => line.startsWith("accord_ingest_refused_total{"))
          assert.isAtLeast(unauthorizedCodes.length, 3, after)
          for (const family of [
            "accord_ingest_accepted_total",
            "accord_ingest_refused_total",
            "accord_dispatch_in_flight",
            "accord_dispatch_retries_total",
            "accord_dispatch_unknown_outcomes_total"
          ]) {
            assert.include(after, `# TYPE ${family} `)
          }
          for (const value of [ingestKey, adminKey, email, accountId, workspaceId, "ak_wrong_"])
            assert.notInclude(after, value)
        })
    )
  })
}

describe("GET /metrics: verification failures", () => {
  it.scopedLive(
    "a completion whose signature does not verify counts under its reason, and nothing of its body is a label",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer()
        const completion = "/api/funnels/v1/runtime/actions/customer-complete"
        const before = (yield* request(url + "/metrics")).text
        const body = JSON.stringify({ workspaceId, actionRequestId: "act_" + accountId, contact: email })
        const headers = {
          "content-type": "application/json",
          "x-service-signature-version": "v1",
          "x-service-timestamp": new Date().toISOString(),
          "x-service-nonce": "n".repeat(32),
          "x-service-signature": "v1=" + "0".repeat(64)
        }
        const refused = yield* request(url + completion, { method: "POST", headers, body })
        assert.strictEqual(refused.status, 401, refused.text)
        const after = (yield* request(url + "/metrics")).text
        const line = `accord_verification_failures_total{reason="${refused.json.code}"}`
        assert.strictEqual(sample(after, line) - sample(before, line), 1, after)
        for (const value of [email, accountId, workspaceId]) assert.notInclude(after, value)
      })
  )
})

describe("GET /metrics with ACCORD_METRICS_TOKEN", () => {
  it.scopedLive("needs the bearer token: none 401, a wrong one 401, the token 200", () =>
    Effect.gen(function* () {
      const token = "metrics-scrape-token-0123456789"
      const { logs, url } = yield* startServer({ env: { ACCORD_METRICS_TOKEN: token } })
      const none = yield* request(url + "/metrics")
      assert.strictEqual(none.status, 401)
      assert.strictEqual(none.headers.get("content-type"), "application/problem+json")
      assert.notInclude(none.text, token)
      assert.strictEqual((yield* request(url + "/metrics", { headers: bearer(token + "x") })).status, 401)
      assert.strictEqual((yield* request(url + "/metrics", { headers: bearer(token.slice(0, -1)) })).status, 401)
      const ok = yield* request(url + "/metrics", { headers: bearer(token) })
      assert.strictEqual(ok.status, 200)
      assert.include(ok.text, "# TYPE ")
      assert.notInclude(logs.join("\n"), token)
    })
  )
})
