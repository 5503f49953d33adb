/**
 * The runtime routes' abuse limits and authentication order, over real HTTP on loopback against the
 * real server composition (`bootService`, memory storage), each limit configured small through the
 * environment so no test depends on timing: the client address's and the runtime session's
 * buckets, the caps on open approvals per requester, action and account, the wrong-token lockout,
 * and, over every declared route, that a request without a credential is 401 whatever its body.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Api from "../../../adapters/http/api/Api.ts"
import { intakeInput, workspaceId } from "../../core/connector/dispatch/support.ts"
import { admin, bootService, type Service } from "../../e2e/support.ts"
import { fixtureTrialRef } from "../../support/deliveries.ts"
import { type Reply, request } from "../../support/http.ts"
import { storageVariants } from "../../support/storage.ts"

const memory = storageVariants.find((v) => v.name === "memory")!
const runtime = "/api/funnels/v1/runtime/actions"
const json = { "content-type": "application/json" }

const post = (service: Service, path: string, body: unknown, headers: Record<string, string> = json) =>
  request(`${service.base}${path}`, { method: "POST", headers, body: JSON.stringify(body) })

const session = (service: Service, subject: string, authority: string, accountId = "acct_42") =>
  Effect.map(
    request(`${service.ws}/runtime-sessions`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ accountId, subject, role: subject, authorities: [authority], trialRef: fixtureTrialRef })
    }),
    (reply) => {
      assert.strictEqual(reply.status, 201, reply.text)
      return reply.json.token as string
    }
  )

const viewer = (service: Service, subject: string, accountId?: string) =>
  session(service, subject, "funnels.actions.request", accountId)

const ask = (service: Service, token: string, accountId = "acct_42") => {
  // what the runtime sends: the catalog action, the offer and the binding, nothing else
  const { action, binding } = intakeInput(accountId)
  return post(
    service,
    `${runtime}/approvals`,
    { action: { id: action.id, key: action.key }, binding },
    { ...json, authorization: `Bearer ${token}` }
  )
}

/** An approval requested by a new viewer, with its token collected by the admin. */
const approval = (service: Service) =>
  Effect.gen(function* () {
    const created = yield* ask(service, yield* viewer(service, `user_${globalThis.crypto.randomUUID()}`))
    assert.strictEqual(created.status, 201, created.text)
    const approvalId = created.json.approvalId as string
    const collected = yield* request(`${service.ws}/approvals/${approvalId}/token`, { method: "POST", headers: admin })
    assert.strictEqual(collected.status, 200, collected.text)
    return { approvalId, approvalToken: collected.json.approvalToken as string }
  })

const status = (service: Service, token?: string) =>
  request(`${service.base}${runtime}/status/${globalThis.crypto.randomUUID()}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
  })

/** A 429 problem with the code, and a `Retry-After` of whole seconds within `[min, max]`. */
const assertTooMany = (reply: Reply, code: string, [min, max]: readonly [number, number]) => {
  assert.strictEqual(reply.status, 429, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.json.code, code)
  const retryAfter = reply.headers.get("retry-after") ?? ""
  assert.match(retryAfter, /^\d+$/)
  assert.isAtLeast(Number(retryAfter), min)
  assert.isAtMost(Number(retryAfter), max)
}

const day = 24 * 60 * 60

describe("runtime routes: abuse limits", () => {
  it.scopedLive("a client address over its rate gets 429 on every runtime route, before anything is read", () =>
    Effect.gen(function* () {
      const service = yield* bootService({ storage: memory, env: { ACCORD_RUNTIME_ADDRESS_RATE_LIMIT: "3" } })
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* status(service)).status, 401)
      assertTooMany(yield* status(service), "runtime_rate_limited", [1, 20])
      const limited = yield* status(service)
      assert.include(limited.json.detail, "client address")
      assertTooMany(yield* post(service, `${runtime}/customer-complete`, {}), "runtime_rate_limited", [1, 20])
      assertTooMany(yield* post(service, `${runtime}/approvals/prepare`, {}), "runtime_rate_limited", [1, 20])
      assertTooMany(yield* request(`${service.base}${runtime}/no-such-route`), "runtime_rate_limited", [1, 20])
      // The admin routes are not runtime routes.
      assert.strictEqual((yield* request(`${service.ws}/catalog`, { headers: admin })).status, 200)
    })
  )

  it.scopedLive("a runtime session over its rate gets 429, whichever route it calls; another session does not", () =>
    Effect.gen(function* () {
      const service = yield* bootService({ storage: memory, env: { ACCORD_RUNTIME_SESSION_RATE_LIMIT: "3" } })
      const busy = yield* viewer(service, "user_busy")
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* status(service, busy)).status, 404)
      const limited = yield* status(service, busy)
      assertTooMany(limited, "runtime_rate_limited", [1, 20])
      assert.include(limited.json.detail, "runtime session")
      assertTooMany(yield* ask(service, busy), "runtime_rate_limited", [1, 20])
      assert.strictEqual((yield* status(service, yield* viewer(service, "user_calm"))).status, 404)

      // A session whose token travels in the body is counted the same way.
      const owner = yield* session(service, "user_owner", "funnels.actions.execute")
      const prepare = () =>
        post(service, `${runtime}/approvals/prepare`, {
          approvalId: globalThis.crypto.randomUUID(),
          approvalToken: `acc_apt_${"A".repeat(43)}`,
          runtimeToken: owner
        })
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* prepare()).status, 404)
      assertTooMany(yield* prepare(), "runtime_rate_limited", [1, 20])
    })
  )

  it.scopedLive("open approvals are capped per requester and per action (429 with Retry-After: the first expiry)", () =>
    Effect.gen(function* () {
      const service = yield* bootService({
        storage: memory,
        env: {
          ACCORD_APPROVAL_PENDING_PER_ACCOUNT: "4",
          ACCORD_APPROVAL_PENDING_PER_ACTION: "3",
          ACCORD_APPROVAL_PENDING_PER_SUBJECT: "2"
        }
      })
      const first = yield* viewer(service, "user_first")
      for (let i = 0; i < 2; i++) assert.strictEqual((yield* ask(service, first)).status, 201)
      const bySubject = yield* ask(service, first)
      assertTooMany(bySubject, "approval_limit_reached", [day - 120, day])
      assert.include(bySubject.json.detail, "this requester")
      assert.strictEqual((yield* ask(service, yield* viewer(service, "user_second"))).status, 201)
      const byAction = yield* ask(service, yield* viewer(service, "user_third"))
      assertTooMany(byAction, "approval_limit_reached", [day - 120, day])
      assert.include(byAction.json.detail, "this action")
      // Another account holds none of them.
      assert.strictEqual((yield* ask(service, yield* viewer(service, "user_first", "acct_7"), "acct_7")).status, 201)
    })
  )

  it.scopedLive("open approvals are capped per account", () =>
    Effect.gen(function* () {
      const service = yield* bootService({ storage: memory, env: { ACCORD_APPROVAL_PENDING_PER_ACCOUNT: "2" } })
      for (const subject of ["user_a", "user_b"]) {
        assert.strictEqual((yield* ask(service, yield* viewer(service, subject))).status, 201)
      }
      const byAccount = yield* ask(service, yield* viewer(service, "user_c"))
      assertTooMany(byAccount, "approval_limit_reached", [day - 120, day])
      assert.include(byAccount.json.detail, "the account")
    })
  )

  it.scopedLive(
    "after N wrong tokens an approval is 404 for every token, the right one included, exactly as an unknown id",
    () =>
      Effect.gen(function* () {
        const service = yield* bootService({ storage: memory, env: { ACCORD_APPROVAL_MAX_WRONG_TOKENS: "3" } })
        const owner = yield* session(service, "user_owner", "funnels.actions.execute")
        const wrong = `acc_apt_${"W".repeat(43)}`
        const prepare = (approvalId: string, approvalToken: string) =>
          post(service, `${runtime}/approvals/prepare`, { approvalId, approvalToken, runtimeToken: owner })
        const resolve = (approvalId: string, approvalToken: string) =>
          post(service, `${runtime}/approvals/resolve`, {
            approvalId,
            approvalToken,
            runtimeToken: owner,
            decision: "deny"
          })
        const unknown = yield* prepare(globalThis.crypto.randomUUID(), wrong)
        assert.strictEqual(unknown.status, 404, unknown.text)
        assert.strictEqual(unknown.json.code, "approval_not_found")

        // One wrong token fewer than the lockout: the right token still opens it.
        const spared = yield* approval(service)
        for (let i = 0; i < 2; i++) assert.strictEqual((yield* prepare(spared.approvalId, wrong)).text, unknown.text)
        const opened = yield* resolve(spared.approvalId, spared.approvalToken)
        assert.strictEqual(opened.status, 200, opened.text)

        const locked = yield* approval(service)
        for (let i = 0; i < 3; i++) assert.strictEqual((yield* prepare(locked.approvalId, wrong)).text, unknown.text)
        for (const reply of [
          yield* prepare(locked.approvalId, locked.approvalToken),
          yield* resolve(locked.approvalId, locked.approvalToken)
        ]) {
          assert.strictEqual(reply.status, 404)
          assert.strictEqual(reply.text, unknown.text)
          assert.strictEqual(reply.headers.get("content-type"), unknown.headers.get("content-type"))
        }
      })
  )
})

/** The declared routes that need no credential (documents, probes, the console's files). */
const publicRoutes = new Set([
  "healthz",
  "readyz",
  "metrics",
  "openApiDocument",
  "reference",
  "referenceStyle",
  "consolePage",
  "consoleScript",
  "consoleStyle",
  "consoleIcon"
])

const declared = Object.values(Api.api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    name: endpoint.name,
    method: endpoint.method,
    path: endpoint.path
  }))
)

describe("authentication before the body, on every declared route", () => {
  it("the table covers the runtime, admin and ingest routes", () => {
    const names = new Set(declared.map((route) => route.name))
    for (const name of ["requestApproval", "prepareApproval", "resolveApproval", "runtimeActionStatus"]) {
      assert.isTrue(names.has(name), name)
    }
    assert.isAbove(declared.filter((route) => !publicRoutes.has(route.name)).length, 20)
  })

  it.scopedLive("no credential and a body of unknown fields: 401, never a 400 naming the fields", () =>
    Effect.gen(function* () {
      const service = yield* bootService({ storage: memory })
      for (const route of declared.filter((r) => !publicRoutes.has(r.name))) {
        const path = route.path.replaceAll(/:(\w+)/g, (_: string, name: string) =>
          name === "workspaceId" ? workspaceId : name === "version" ? "1" : globalThis.crypto.randomUUID()
        )
        const withBody = route.method === "POST" || route.method === "PUT"
        const reply = yield* request(`${service.base}${path}`, {
          method: route.method,
          headers: withBody ? json : {},
          ...(withBody ? { body: JSON.stringify({ foo: 1 }) } : {})
        })
        assert.strictEqual(reply.status, 401, `${route.method} ${route.path}: ${reply.text}`)
        assert.isUndefined(reply.json.errors, route.name)
        assert.notInclude(reply.text, "foo", route.name)
      }
    })
  )
})
