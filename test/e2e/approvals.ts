/**
 * Approvals over real HTTP: the Accord server (real composition) with the
 * customer kit on its own loopback port, both on real storage. Runtime sessions issued by the
 * admin API; the approval requested, prepared and resolved on the runtime routes; the action
 * dispatched to the kit, executed once, completed, verified; the actor-bound status route showing
 * `mayAdvance` only at the end. Plus which credential opens which route ("Authentication" 8), and
 * the problems bad input gets.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import type { ClaimedExecution } from "../../core/customer/ClaimedExecution.ts"
import { intakeInput, secrets } from "../core/connector/dispatch/support.ts"
import { fixtureSafeTerms, fixtureTrialRef } from "../support/deliveries.ts"
import { request } from "../support/http.ts"
import type { StorageVariant } from "../support/storage.ts"
import { admin, adminKey, bootService, connect, serveKit, type Service, waitFor } from "./support.ts"

const runtime = "/api/funnels/v1/runtime/actions"
const json = { "content-type": "application/json" }

export interface Env {
  readonly service: Service
  readonly runs: Map<string, number>
  /** What the customer was asked to execute, by provider idempotency key. */
  readonly executed: Map<string, ClaimedExecution>
}

/** The server and a kit whose executor counts its runs, connected; for the scope. */
export const setUp = (storage: StorageVariant) =>
  Effect.gen(function* () {
    const service = yield* bootService({ storage })
    const runs = new Map<string, number>()
    const executed = new Map<string, ClaimedExecution>()
    const kit = yield* serveKit(storage, service.base, {
      executor: {
        execute: async (claimed: ClaimedExecution) => {
          runs.set(claimed.providerIdempotencyKey, (runs.get(claimed.providerIdempotencyKey) ?? 0) + 1)
          executed.set(claimed.providerIdempotencyKey, claimed)
          return {
            outcome: "succeeded",
            providerReference: `trial_ext_${claimed.actionRequestId.slice(0, 8)}`,
            evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
          }
        },
        lookup: async () => undefined
      }
    })
    yield* connect(service, kit.url, secrets)
    return { service, runs, executed } satisfies Env
  })

export const issueSession = (service: Service, body: Record<string, unknown>) =>
  Effect.map(
    request(`${service.ws}/runtime-sessions`, { method: "POST", headers: admin, body: JSON.stringify(body) }),
    (reply) => {
      assert.strictEqual(reply.status, 201, reply.text)
      return reply.json as { sessionId: string; token: string; expiresAt: string; createdAt: string }
    }
  )

/** A viewer's session; the host's server names the account's trial when it issues it. */
export const viewerSession = (service: Service, accountId = "acct_42") =>
  issueSession(service, {
    accountId,
    subject: "user_viewer",
    role: "viewer",
    authorities: ["funnels.actions.request"],
    trialRef: fixtureTrialRef
  })

export const ownerSession = (service: Service, accountId = "acct_42") =>
  issueSession(service, {
    accountId,
    subject: "user_owner",
    role: "billing_owner",
    authorities: ["funnels.actions.execute"]
  })

/** What the runtime sends: the catalog action, the offer and the binding, nothing else. */
const catalogRequest = (accountId = "acct_42") => {
  const { action, binding } = intakeInput(accountId)
  return { action: { id: action.id, key: action.key }, binding }
}

const post = (service: Service, path: string, body: unknown, headers: Record<string, string> = json) =>
  request(`${service.base}${path}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

/** Request as the viewer, then collect the token as the admin (the pickup notifier). */
export const requestApproval = (service: Service, viewerToken: string, accountId = "acct_42") =>
  Effect.gen(function* () {
    const created = yield* post(service, `${runtime}/approvals`, catalogRequest(accountId), {
      ...json,
      authorization: `Bearer ${viewerToken}`
    })
    assert.strictEqual(created.status, 201, created.text)
    const approvalId = created.json.approvalId as string
    const collected = yield* request(`${service.ws}/approvals/${approvalId}/token`, { method: "POST", headers: admin })
    assert.strictEqual(collected.status, 200, collected.text)
    return { approvalId, approvalToken: collected.json.approvalToken as string }
  })

export const prepareApproval = (
  service: Service,
  approval: { approvalId: string; approvalToken: string },
  runtimeToken: string
) => post(service, `${runtime}/approvals/prepare`, { ...approval, runtimeToken })

export const resolveApproval = (service: Service, body: Record<string, unknown>) =>
  post(service, `${runtime}/approvals/resolve`, body)

/** The resolve body that approves `approval` as the owner's session reviewed it in `prepared`. */
export const approveBody = (
  approval: { approvalId: string; approvalToken: string },
  runtimeToken: string,
  prepared: { readonly json: { readonly revision: unknown; readonly projectionHash: unknown } }
) => ({
  ...approval,
  runtimeToken,
  decision: "approve",
  revision: prepared.json.revision,
  reviewedProjectionHash: prepared.json.projectionHash
})

const status = (service: Service, id: string, token: string) =>
  request(`${service.base}${runtime}/status/${id}`, { headers: { authorization: `Bearer ${token}` } })

export const suite = (storage: StorageVariant): void => {
  describe.skipIf(!storage.available)(`approvals end to end (${storage.name})`, () => {
    it.live(
      "session -> request -> prepare -> approve -> dispatched, executed once, completed, verified; mayAdvance only at the end",
      () =>
        Effect.gen(function* () {
          const { executed, runs, service } = yield* setUp(storage)
          const viewer = yield* viewerSession(service)
          const owner = yield* ownerSession(service)
          const approval = yield* requestApproval(service, viewer.token)
          const prepared = yield* prepareApproval(service, approval, owner.token)
          assert.strictEqual(prepared.status, 200, prepared.text)
          assert.hasAllKeys(prepared.json, ["reviewProjection", "revision", "reviewValidUntil", "projectionHash"])
          assert.deepStrictEqual(prepared.json.reviewProjection.operation, {
            family: "extend_trial",
            extensionDays: 14,
            target: "subscription sub_1 (version 3)"
          })
          assert.notInclude(prepared.text, approval.approvalToken)
          const resolved = yield* resolveApproval(service, approveBody(approval, owner.token, prepared))
          assert.strictEqual(resolved.status, 200, resolved.text)
          assert.strictEqual(resolved.json.state, "approved")
          const id = resolved.json.actionRequestId as string

          // Until verified, the runtime may not advance.
          const early = yield* status(service, id, owner.token)
          assert.strictEqual(early.status, 200, early.text)
          assert.isFalse(early.json.mayAdvance)
          const seen = new Set<string>([early.json.state])
          const final = yield* waitFor(
            Effect.map(status(service, id, owner.token), (r) => {
              seen.add(r.json.state)
              if (r.json.state !== "verified") assert.isFalse(r.json.mayAdvance, JSON.stringify(r.json))
              return r.json
            }),
            (s) => s.state === "verified",
            `${id} to be verified`
          )
          assert.deepStrictEqual(final, { actionRequestId: id, state: "verified", mayAdvance: true })
          assert.strictEqual(runs.size, 1)
          for (const count of runs.values()) assert.strictEqual(count, 1)
          // The customer executed what the owner reviewed: the catalog's days and terms, the session's trial.
          const [claimed] = [...executed.values()]
          assert.deepStrictEqual(claimed!.action.operation, {
            family: "extend_trial",
            extensionDays: 14,
            trialRef: fixtureTrialRef
          })
          assert.deepStrictEqual(claimed!.action.safeTerms, fixtureSafeTerms)
          assert.deepStrictEqual(claimed!.actor, {
            authority: "funnels.actions.execute",
            roleKey: "billing_owner",
            subjectId: "user_owner"
          })

          // The operator's view: the approval is the action's first entry (approval_recorded evidence).
          const history = (yield* request(`${service.ws}/action-requests/${id}`, { headers: admin })).json.history
          assert.strictEqual(history[0].trigger, "approval_recorded")
          assert.strictEqual(history.at(-1).toState, "verified")
          // Another actor (the requester) and another account see nothing, as for an unknown id.
          const unknown = yield* status(service, globalThis.crypto.randomUUID(), owner.token)
          const asViewer = yield* status(service, id, viewer.token)
          const stranger = yield* status(service, id, (yield* ownerSession(service, "acct_other")).token)
          assert.strictEqual(unknown.status, 404)
          assert.strictEqual(asViewer.status, 404)
          assert.strictEqual(stranger.status, 404)
          assert.strictEqual(asViewer.text, unknown.text)
          assert.strictEqual(stranger.text, unknown.text)
        }).pipe(Effect.scoped),
      90_000
    )
  })
}

/** Route-level behaviour over real HTTP, on one server for the file. */
export const routeSuite = (storage: StorageVariant): void => {
  describe.skipIf(!storage.available)(`runtime sessions and approval routes (${storage.name})`, () => {
    const scope = Effect.runSync(Scope.make())
    let env: Env
    beforeAll(async () => {
      env = await Effect.runPromise(Scope.extend(setUp(storage), scope))
    }, 60_000)
    afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

    it.live("POST /runtime-sessions: 201 with the token once, 15 minutes by default; bad bodies are 400", () =>
      Effect.gen(function* () {
        const issued = yield* ownerSession(env.service)
        assert.match(issued.token, /^acc_rts_[A-Za-z0-9_-]{43}$/)
        assert.strictEqual(Date.parse(issued.expiresAt) - Date.parse(issued.createdAt), 15 * 60_000)
        for (const body of [
          {},
          { accountId: "acct_42", subject: "u", role: "r", authorities: [] },
          { accountId: "acct_42", subject: "u", role: "r", authorities: ["funnels.actions.admin"] },
          {
            accountId: "acct_42",
            subject: "u",
            role: "r",
            authorities: ["funnels.actions.execute", "funnels.actions.execute"]
          },
          {
            accountId: "acct_42",
            subject: "u",
            role: "r",
            authorities: ["funnels.actions.execute"],
            expiresInSeconds: 12 * 3600 + 1
          },
          { accountId: "acct_42", subject: "u", role: "r", authorities: ["funnels.actions.execute"], extra: 1 }
        ]) {
          const reply = yield* request(`${env.service.ws}/runtime-sessions`, {
            method: "POST",
            headers: admin,
            body: JSON.stringify(body)
          })
          assert.strictEqual(reply.status, 400, JSON.stringify(body))
          assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
        }
      })
    )

    it.live(
      "DELETE /runtime-sessions/{id} revokes at once: the token is refused as revoked; a second delete is 404",
      () =>
        Effect.gen(function* () {
          const owner = yield* ownerSession(env.service)
          const approval = yield* requestApproval(env.service, (yield* viewerSession(env.service)).token)
          const del = () =>
            request(`${env.service.ws}/runtime-sessions/${owner.sessionId}`, { method: "DELETE", headers: admin })
          assert.strictEqual((yield* del()).status, 204)
          assert.strictEqual((yield* del()).status, 404)
          const refused = yield* prepareApproval(env.service, approval, owner.token)
          assert.strictEqual(refused.status, 401)
          assert.strictEqual(refused.json.code, "runtime_session_revoked")
        })
    )

    it.live(
      "Authentication 8: admin and ingest keys open no runtime route; runtime tokens open no admin or ingest route",
      () =>
        Effect.gen(function* () {
          const ingest = yield* request(`${env.service.ws}/api-keys`, {
            method: "POST",
            headers: admin,
            body: JSON.stringify({ scope: "ingest" })
          })
          const ingestKey = ingest.json.secret as string
          const owner = yield* ownerSession(env.service)
          const viewer = yield* viewerSession(env.service)
          const approval = yield* requestApproval(env.service, viewer.token)
          for (const key of [adminKey, ingestKey]) {
            const asked = yield* post(env.service, `${runtime}/approvals`, catalogRequest(), {
              ...json,
              authorization: `Bearer ${key}`
            })
            assert.strictEqual(asked.status, 401, asked.text)
            assert.strictEqual(asked.json.code, "runtime_session_invalid")
            const prepared = yield* prepareApproval(env.service, approval, key)
            assert.strictEqual(prepared.status, 401)
            assert.strictEqual(prepared.json.code, "runtime_session_invalid")
            const seen = yield* status(env.service, globalThis.crypto.randomUUID(), key)
            assert.strictEqual(seen.status, 401)
          }
          for (const token of [owner.token, viewer.token]) {
            const headers = { ...json, authorization: `Bearer ${token}` }
            assert.strictEqual(
              (yield* request(`${env.service.ws}/action-requests`, {
                method: "POST",
                headers,
                body: JSON.stringify(intakeInput())
              })).status,
              401
            )
            assert.strictEqual(
              (yield* request(`${env.service.ws}/runtime-sessions`, { method: "POST", headers, body: "{}" })).status,
              401
            )
            assert.strictEqual(
              (yield* request(`${env.service.ws}/approvals/${approval.approvalId}/token`, { method: "POST", headers }))
                .status,
              401
            )
            assert.strictEqual((yield* request(`${env.service.ws}/connector`, { headers })).status, 401)
            const ingested = yield* request(`${env.service.base}/api/events/ingest`, {
              method: "POST",
              headers,
              body: JSON.stringify({ events: [] })
            })
            assert.strictEqual(ingested.status, 401)
          }
          // A developer:read key cannot issue sessions either.
          const reader = yield* request(`${env.service.ws}/api-keys`, {
            method: "POST",
            headers: admin,
            body: JSON.stringify({ scope: "developer:read" })
          })
          const asReader = yield* request(`${env.service.ws}/runtime-sessions`, {
            method: "POST",
            headers: { ...json, authorization: `Bearer ${reader.json.secret}` },
            body: JSON.stringify({ accountId: "a", subject: "s", role: "r", authorities: ["funnels.actions.execute"] })
          })
          assert.strictEqual(asReader.status, 403)
        })
    )

    it.live("the approval token is collected once; unknown approvals reveal nothing", () =>
      Effect.gen(function* () {
        const approval = yield* requestApproval(env.service, (yield* viewerSession(env.service)).token)
        const again = yield* request(`${env.service.ws}/approvals/${approval.approvalId}/token`, {
          method: "POST",
          headers: admin
        })
        const unknown = yield* request(`${env.service.ws}/approvals/${globalThis.crypto.randomUUID()}/token`, {
          method: "POST",
          headers: admin
        })
        assert.strictEqual(again.status, 404)
        assert.strictEqual(again.text, unknown.text)
      })
    )

    it.live(
      "bad input: malformed, oversized, wrong-length hash, unknown id, wrong token — 4xx problems that reveal nothing, nothing authorized",
      () =>
        Effect.gen(function* () {
          const owner = yield* ownerSession(env.service)
          const approval = yield* requestApproval(env.service, (yield* viewerSession(env.service)).token)
          const prepared = yield* prepareApproval(env.service, approval, owner.token)
          const approve = approveBody(approval, owner.token, prepared)
          const cases: ReadonlyArray<readonly [string, unknown, number, string]> = [
            ["not JSON", "{", 400, "malformed_json"],
            ["oversized", JSON.stringify({ ...approve, pad: "x".repeat(20_000) }), 413, "content_too_large"],
            ["short hash", { ...approve, reviewedProjectionHash: "ab".repeat(16) }, 400, "invalid_body"],
            ["approve without a hash", { ...approve, reviewedProjectionHash: undefined }, 400, "invalid_body"],
            ["deny with a hash", { ...approve, decision: "deny" }, 400, "invalid_body"],
            ["malformed approval id", { ...approve, approvalId: "apr_1" }, 400, "invalid_body"],
            ["malformed runtime token", { ...approve, runtimeToken: "x" }, 401, "runtime_session_invalid"],
            ["unknown approval", { ...approve, approvalId: globalThis.crypto.randomUUID() }, 404, "approval_not_found"],
            [
              "wrong approval token",
              { ...approve, approvalToken: `acc_apt_${"B".repeat(43)}` },
              404,
              "approval_not_found"
            ],
            ["malformed approval token", { ...approve, approvalToken: "nope" }, 404, "approval_not_found"]
          ]
          const notFound: Array<string> = []
          for (const [name, body, code, problem] of cases) {
            const reply = yield* resolveApproval(env.service, body as Record<string, unknown>)
            assert.strictEqual(reply.status, code, `${name}: ${reply.text}`)
            assert.strictEqual(reply.json.code, problem, name)
            assert.notInclude(reply.text, approval.approvalToken, name)
            assert.notInclude(reply.text, owner.token, name)
            if (code === 404) notFound.push(reply.text)
          }
          assert.strictEqual(new Set(notFound).size, 1, "unknown id and wrong token answer alike")
          const text = yield* post(env.service, `${runtime}/approvals/resolve`, JSON.stringify(approve), {
            "content-type": "text/plain"
          })
          assert.strictEqual(text.status, 415)
          const wrongMethod = yield* request(`${env.service.base}${runtime}/approvals/prepare`)
          assert.strictEqual(wrongMethod.status, 405)
          // Nothing was authorized: the approval still resolves, once.
          const resolved = yield* resolveApproval(env.service, approve)
          assert.strictEqual(resolved.status, 200, resolved.text)
          const second = yield* resolveApproval(env.service, approve)
          assert.strictEqual(second.status, 409)
          assert.strictEqual(second.json.code, "approval_already_resolved")
        })
    )

    it.live(
      "the 365-day attack: a viewer's request carrying an operation, another customer's trial and its own confirmation is 400, nothing stored",
      () =>
        Effect.gen(function* () {
          const viewer = yield* viewerSession(env.service)
          const headers = { ...json, authorization: `Bearer ${viewer.token}` }
          const { action, binding } = intakeInput()
          const attack = {
            action: {
              ...action,
              operation: {
                family: "extend_trial",
                extensionDays: 365,
                trialRef: { entityKey: "sub_OTHER_CUSTOMER", entityKind: "subscription", version: 1 }
              },
              safeTerms: { label: "Extend trial", confirmation: "Extend your trial by 1 day?" }
            },
            binding
          }
          const attacks: ReadonlyArray<readonly [string, unknown]> = [
            ["the whole forged action", attack],
            ["an operation alone", { action: { id: action.id, operation: attack.action.operation }, binding }],
            ["safe terms alone", { action: { id: action.id, safeTerms: attack.action.safeTerms }, binding }],
            ["a trialRef beside the action", { ...catalogRequest(), trialRef: attack.action.operation.trialRef }],
            ["another account", { ...catalogRequest(), accountId: "acct_other" }]
          ]
          for (const [name, body] of attacks) {
            const reply = yield* post(env.service, `${runtime}/approvals`, body, headers)
            assert.strictEqual(reply.status, 400, `${name}: ${reply.text}`)
            assert.strictEqual(reply.json.code, "invalid_body", name)
            assert.notInclude(reply.text, "sub_OTHER_CUSTOMER", name)
          }
          // What the viewer may ask for is the catalog's action, and the owner reviews exactly that.
          const approval = yield* requestApproval(env.service, viewer.token)
          const prepared = yield* prepareApproval(env.service, approval, (yield* ownerSession(env.service)).token)
          assert.strictEqual(prepared.status, 200, prepared.text)
          assert.deepStrictEqual(prepared.json.reviewProjection.action, { key: action.key, ...fixtureSafeTerms })
          assert.deepStrictEqual(prepared.json.reviewProjection.operation, {
            family: "extend_trial",
            extensionDays: 14,
            target: "subscription sub_1 (version 3)"
          })
        })
    )

    it.live("admin intake may send an operation only with the catalog's fixed parameters (422 naming the field)", () =>
      Effect.gen(function* () {
        const base = intakeInput()
        const cases: ReadonlyArray<readonly [unknown, string, string]> = [
          [
            { ...base.action, operation: { ...base.action.operation, extensionDays: 365 } },
            "operation_parameter_mismatch",
            "action.operation.extensionDays"
          ],
          [
            { ...base.action, safeTerms: { ...base.action.safeTerms, confirmation: "Extend your trial by 1 day?" } },
            "safe_terms_mismatch",
            "action.safeTerms.confirmation"
          ]
        ]
        for (const [action, code, path] of cases) {
          const reply = yield* request(`${env.service.ws}/action-requests`, {
            method: "POST",
            headers: { ...admin, "idempotency-key": globalThis.crypto.randomUUID() },
            body: JSON.stringify({ ...base, action })
          })
          assert.strictEqual(reply.status, 422, reply.text)
          assert.strictEqual(reply.json.code, code)
          assert.strictEqual(reply.json.errors[0].path, path)
        }
      })
    )

    it.live("separation of duties over HTTP: self-approval 403, a revoked requester's approval 410 cancelled", () =>
      Effect.gen(function* () {
        const both = yield* issueSession(env.service, {
          accountId: "acct_42",
          subject: "user_both",
          role: "billing_owner",
          authorities: ["funnels.actions.request", "funnels.actions.execute"],
          trialRef: fixtureTrialRef
        })
        const own = yield* requestApproval(env.service, both.token)
        const self = yield* prepareApproval(env.service, own, both.token)
        assert.strictEqual(self.status, 403, self.text)
        assert.strictEqual(self.json.code, "approval_self_approval")

        const viewer = yield* viewerSession(env.service)
        const approval = yield* requestApproval(env.service, viewer.token)
        const revoked = yield* request(`${env.service.ws}/runtime-sessions/${viewer.sessionId}`, {
          method: "DELETE",
          headers: admin
        })
        assert.strictEqual(revoked.status, 204)
        const cancelled = yield* prepareApproval(env.service, approval, (yield* ownerSession(env.service)).token)
        assert.strictEqual(cancelled.status, 410, cancelled.text)
        assert.strictEqual(cancelled.json.code, "approval_cancelled")
      })
    )

    it.live(
      "GET /approvals and GET /runtime-sessions: who asked, who resolved, the action created; by status, paged; admin keys only",
      () =>
        Effect.gen(function* () {
          // a server of its own: the lists are the whole workspace's
          const { service } = yield* setUp(storage)
          const viewer = yield* viewerSession(service)
          const owner = yield* ownerSession(service)
          const approved = yield* requestApproval(service, viewer.token)
          const prepared = yield* prepareApproval(service, approved, owner.token)
          const resolved = yield* resolveApproval(service, approveBody(approved, owner.token, prepared))
          assert.strictEqual(resolved.status, 200, resolved.text)
          const denied = yield* requestApproval(service, viewer.token)
          const deny = yield* resolveApproval(service, { ...denied, runtimeToken: owner.token, decision: "deny" })
          assert.strictEqual(deny.status, 200, deny.text)
          const pending = yield* requestApproval(service, viewer.token)
          const leaving = yield* viewerSession(service)
          const cancelled = yield* requestApproval(service, leaving.token)
          const revoke = yield* request(`${service.ws}/runtime-sessions/${leaving.sessionId}`, {
            method: "DELETE",
            headers: admin
          })
          assert.strictEqual(revoke.status, 204)

          const list = (query: string) => request(`${service.ws}/approvals${query}`, { headers: admin })
          const all = yield* list("")
          assert.strictEqual(all.status, 200, all.text)
          assert.deepStrictEqual(
            all.json.data.map((a: { approvalId: string; status: string }) => [a.approvalId, a.status]),
            [
              [cancelled.approvalId, "cancelled"],
              [pending.approvalId, "pending"],
              [denied.approvalId, "denied"],
              [approved.approvalId, "approved"]
            ]
          )
          const [, , deniedView, approvedView] = all.json.data
          assert.deepStrictEqual(approvedView, {
            approvalId: approved.approvalId,
            accountId: "acct_42",
            status: "approved",
            actionKey: "extend_trial_14",
            family: "extend_trial",
            requestedBy: { sessionId: viewer.sessionId, subject: "user_viewer", role: "viewer" },
            createdAt: approvedView.createdAt,
            expiresAt: approvedView.expiresAt,
            resolvedBy: { sessionId: owner.sessionId, subject: "user_owner", role: "billing_owner" },
            resolvedAt: approvedView.resolvedAt,
            actionRequestId: resolved.json.actionRequestId
          })
          assert.strictEqual(deniedView.resolvedBy.sessionId, owner.sessionId)
          assert.isNull(deniedView.actionRequestId)
          // no token of any kind is listed
          for (const secret of [approved.approvalToken, viewer.token, owner.token]) assert.notInclude(all.text, secret)

          const ids = (reply: { json: any }) => reply.json.data.map((a: { approvalId: string }) => a.approvalId)
          assert.deepStrictEqual(ids(yield* list("?status=approved")), [approved.approvalId])
          assert.deepStrictEqual(ids(yield* list("?status=pending")), [pending.approvalId])
          // none has passed its expiry yet (a day by default)
          assert.deepStrictEqual(ids(yield* list("?status=expired")), [])
          const first = yield* list("?limit=3")
          assert.deepStrictEqual(ids(first), ids(all).slice(0, 3))
          const rest = yield* list(`?limit=3&cursor=${encodeURIComponent(first.json.nextCursor)}`)
          assert.deepStrictEqual(ids(rest), ids(all).slice(3))
          assert.isNull(rest.json.nextCursor)
          const refused = yield* list("?status=stale")
          assert.strictEqual(refused.status, 400)
          assert.strictEqual(refused.json.code, "invalid_query")
          assert.strictEqual(refused.json.errors[0].path, "status")
          assert.strictEqual((yield* request(`${service.ws}/approvals`)).status, 401)

          const sessions = yield* request(`${service.ws}/runtime-sessions`, { headers: admin })
          assert.strictEqual(sessions.status, 200, sessions.text)
          // sessions issued in one millisecond are ordered by id: compared as a set, then the order
          const listed: Array<{ sessionId: string; status: string; createdAt: string; revokedAt: string | null }> =
            sessions.json.data
          assert.deepStrictEqual(
            listed.map((s) => `${s.sessionId} ${s.status}`).sort(),
            [`${leaving.sessionId} revoked`, `${owner.sessionId} live`, `${viewer.sessionId} live`].sort()
          )
          const times = listed.map((s) => Date.parse(s.createdAt))
          assert.deepStrictEqual(
            times,
            [...times].sort((a, b) => b - a)
          )
          for (const secret of [viewer.token, owner.token, leaving.token]) assert.notInclude(sessions.text, secret)
          assert.isNotNull(listed.find((s) => s.sessionId === leaving.sessionId)!.revokedAt)
          const developer = yield* request(`${service.ws}/api-keys`, {
            method: "POST",
            headers: admin,
            body: JSON.stringify({ scope: "developer:read" })
          })
          const asDeveloper = yield* request(`${service.ws}/runtime-sessions`, {
            headers: { authorization: `Bearer ${developer.json.secret}` }
          })
          assert.strictEqual(asDeveloper.status, 403, asDeveloper.text)
        }).pipe(Effect.scoped),
      90_000
    )

    it.live("deny: 200 denied, nothing dispatched; the approval resolves no more", () =>
      Effect.gen(function* () {
        const owner = yield* ownerSession(env.service)
        const approval = yield* requestApproval(env.service, (yield* viewerSession(env.service)).token)
        const denied = yield* resolveApproval(env.service, { ...approval, runtimeToken: owner.token, decision: "deny" })
        assert.strictEqual(denied.status, 200, denied.text)
        assert.deepStrictEqual(denied.json, { approvalId: approval.approvalId, state: "denied" })
        const prepared = yield* prepareApproval(env.service, approval, owner.token)
        assert.strictEqual(prepared.status, 409)
        assert.strictEqual(prepared.json.code, "approval_already_resolved")
      })
    )

    it.live("a wrong-account owner is 403; a viewer session cannot prepare (403 runtime_authority_missing)", () =>
      Effect.gen(function* () {
        const viewer = yield* viewerSession(env.service)
        const approval = yield* requestApproval(env.service, viewer.token)
        const stranger = yield* prepareApproval(
          env.service,
          approval,
          (yield* ownerSession(env.service, "acct_other")).token
        )
        assert.strictEqual(stranger.status, 403)
        assert.strictEqual(stranger.json.code, "approval_account_mismatch")
        const asViewer = yield* prepareApproval(env.service, approval, viewer.token)
        assert.strictEqual(asViewer.status, 403)
        assert.strictEqual(asViewer.json.code, "runtime_authority_missing")
      })
    )
  })
}
