/**
 * The admin list routes over real HTTP (accounts, actions and gates can be listed), on the
 * server as composed by `Server.start` with memory storage: `GET /accounts`, `GET /action-requests`
 * and `GET /feature-gates` answer `{ data, nextCursor }` like `GET /events`, newest first (accounts
 * by id), with filters, cursor paging to the end, 400 `invalid_query` for a bad parameter, and the
 * scopes each route states. `GET /approvals` with approvals stored directly: an expired one and a
 * resolver no longer stored (the walk through the approval flow is `test/e2e/approvals.ts`).
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import * as MemoryStorage from "../../../../adapters/memory/Storage.ts"
import { fixtureCatalog, intakeInput } from "../../../support/deliveries.ts"
import { type Reply, request } from "../../../support/http.ts"
import { completionPath } from "../../../../adapters/http/routes/Completion.ts"
import { evidenceSchedule, makeEvidenceWatcher } from "../../../../core/connector/EvidenceWatcher.ts"
import { encodeBody, importSigningKeys, sign } from "../../../../core/protocol/Signing.ts"
import { type ApprovalRecord, ApprovalStore } from "../../../../core/ports/ApprovalStore.ts"
import { cipherLayer, withServices } from "../../../support/storage.ts"
import { issueKey, send, type Service, startService } from "../../../core/connector/connection/support.ts"
import { connect } from "../../../core/connector/dispatch/support.ts"

type Json = Record<string, any>

/** The live clock, `ms` ahead: a worker's look as it will happen that much later. */
const clockAhead = (ms: number): Clock.Clock => {
  const live = Clock.make()
  const millis = () => live.unsafeCurrentTimeMillis() + ms
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: millis,
    unsafeCurrentTimeNanos: () => BigInt(millis()) * 1_000_000n,
    currentTimeMillis: Effect.sync(millis),
    currentTimeNanos: Effect.sync(() => BigInt(millis()) * 1_000_000n),
    sleep: (duration) => live.sleep(duration)
  }
}

const admin = (
  service: Service,
  tail: string,
  key = service.adminKey,
  method = "GET",
  body?: unknown
): Effect.Effect<Reply> =>
  send(`${service.url}/api/admin/v1/workspaces/${service.workspaceId}${tail}`, method, key, body)

/** Every page of a list, following `nextCursor` from `tail` (which has a `?`). */
const allPages = (service: Service, tail: string, key = service.adminKey) =>
  Effect.gen(function* () {
    const pages: Array<ReadonlyArray<Json>> = []
    let cursor: string | null = null
    do {
      const reply: Reply = yield* admin(
        service,
        cursor === null ? tail : `${tail}&cursor=${encodeURIComponent(cursor)}`,
        key
      )
      assert.strictEqual(reply.status, 200, reply.text)
      assert.deepStrictEqual(Object.keys(reply.json).sort(), ["data", "nextCursor"])
      pages.push(reply.json.data)
      cursor = reply.json.nextCursor
    } while (cursor !== null && pages.length < 20)
    return pages
  })

const assertProblem = (reply: Reply, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.json.code, code)
}

const badQueries = (service: Service, route: string) =>
  Effect.gen(function* () {
    for (const query of ["limit=0", "limit=201", "limit=x", "cursor=%21%21"]) {
      const reply = yield* admin(service, `${route}?${query}`)
      assertProblem(reply, 400, "invalid_query")
      assert.strictEqual(reply.json.errors[0].path, query.split("=")[0])
    }
  })

describe("admin list routes", () => {
  layer(withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer)), { excludeTestServices: true })(
    (it) => {
      it.scoped("GET /action-requests: newest first, by state and account, paged to the end; admin keys only", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          yield* connect("https://customer.example/accord", {
            workspaceId: service.workspaceId,
            connectionId: globalThis.crypto.randomUUID(),
            secrets: {
              actionSigning: Redacted.make("as_" + "5".repeat(40)),
              completion: Redacted.make("cs_" + "6".repeat(40))
            }
          })
          const created: Array<Json> = []
          for (const accountId of ["acct_a", "acct_b", "acct_a", "acct_c", "acct_a"]) {
            const reply = yield* admin(service, "/action-requests", service.adminKey, "POST", intakeInput(accountId))
            assert.strictEqual(reply.status, 202, reply.text)
            created.push({ ...reply.json, accountId })
          }
          const ids = (rows: ReadonlyArray<Json>) => rows.map((row) => row.actionRequestId)
          const pages = yield* allPages(service, "/action-requests?limit=2")
          assert.deepStrictEqual(
            pages.map((page) => page.length),
            [2, 2, 1]
          )
          const listed = pages.flat()
          assert.sameMembers(ids(listed), ids(created))
          for (let i = 1; i < listed.length; i++) {
            const [newer, older] = [listed[i - 1]!, listed[i]!]
            assert.isTrue(
              newer.createdAt > older.createdAt ||
                (newer.createdAt === older.createdAt && newer.actionRequestId > older.actionRequestId)
            )
          }
          const one = listed[0]!
          assert.deepStrictEqual(Object.keys(one).sort(), [
            "accountId",
            "actionRequestId",
            "connectionId",
            "createdAt",
            "hasContinuation",
            "providerIdempotencyKey",
            "revision",
            "state",
            "updatedAt"
          ])
          const shown = yield* admin(service, `/action-requests/${one.actionRequestId}`)
          const { history: _, ...summary } = shown.json
          assert.deepStrictEqual(one, summary)
          const forA = (yield* allPages(service, "/action-requests?account_id=acct_a")).flat()
          assert.sameMembers(ids(forA), ids(created.filter((c) => c.accountId === "acct_a")))
          const state = one.state as string
          const inState = (yield* allPages(service, `/action-requests?state=${state}`)).flat()
          assert.isTrue(inState.length > 0 && inState.every((row) => row.state === state))
          assert.deepStrictEqual((yield* allPages(service, "/action-requests?state=reversed")).flat(), [])
          assertProblem(yield* admin(service, "/action-requests?state=nope"), 400, "invalid_query")
          yield* badQueries(service, "/action-requests")
          assertProblem(
            yield* admin(service, "/action-requests", yield* issueKey(service, "developer:read")),
            403,
            "forbidden"
          )
          assertProblem(
            yield* send(
              `${service.url}/api/admin/v1/workspaces/${service.workspaceId}/action-requests`,
              "GET",
              undefined
            ),
            401,
            "unauthorized"
          )
          // The guard answers before the query is judged: 401 and 403 even for a bad query, and a
          // repeated parameter reaches the route's own check, never a decoder's error.
          const listUrl = `${service.url}/api/admin/v1/workspaces/${service.workspaceId}/action-requests`
          assertProblem(yield* send(`${listUrl}?state=nope&limit=0`, "GET", undefined), 401, "unauthorized")
          assertProblem(
            yield* admin(service, "/action-requests?state=nope&limit=0", yield* issueKey(service, "developer:read")),
            403,
            "forbidden"
          )
          assertProblem(yield* admin(service, "/action-requests?limit=1&limit=x&state=nope"), 400, "invalid_query")
        })
      )

      it.scoped(
        "GET /action-requests?state=evidence_overdue: an action whose evidence window passed is listed as such and counted in /metrics",
        () =>
          Effect.gen(function* () {
            const service = yield* startService()
            const secrets = {
              actionSigning: Redacted.make("as_" + "7".repeat(40)),
              completion: Redacted.make("cs_" + "8".repeat(40))
            }
            yield* connect("https://customer.example/accord", {
              workspaceId: service.workspaceId,
              connectionId: globalThis.crypto.randomUUID(),
              secrets
            })
            const created = yield* admin(
              service,
              "/action-requests",
              service.adminKey,
              "POST",
              intakeInput("acct_late")
            )
            assert.strictEqual(created.status, 202, created.text)
            const id = created.json.actionRequestId as string
            const action = (yield* admin(service, `/action-requests/${id}`)).json
            // The customer's signed success claim names entitlement_state; its event never comes.
            const body = encodeBody({
              type: "service.customer_action.completion",
              protocolVersion: 1,
              workspaceId: service.workspaceId,
              actionRequestId: id,
              providerIdempotencyKey: action.providerIdempotencyKey,
              providerReference: "trial_ext_1",
              completionId: `cmp_${id}`,
              completedAt: new Date().toISOString(),
              outcome: "succeeded",
              evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "entitlement_state" }
            })
            const headers = yield* Effect.flatMap(importSigningKeys(secrets), (keys) =>
              sign({ purpose: "completion", keys, body })
            ).pipe(Effect.provide(NodeCrypto.layer))
            const completed = yield* request(`${service.url}${completionPath}`, {
              method: "POST",
              headers: { ...headers },
              body: new TextDecoder().decode(body)
            })
            assert.strictEqual(completed.status, 200, completed.text)
            assert.strictEqual((yield* admin(service, `/action-requests/${id}`)).json.state, "pending")
            assert.deepStrictEqual((yield* allPages(service, "/action-requests?state=evidence_overdue")).flat(), [])
            // The evidence watcher looks once the window (24 hours) has passed.
            const watcher = yield* makeEvidenceWatcher({ owner: "lists-test" })
            const looks = yield* Effect.flatMap(watcher.lease(10), (leased) =>
              Effect.forEach(leased, watcher.look)
            ).pipe(Effect.withClock(clockAhead(evidenceSchedule.deadlineMillis + 60_000)))
            assert.deepStrictEqual(looks, ["ended"])
            const overdue = (yield* allPages(service, "/action-requests?state=evidence_overdue")).flat()
            assert.deepStrictEqual(
              overdue.map((row) => [row.actionRequestId, row.state]),
              [[id, "evidence_overdue"]]
            )
            assert.deepStrictEqual((yield* allPages(service, "/action-requests?state=pending")).flat(), [])
            const history = (yield* admin(service, `/action-requests/${id}`)).json.history as ReadonlyArray<Json>
            assert.strictEqual(history.at(-1)?.trigger, "evidence_wait_ended")
            const metrics = (yield* request(`${service.url}/metrics`)).text
            assert.match(metrics, /^accord_evidence_overdue_total\{type="entitlement_state"\} 1$/m)
          })
      )

      it.scoped("GET /feature-gates: newest first, by account and state, paged; developer:read keys may read", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const gate = (accountId: string, featureKey: string) => ({
            accountId,
            journeyId: globalThis.crypto.randomUUID(),
            versionId: fixtureCatalog.publishedVersionId,
            featureKey,
            startedAt: "2026-11-22T10:15:30.000Z"
          })
          const created: Array<Json> = []
          for (const [accountId, featureKey] of [
            ["acct_a", "exports.csv"],
            ["acct_b", "exports.csv"],
            ["acct_a", "seats"]
          ] as const) {
            const reply = yield* admin(service, "/feature-gates", service.adminKey, "POST", gate(accountId, featureKey))
            assert.strictEqual(reply.status, 201, reply.text)
            created.push(reply.json)
          }
          const reader = yield* issueKey(service, "developer:read")
          const pages = yield* allPages(service, "/feature-gates?limit=1", reader)
          assert.deepStrictEqual(
            pages.map((page) => page.length),
            [1, 1, 1]
          )
          assert.sameDeepMembers(pages.flat(), created)
          const first = yield* admin(service, "/feature-gates")
          assert.deepStrictEqual(
            first.json.data[0],
            (yield* admin(service, `/feature-gates/${first.json.data[0].id}`)).json
          )
          assert.sameDeepMembers(
            (yield* allPages(service, "/feature-gates?account_id=acct_a")).flat(),
            created.filter((g) => g.accountId === "acct_a")
          )
          assert.strictEqual((yield* allPages(service, "/feature-gates?state=checking")).flat().length, 3)
          assert.deepStrictEqual((yield* allPages(service, "/feature-gates?state=unlocked")).flat(), [])
          assertProblem(yield* admin(service, "/feature-gates?state=open"), 400, "invalid_query")
          yield* badQueries(service, "/feature-gates")
          assertProblem(yield* admin(service, "/feature-gates", yield* issueKey(service, "ingest")), 403, "forbidden")
        })
      )

      it.scoped("GET /accounts: the accounts with a profile, by id, with fact counts, paged", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const ingestKey = yield* issueKey(service, "ingest")
          const at = "2026-11-22T10:15:30.000Z"
          for (const [accountId, properties] of [
            ["acct_b", { plan: "pro", account_status: "trialing" }],
            ["acct_a", { plan: "free" }],
            ["acct_c", { plan: "team" }]
          ] as const) {
            const reply = yield* send(`${service.url}/api/events/ingest`, "POST", ingestKey, {
              event_name: "account_created",
              account_id: accountId,
              timestamp: at,
              event_id: `created_${accountId}`,
              properties
            })
            assert.strictEqual(reply.status, 202, reply.text)
          }
          const reader = yield* issueKey(service, "developer:read")
          const pages = yield* allPages(service, "/accounts?limit=2", reader)
          assert.deepStrictEqual(
            pages.map((page) => page.length),
            [2, 1]
          )
          const listed = pages.flat()
          assert.deepStrictEqual(
            listed.map((a) => a.accountId),
            ["acct_a", "acct_b", "acct_c"]
          )
          for (const account of listed) {
            assert.deepStrictEqual(Object.keys(account).sort(), [
              "accountId",
              "factCount",
              "firstObservedAt",
              "lastObservedAt"
            ])
            assert.isAtLeast(account.factCount, 1)
            assert.strictEqual(account.lastObservedAt, at)
            const profile = yield* admin(service, `/accounts/${account.accountId}`)
            assert.strictEqual(
              profile.json.facts.filter((fact: Json) => fact.sourceEventId !== null).length,
              account.factCount
            )
          }
          yield* badQueries(service, "/accounts")
          assertProblem(yield* admin(service, "/accounts", ingestKey), 403, "forbidden")
        })
      )

      it.scoped(
        "GET /approvals: a pending approval past its expiry is expired; a resolver no longer stored is its id",
        () =>
          Effect.gen(function* () {
            const service = yield* startService()
            const store = yield* ApprovalStore
            const now = yield* Clock.currentTimeMillis
            const stored = (approvalId: string, overrides: Partial<ApprovalRecord>): ApprovalRecord => ({
              approvalId,
              workspaceId: service.workspaceId,
              accountId: "acct_a",
              tokenHash: globalThis.crypto.randomUUID(),
              requester: { sessionId: globalThis.crypto.randomUUID(), subject: "user_viewer", role: "viewer" },
              request: { action: { key: "extend_trial_14", operation: { family: "extend_trial", extensionDays: 14 } } },
              state: "pending",
              revision: 0,
              expiresAt: now + 3_600_000,
              createdAt: now - 60_000,
              prepared: null,
              claimedAt: null,
              resolvedBy: null,
              resolvedAt: null,
              actionRequestId: null,
              ...overrides
            })
            const [expired, open, denied] = [1, 2, 3].map(() => globalThis.crypto.randomUUID())
            const gone = globalThis.crypto.randomUUID()
            assert.isTrue(yield* store.create(stored(expired!, { createdAt: now - 3_000, expiresAt: now - 1_000 })))
            assert.isTrue(yield* store.create(stored(open!, { createdAt: now - 2_000 })))
            assert.isTrue(
              yield* store.create(
                stored(denied!, { createdAt: now - 1_000, state: "denied", resolvedBy: gone, resolvedAt: now - 500 })
              )
            )
            const listed = (query: string) =>
              Effect.map(admin(service, `/approvals${query}`), (reply) => {
                assert.strictEqual(reply.status, 200, reply.text)
                return reply.json.data.map((a: Json) => [a.approvalId, a.status])
              })
            assert.deepStrictEqual(yield* listed(""), [
              [denied, "denied"],
              [open, "pending"],
              [expired, "expired"]
            ])
            assert.deepStrictEqual(yield* listed("?status=expired"), [[expired, "expired"]])
            assert.deepStrictEqual(yield* listed("?status=pending"), [[open, "pending"]])
            const all = yield* admin(service, "/approvals")
            assert.deepStrictEqual(all.json.data[0].resolvedBy, { sessionId: gone, subject: null, role: null })
            yield* badQueries(service, "/approvals")
            assertProblem(
              yield* admin(service, "/approvals", yield* issueKey(service, "developer:read")),
              403,
              "forbidden"
            )
          })
      )
    }
  )
})
