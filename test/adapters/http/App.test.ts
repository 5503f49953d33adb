/**
 * The HTTP app over real HTTP on loopback (Node's server, `fetch`), composed as in production by
 * `Server.start`, with memory storage.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as Readiness from "../../../core/ports/Readiness.ts"
import { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { bootstrapWorkspace } from "../../../core/access/ApiKeys.ts"
import { StorageError } from "../../../core/ports/StorageError.ts"
import { adminKey, bearer, jsonHeaders, request, startServer, workspaceId } from "../../support/http.ts"

const keysPath = `/api/admin/v1/workspaces/${workspaceId}/api-keys`

const assertProblem = (reply: { status: number; headers: Headers; json: any }, status: number, code: string) => {
  assert.strictEqual(reply.status, status)
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.json.status, status)
  assert.strictEqual(reply.json.code, code)
  assert.strictEqual(reply.json.type, `urn:accord:problem:${code}`)
  assert.isString(reply.json.title)
  assert.isString(reply.json.detail)
  assert.notInclude(JSON.stringify(reply.json), "stack")
}

const createKey = (url: string, secret: string, body: unknown, path = keysPath) =>
  request(url + path, { method: "POST", headers: jsonHeaders(secret), body: JSON.stringify(body) })

describe("health and readiness", () => {
  it.scopedLive("GET /healthz answers 200 while the process is up", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const reply = yield* request(`${url}/healthz`)
      assert.strictEqual(reply.status, 200)
      assert.deepStrictEqual(reply.json, { status: "ok" })
    })
  )

  it.scopedLive("GET /readyz answers 200 when storage is ready", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const reply = yield* request(`${url}/readyz`)
      assert.strictEqual(reply.status, 200)
      assert.deepStrictEqual(reply.json, { status: "ready" })
    })
  )

  it.scopedLive("GET /readyz answers a 503 problem when storage is not ready, without its reason", () =>
    Effect.gen(function* () {
      const readiness = Layer.succeed(Readiness.Readiness, {
        check: Effect.fail(new StorageError({ operation: "ping", message: "connect ECONNREFUSED 10.1.2.3:5432" }))
      })
      const { url } = yield* startServer({ readiness })
      const reply = yield* request(`${url}/readyz`)
      assertProblem(reply, 503, "not_ready")
      assert.notInclude(reply.text, "ECONNREFUSED")
    })
  )
})

describe("start", () => {
  it.scopedLive("logs where it listens, and loudly when insecure endpoints are allowed", () =>
    Effect.gen(function* () {
      const { logs, url } = yield* startServer({ env: { ACCORD_ALLOW_INSECURE_ENDPOINTS: "true" } })
      assert.isTrue(logs.some((line) => line.includes(`Accord listening on ${url}`)))
      assert.isTrue(
        logs.some((line) => line.includes("level=WARN") && line.includes("ACCORD_ALLOW_INSECURE_ENDPOINTS IS ON"))
      )
      assert.isTrue(logs.some((line) => line.includes("bootstrap: workspace") && line.includes("admin key created")))
    })
  )

  it.scopedLive("ACCORD_BOOTSTRAP_INGEST_KEY is an ingest key of the workspace from the start, and only that", () =>
    Effect.gen(function* () {
      const ingestKey = "bootstrap-ingest-key-for-the-backend-0123456789"
      const { logs, url } = yield* startServer({ env: { ACCORD_BOOTSTRAP_INGEST_KEY: ingestKey } })
      assert.isTrue(logs.some((line) => line.includes("admin key created, ingest key created")))
      assert.isFalse(logs.some((line) => line.includes(ingestKey)))
      const accepted = yield* request(`${url}/api/events/ingest`, {
        method: "POST",
        headers: jsonHeaders(ingestKey),
        body: JSON.stringify({
          event_name: "account_created",
          account_id: "acct_bootstrap_1",
          timestamp: new Date().toISOString(),
          properties: { plan: "pro" }
        })
      })
      assert.strictEqual(accepted.status, 202, accepted.text)
      const admin = yield* request(`${url}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
        headers: bearer(ingestKey)
      })
      assert.strictEqual(admin.status, 403)
    })
  )
})

describe("admin API keys", () => {
  it.scopedLive("create shows the secret once; list never shows a secret or a hash", () =>
    Effect.gen(function* () {
      const { store, url } = yield* startServer()
      const created = yield* createKey(url, adminKey, { scope: "ingest", name: "backend" })
      assert.strictEqual(created.status, 201)
      assert.strictEqual(created.headers.get("cache-control"), "no-store")
      assert.deepStrictEqual(Object.keys(created.json).sort(), ["createdAt", "id", "name", "scope", "secret"])
      assert.strictEqual(created.json.scope, "ingest")
      assert.strictEqual(created.json.name, "backend")
      assert.match(created.json.secret, /^acc_ingest_[A-Za-z0-9_-]{43}$/)
      assert.match(created.json.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

      const reader = yield* createKey(url, adminKey, { scope: "developer:read" })
      assert.match(reader.json.secret, /^acc_read_/)
      assert.isNull(reader.json.name)

      const listed = yield* request(url + keysPath, { headers: bearer(adminKey) })
      assert.strictEqual(listed.status, 200)
      assert.isNull(listed.json.nextCursor)
      const ids = listed.json.data.map((key: { id: string }) => key.id)
      assert.includeMembers(ids, [created.json.id, reader.json.id])
      for (const key of listed.json.data) {
        assert.deepStrictEqual(Object.keys(key).sort(), ["createdAt", "id", "name", "revokedAt", "scope"])
      }
      const stored = (yield* store.list(workspaceId)).find((key) => key.id === created.json.id)!
      assert.notInclude(listed.text, created.json.secret)
      assert.notInclude(listed.text, stored.secretHash)
      assert.notInclude(listed.text, reader.json.secret)
    })
  )

  it.scopedLive("a revoked key gets 401; revoking an unknown or already revoked key is 404", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const second = yield* createKey(url, adminKey, { scope: "admin", name: "second admin" })
      assert.strictEqual((yield* request(url + keysPath, { headers: bearer(second.json.secret) })).status, 200)

      const revoked = yield* request(`${url}${keysPath}/${second.json.id}`, {
        method: "DELETE",
        headers: bearer(adminKey)
      })
      assert.strictEqual(revoked.status, 204)
      assert.strictEqual(revoked.text, "")

      const refused = yield* request(url + keysPath, { headers: bearer(second.json.secret) })
      assertProblem(refused, 401, "unauthorized")
      assert.strictEqual(refused.headers.get("www-authenticate"), "Bearer")

      const listed = yield* request(url + keysPath, { headers: bearer(adminKey) })
      const entry = listed.json.data.find((key: { id: string }) => key.id === second.json.id)
      assert.isString(entry.revokedAt)

      const again = yield* request(`${url}${keysPath}/${second.json.id}`, {
        method: "DELETE",
        headers: bearer(adminKey)
      })
      assertProblem(again, 404, "not_found")
      const unknown = yield* request(`${url}${keysPath}/5d0f3f3c-1b7a-4c55-8f7e-1b0b3a1e2c4d`, {
        method: "DELETE",
        headers: bearer(adminKey)
      })
      assertProblem(unknown, 404, "not_found")
      const notAnId = yield* request(`${url}${keysPath}/not-an-id`, { method: "DELETE", headers: bearer(adminKey) })
      assertProblem(notAnId, 404, "not_found")
    })
  )

  it.scopedLive("an ingest or read key on an admin route gets 403", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      for (const scope of ["ingest", "developer:read"]) {
        const key = yield* createKey(url, adminKey, { scope })
        const list = yield* request(url + keysPath, { headers: bearer(key.json.secret) })
        assertProblem(list, 403, "forbidden")
        const create = yield* createKey(url, key.json.secret, { scope: "admin" })
        assertProblem(create, 403, "forbidden")
      }
    })
  )

  it.scopedLive("an admin key of another workspace gets 403", () =>
    Effect.gen(function* () {
      const { store, url } = yield* startServer()
      const otherWorkspace = "7e57c0de-0000-4000-8000-000000000002"
      const otherAdmin = "other-workspace-admin-key-0123456789abcdef"
      yield* bootstrapWorkspace(otherWorkspace, Redacted.make(otherAdmin)).pipe(
        Effect.provideService(ApiKeyStore, store),
        Effect.provide(NodeCrypto.layer)
      )
      assert.strictEqual(
        (yield* request(`${url}/api/admin/v1/workspaces/${otherWorkspace}/api-keys`, { headers: bearer(otherAdmin) }))
          .status,
        200
      )
      assertProblem(yield* request(url + keysPath, { headers: bearer(otherAdmin) }), 403, "forbidden")
      assertProblem(yield* createKey(url, otherAdmin, { scope: "ingest" }), 403, "forbidden")
      const victim = yield* createKey(url, adminKey, { scope: "ingest" })
      const cross = yield* request(`${url}${keysPath}/${victim.json.id}`, {
        method: "DELETE",
        headers: bearer(otherAdmin)
      })
      assertProblem(cross, 403, "forbidden")
      // Its own workspace path with the other workspace's key id: no such key there.
      const wrongPath = yield* request(`${url}/api/admin/v1/workspaces/${otherWorkspace}/api-keys/${victim.json.id}`, {
        method: "DELETE",
        headers: bearer(otherAdmin)
      })
      assertProblem(wrongPath, 404, "not_found")
    })
  )

  it.scopedLive("a missing, malformed, unknown or non-Bearer credential gets 401 with a Bearer challenge", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const cases: ReadonlyArray<Record<string, string>> = [
        {},
        { authorization: "Bearer" },
        { authorization: "Bearer garbage" },
        { authorization: "Bearer acc_admin_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
        { authorization: `Basic ${btoa(`admin:${adminKey}`)}` },
        { authorization: `Bearer ${adminKey} extra` }
      ]
      for (const headers of cases) {
        const reply = yield* request(url + keysPath, { headers })
        assertProblem(reply, 401, "unauthorized")
        assert.strictEqual(reply.headers.get("www-authenticate"), "Bearer")
      }
    })
  )

  it.scopedLive("never logs a secret, a hash or a header; logs method, route template, status and duration", () =>
    Effect.gen(function* () {
      const { logs, store, url } = yield* startServer()
      const created = yield* createKey(url, adminKey, { scope: "ingest" })
      yield* request(`${url + keysPath}?token=${created.json.secret}`, { headers: bearer(created.json.secret) })
      const hashes = (yield* store.list(workspaceId)).map((key) => key.secretHash)
      const text = logs.join("\n")
      for (const secret of [adminKey, created.json.secret, ...hashes]) assert.notInclude(text, secret)
      assert.notInclude(text.toLowerCase(), "bearer")
      assert.isTrue(
        logs.some(
          (line) =>
            line.includes("method=POST") &&
            line.includes("path=/api/admin/v1/workspaces/:workspaceId/api-keys") &&
            line.includes("status=201") &&
            line.includes("durationMs=")
        )
      )
    })
  )
})

describe("request errors are problem details", () => {
  it.scopedLive("a storage failure is a 503 problem; an unexpected error a 500 problem; neither leaks detail", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({
        store: (store) => ({
          ...store,
          list: () =>
            Effect.fail(new StorageError({ operation: "list", message: "relation api_keys_internal missing" })),
          revoke: () => Effect.die(new Error("boom at /srv/accord/secret-path"))
        })
      })
      const unavailable = yield* request(url + keysPath, { headers: bearer(adminKey) })
      assertProblem(unavailable, 503, "storage_unavailable")
      assert.notInclude(unavailable.text, "api_keys_internal")
      const crashed = yield* request(`${url}${keysPath}/5d0f3f3c-1b7a-4c55-8f7e-1b0b3a1e2c4d`, {
        method: "DELETE",
        headers: bearer(adminKey)
      })
      assertProblem(crashed, 500, "internal_error")
      assert.notInclude(crashed.text, "boom")
      assert.notInclude(crashed.text, "secret-path")
      assert.strictEqual((yield* request(`${url}/healthz`)).status, 200)
    })
  )

  it.scopedLive("an unknown route is a 404 problem; a known path with another method is a 405 problem with Allow", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      assertProblem(yield* request(`${url}/nope`), 404, "not_found")
      assertProblem(yield* request(`${url}${keysPath}/x/y`), 404, "not_found")
      const wrongMethod = yield* request(`${url}/healthz`, { method: "POST" })
      assertProblem(wrongMethod, 405, "method_not_allowed")
      assert.strictEqual(wrongMethod.headers.get("allow"), "GET")
      const keys = yield* request(`${url}${keysPath}`, { method: "PUT", headers: bearer(adminKey) })
      assertProblem(keys, 405, "method_not_allowed")
      assert.strictEqual(keys.headers.get("allow"), "GET, POST")
      const ingest = yield* request(`${url}/api/events/ingest?x=1`)
      assertProblem(ingest, 405, "method_not_allowed")
      assert.strictEqual(ingest.headers.get("allow"), "POST")
    })
  )

  it.scopedLive("a body over the limit is 413, with Content-Length and without (chunked)", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ env: { ACCORD_MAX_BODY_BYTES: "1024" } })
      const big = JSON.stringify({ scope: "ingest", name: "x".repeat(4000) })
      const declared = yield* request(url + keysPath, { method: "POST", headers: jsonHeaders(adminKey), body: big })
      assertProblem(declared, 413, "content_too_large")

      const chunked = yield* request(url + keysPath, {
        method: "POST",
        headers: jsonHeaders(adminKey),
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < 8; i++) controller.enqueue(new TextEncoder().encode("x".repeat(512)))
            controller.close()
          }
        }),
        duplex: "half"
      } as RequestInit)
      assertProblem(chunked, 413, "content_too_large")

      // The connection and the server are fine afterwards, and a body at the limit is accepted.
      const atLimit = JSON.stringify({ scope: "ingest", name: "n" }).padEnd(1024, " ")
      assert.strictEqual(
        (yield* request(url + keysPath, { method: "POST", headers: jsonHeaders(adminKey), body: atLimit })).status,
        201
      )
    })
  )

  it.scopedLive("a non-JSON content type is 415", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      for (const contentType of [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin1"
      ]) {
        const reply = yield* request(url + keysPath, {
          method: "POST",
          headers: { ...bearer(adminKey), "content-type": contentType },
          body: JSON.stringify({ scope: "ingest" })
        })
        assertProblem(reply, 415, "unsupported_media_type")
      }
      const missing = yield* request(url + keysPath, {
        method: "POST",
        headers: bearer(adminKey),
        body: new TextEncoder().encode(JSON.stringify({ scope: "ingest" }))
      })
      assertProblem(missing, 415, "unsupported_media_type")
    })
  )

  it.scopedLive("malformed JSON is a 400 problem with code malformed_json", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      for (const body of ['{"scope":', "", '\uFEFF{"scope":"ingest"}']) {
        const reply = yield* request(url + keysPath, { method: "POST", headers: jsonHeaders(adminKey), body })
        assertProblem(reply, 400, "malformed_json")
      }
    })
  )

  it.scopedLive("invalid fields are a 400 problem listing them, without echoing values", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const secretLooking = "acc_admin_this-value-must-not-come-back"
      const reply = yield* createKey(url, adminKey, { scope: secretLooking, name: "", extra: secretLooking })
      assertProblem(reply, 400, "invalid_body")
      const paths = reply.json.errors.map((error: { path: string }) => error.path).sort()
      assert.deepStrictEqual(paths, ["extra", "name", "scope"])
      const byPath = Object.fromEntries(
        reply.json.errors.map((error: { path: string; message: string }) => [error.path, error.message])
      )
      assert.deepStrictEqual(byPath, {
        extra: "is not allowed",
        name: "must be a string of 1 to 200 characters",
        scope: "must be one of ingest, developer:read, admin"
      })
      assert.notInclude(reply.text, secretLooking)
      for (const error of reply.json.errors) assert.isString(error.message)

      const missing = yield* createKey(url, adminKey, { name: "no scope" })
      assert.deepStrictEqual(missing.json.errors, [{ path: "scope", message: "is missing" }])

      const notObject = yield* createKey(url, adminKey, [1, 2])
      assertProblem(notObject, 400, "invalid_body")
      assert.deepStrictEqual(notObject.json.errors, [{ path: "", message: "must be a JSON object" }])
    })
  )
})

describe("bad input never reaches storage or a 5xx", () => {
  const admin = `/api/admin/v1/workspaces/${workspaceId}`

  it.scopedLive("a duplicate key in an admin body is 400 duplicate_key with its path", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const reply = yield* request(url + keysPath, {
        method: "POST",
        headers: jsonHeaders(adminKey),
        body: `{"scope":"ingest","scope":"admin"}`
      })
      assertProblem(reply, 400, "duplicate_key")
      assert.deepStrictEqual(reply.json.errors, [{ path: "scope", message: "is a duplicate key" }])
    })
  )

  it.scopedLive(
    "POST /action-requests: a NUL in accountId is 400 unstorable_text, a control or bidi character 400 invalid_body",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer()
        const post = (body: string) =>
          request(url + admin + "/action-requests", { method: "POST", headers: jsonHeaders(adminKey), body })
        const nul = yield* post(`{"accountId":"acct\\u0000x"}`)
        assertProblem(nul, 400, "unstorable_text")
        assert.deepStrictEqual(
          nul.json.errors.map((e: { path: string }) => e.path),
          ["accountId"]
        )
        for (const accountId of ["acct\u0001x", "acct\u202ex", "acct\u200bx"]) {
          const reply = yield* post(JSON.stringify({ accountId }))
          assertProblem(reply, 400, "invalid_body")
          assert.isTrue(reply.json.errors.some((e: { path: string }) => e.path === "accountId"))
        }
      })
  )

  it.scopedLive(
    "the completion route: an unsigned body with a duplicate key or a NUL is 401 (verified before it is parsed strictly), never a 5xx",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer()
        const post = (body: string) =>
          request(url + "/api/funnels/v1/runtime/actions/customer-complete", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body
          })
        // An authentic body with either fault is 400 duplicate_key / unstorable_text: test/core/connector/dispatch/CompletionIntake.test.ts.
        assertProblem(yield* post(`{"workspaceId":"a","workspaceId":"b"}`), 401, "unsupported_version")
        assertProblem(yield* post(`{"workspaceId":"ws\\u0000x","actionRequestId":"ar"}`), 401, "unsupported_version")
      })
  )

  it.scopedLive("a path parameter that is not UTF-8 or breaks the identifier rule is 400 invalid_path", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      for (const id of ["acct%00x", "%FF", "%C3%28", "acct%E2%80%AEx", "acct%E2%80%8Bx", "acct%01", "%ED%A0%80"]) {
        assertProblem(
          yield* request(`${url + admin}/accounts/${id}`, { headers: bearer(adminKey) }),
          400,
          "invalid_path"
        )
      }
      assertProblem(
        yield* request(`${url}/api/admin/v1/workspaces/%00/events`, { headers: bearer(adminKey) }),
        400,
        "invalid_path"
      )
    })
  )

  it.scopedLive("a query value that is not UTF-8 or holds a NUL is 400 invalid_query", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      for (const query of ["account_id=%00", "account_id=%FF", "x%00=1", "account_id=a%C3"]) {
        assertProblem(
          yield* request(`${url + admin}/events?${query}`, { headers: bearer(adminKey) }),
          400,
          "invalid_query"
        )
      }
      assert.strictEqual(
        (yield* request(`${url + admin}/events?account_id=acct%20%C3%A9`, { headers: bearer(adminKey) })).status,
        200
      )
    })
  )
})

describe("request log", () => {
  it.scopedLive(
    "logs route templates and statuses, never paths, queries, headers or bodies (authenticated or not, 404s too)",
    () =>
      Effect.gen(function* () {
        const { logs, url } = yield* startServer()
        const secret = "sk_live_51HxTopSecretValue0123456789"
        const email = "ada.lovelace@example.com"
        const admin = `/api/admin/v1/workspaces/${workspaceId}`
        const headers = { ...jsonHeaders(adminKey), "x-api-key": secret, cookie: `session=${secret}`, "x-user": email }
        const anonymous = { "content-type": "application/json", authorization: `Bearer ${secret}`, "x-user": email }
        const body = JSON.stringify({ accountId: email, token: secret, scope: "ingest" })
        const targets: ReadonlyArray<readonly [string, string, Record<string, string>]> = [
          ["GET", `${admin}/accounts/${encodeURIComponent(email)}?token=${secret}&email=${email}`, headers],
          ["GET", `${admin}/accounts/${secret}`, anonymous],
          ["GET", `${admin}/events?account_id=${email}&api_key=${secret}`, headers],
          ["POST", `${admin}/api-keys?token=${secret}`, headers],
          ["POST", `${admin}/action-requests?email=${email}`, anonymous],
          ["GET", `/api/admin/v1/workspaces/${secret}/events`, headers],
          ["GET", `/no/such/${secret}/${email}?q=${secret}`, headers],
          ["POST", `/${email}`, anonymous],
          ["POST", `/api/events/ingest?token=${secret}`, anonymous],
          ["GET", `/healthz?token=${secret}`, anonymous]
        ]
        for (const [method, path, with_] of targets) {
          yield* request(url + path, { method, headers: with_, ...(method === "POST" ? { body } : {}) })
        }
        const text = logs.join("\n")
        for (const value of [secret, email, encodeURIComponent(email), "ada.lovelace"]) assert.notInclude(text, value)
        const requestLines = logs.filter((line) => line.includes("message=request"))
        // The start-up log names the bootstrap workspace; a request line names only the template.
        for (const line of requestLines) assert.notInclude(line, workspaceId)
        assert.strictEqual(requestLines.length, targets.length)
        for (const template of [
          ":workspaceId/accounts/:accountId",
          ":workspaceId/events",
          ":workspaceId/api-keys",
          ":workspaceId/action-requests",
          "/api/events/ingest",
          "/healthz"
        ]) {
          assert.isTrue(
            requestLines.some((line) => line.includes(template)),
            template
          )
        }
        assert.strictEqual(requestLines.filter((line) => line.includes("path=<unmatched>")).length, 2)
        assert.isTrue(requestLines.some((line) => line.includes("status=404")))
        assert.isTrue(requestLines.some((line) => line.includes("status=401")))
      })
  )
})
