/**
 * Erasure, suppression and export over real HTTP, on real storage: an account's events (a usage
 * rollup among them), profile facts, login, user record, feature gate, runtime session, approval
 * and a settled action are exported as NDJSON (each kind, never a secret), then erased; afterwards
 * every table of the database is searched for the account's id and its user's name and e-mail and
 * holds them nowhere but in the suppression, the kept action answers with its id and state, and a
 * later event of the account is answered `suppressed` and not stored. A user is erased and
 * suppressed the same way; an account with an action in flight is refused.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { ActionLedger } from "../../core/ports/ActionLedger.ts"
import { ApprovalStore } from "../../core/ports/ApprovalStore.ts"
import { FeatureGateStore } from "../../core/ports/FeatureGateStore.ts"
import { request } from "../support/http.ts"
import type { StorageVariant } from "../support/storage.ts"
import { admin, bootService, type Service } from "./support.ts"

const hour = 3_600_000

interface Env {
  readonly service: Service
  readonly ingestKey: string
  readonly sql: SqlClient.SqlClient
  readonly storage: Context.Context<never>
}

const ingest = (env: Env, body: Record<string, unknown>) =>
  request(`${env.service.base}/api/events/ingest`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.ingestKey}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

/** Every base table of the database's schema, and which of its rows' text holds `needle`. */
const rowsHolding = (sql: SqlClient.SqlClient, needle: string) =>
  Effect.gen(function* () {
    const tables = yield* sql<{ readonly table_name: string }>`SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`
    const found: Record<string, number> = {}
    for (const { table_name } of tables) {
      const [row] = yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM ${sql(table_name)} AS t
        WHERE strpos(t::text, ${needle}) > 0`
      if (Number(row!.n) > 0) found[table_name] = Number(row!.n)
    }
    return { tables: tables.map((t) => t.table_name), found }
  })

const settledAction = (workspaceId: string, accountId: string, subjectId: string, state: string) => ({
  actionRequestId: globalThis.crypto.randomUUID(),
  workspaceId,
  accountId,
  connectionId: globalThis.crypto.randomUUID(),
  revision: 1,
  providerIdempotencyKey: globalThis.crypto.randomUUID(),
  state,
  request: {
    accountId,
    action: { id: globalThis.crypto.randomUUID(), key: "extend_trial", operation: { family: "extend_trial", days: 7 } },
    actor: { authority: "billing_owner", roleKey: "owner", subjectId },
    binding: { journeyId: globalThis.crypto.randomUUID() }
  },
  acknowledgement: { state: "accepted" },
  sealedContinuation: "sealed-continuation-secret",
  createdAt: Date.now() - hour
})

/** The erasure suite on one SQL storage variant (every table is searched with SQL). */
export const suite = (storage: StorageVariant) =>
  describe.skipIf(!storage.available)(`erasure, suppression and export (${storage.name})`, () => {
    const scope = Effect.runSync(Scope.make())
    let env: Env
    beforeAll(async () => {
      env = await Effect.runPromise(
        Effect.gen(function* () {
          const context = yield* Layer.build(storage.sqlLayer!())
          const service = yield* bootService({
            storage: { ...storage, layer: () => Layer.succeedContext(context) }
          })
          const key = yield* request(`${service.ws}/api-keys`, {
            method: "POST",
            headers: admin,
            body: JSON.stringify({ scope: "ingest" })
          })
          assert.strictEqual(key.status, 201, key.text)
          return {
            service,
            ingestKey: (key.json as { secret: string }).secret,
            sql: Context.get(context, SqlClient.SqlClient),
            storage: context as Context.Context<never>
          }
        }).pipe(Scope.extend(scope))
      )
    }, 120_000)
    afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

    it.live(
      "an account is exported whole, then erased from every table, and its later events are suppressed",
      () =>
        Effect.gen(function* () {
          const accountId = `acct_erase_${globalThis.crypto.randomUUID()}`
          const userId = `user_erase_${globalThis.crypto.randomUUID()}`
          const name = `Ada ${globalThis.crypto.randomUUID()}`
          const email = `ada.${globalThis.crypto.randomUUID()}@example.test`
          const workspaceId = env.service.ws.split("/").at(-1)!
          const now = Date.now()
          const at = (ago: number) => new Date(now - ago).toISOString()
          const dayStart = Math.floor(now / (24 * hour)) * 24 * hour
          const accepted = [
            {
              event_name: "account_activated",
              account_id: accountId,
              event_id: `account_activated:${accountId}`,
              timestamp: at(3 * hour),
              user_id: userId,
              user: { name, email },
              properties: { plan: "pro", seat_count: 3 }
            },
            {
              event_name: "user_logged_in",
              semantic_type: "login",
              account_id: accountId,
              event_id: `user_logged_in:${accountId}:1`,
              timestamp: at(2 * hour),
              user_id: userId
            },
            {
              event_name: "usage_rollup_recorded",
              semantic_type: "usage",
              event_kind: "product_action",
              account_id: accountId,
              event_id: `usage_rollup_recorded:${accountId}:day`,
              timestamp: at(hour),
              value: 1250,
              properties: {
                product_key: "api",
                metric_key: "requests",
                unit: "request",
                usage_start: new Date(dayStart - 24 * hour).toISOString(),
                usage_end: new Date(dayStart).toISOString(),
                aggregation_grain: "day",
                source_system: "billing_worker"
              }
            }
          ]
          for (const body of accepted) {
            const reply = yield* ingest(env, body)
            assert.strictEqual(reply.status, 202, reply.text)
          }
          const other = yield* ingest(env, {
            event_name: "account_activated",
            account_id: `acct_kept_${globalThis.crypto.randomUUID()}`,
            timestamp: at(hour),
            properties: { plan: "pro" }
          })
          assert.strictEqual(other.status, 202, other.text)
          const session = yield* request(`${env.service.ws}/runtime-sessions`, {
            method: "POST",
            headers: admin,
            body: JSON.stringify({
              accountId,
              subject: userId,
              role: "billing_owner",
              authorities: ["funnels.actions.execute"]
            })
          })
          assert.strictEqual(session.status, 201, session.text)
          const action = settledAction(workspaceId, accountId, userId, "verified")
          yield* Effect.gen(function* () {
            yield* (yield* FeatureGateStore).create({
              id: globalThis.crypto.randomUUID(),
              workspaceId,
              accountId,
              journeyId: globalThis.crypto.randomUUID(),
              versionId: globalThis.crypto.randomUUID(),
              featureKey: "exports.csv",
              startedAt: now - hour,
              createdAt: now - hour
            })
            yield* (yield* ApprovalStore).create({
              approvalId: globalThis.crypto.randomUUID(),
              workspaceId,
              accountId,
              tokenHash: "0".repeat(64),
              requester: { sessionId: globalThis.crypto.randomUUID(), subject: userId, role: "viewer" },
              request: { accountId },
              state: "pending",
              revision: 0,
              expiresAt: now + hour,
              createdAt: now - hour,
              prepared: null,
              claimedAt: null,
              resolvedBy: null,
              resolvedAt: null,
              actionRequestId: null
            })
            yield* (yield* ActionLedger).create({
              record: action,
              history: { at: now - hour, trigger: "intake", detail: {} }
            })
          }).pipe(Effect.provide(env.storage as Context.Context<FeatureGateStore | ApprovalStore | ActionLedger>))

          // The export: streamed NDJSON, every kind, never a secret.
          const exported = yield* Effect.promise(() =>
            fetch(`${env.service.ws}/accounts/${accountId}/export`, { headers: admin })
          )
          assert.strictEqual(exported.status, 200)
          assert.strictEqual(exported.headers.get("content-type"), "application/x-ndjson")
          assert.strictEqual(exported.headers.get("transfer-encoding"), "chunked")
          const text = yield* Effect.promise(() => exported.text())
          const lines = text
            .trimEnd()
            .split("\n")
            .map((line) => JSON.parse(line) as { kind: string; [key: string]: unknown })
          const kinds = new Map<string, number>()
          for (const line of lines) kinds.set(line.kind, (kinds.get(line.kind) ?? 0) + 1)
          assert.deepStrictEqual(Object.fromEntries(kinds), {
            profile: 1,
            event: 3,
            login: 1,
            user: 1,
            feature_gate: 1,
            action: 1
          })
          assert.deepStrictEqual(
            lines.find((line) => line.kind === "user"),
            { kind: "user", userId, name, email }
          )
          const exportedAction = lines.find((line) => line.kind === "action")!
          assert.strictEqual(exportedAction["actionRequestId"], action.actionRequestId)
          assert.notProperty(exportedAction, "sealedContinuation")
          assert.notProperty(exportedAction, "acknowledgement")
          for (const secret of ["sealed-continuation-secret", env.ingestKey, "secret_hash", "token_hash"]) {
            assert.notInclude(text, secret)
          }

          // The erasure: counts of what was removed; a second one answers the same record.
          const erased = yield* request(`${env.service.ws}/accounts/${accountId}`, { method: "DELETE", headers: admin })
          assert.strictEqual(erased.status, 200, erased.text)
          const record = erased.json as { createdAt: string; createdBy: string; removed: Record<string, number> }
          const facts = (lines.find((line) => line.kind === "profile")!["facts"] as Array<unknown>).length
          assert.isAtLeast(facts, 2)
          assert.deepStrictEqual(record.removed, {
            events: 3,
            profileFacts: facts,
            users: 1,
            logins: 1,
            featureGates: 1,
            runtimeSessions: 1,
            approvals: 1,
            actionsRedacted: 1
          })
          assert.match(record.createdBy, /^api_key:/)
          const again = yield* request(`${env.service.ws}/accounts/${accountId}`, { method: "DELETE", headers: admin })
          assert.strictEqual(again.status, 200, again.text)
          const second = again.json as typeof record
          assert.strictEqual(second.createdAt, record.createdAt)
          assert.strictEqual(second.createdBy, record.createdBy)
          assert.deepStrictEqual(second.removed, record.removed)

          // Every table: the account's id only in its suppression; its user's name and e-mail nowhere.
          const { found, tables } = yield* rowsHolding(env.sql, accountId)
          assert.isAbove(tables.length, 20)
          assert.deepStrictEqual(found, { accord_suppressions: 1 })
          for (const personal of [name, email, userId]) {
            assert.deepStrictEqual((yield* rowsHolding(env.sql, personal)).found, {})
          }

          // The connector's audit trail: the action keeps its id and state.
          const kept = yield* request(`${env.service.ws}/action-requests/${action.actionRequestId}`, {
            headers: admin
          })
          assert.strictEqual(kept.status, 200, kept.text)
          assert.strictEqual((kept.json as { state: string }).state, "verified")

          // A later event of the account is suppressed, and stores nothing.
          const later = yield* ingest(env, {
            event_name: "account_activated",
            account_id: accountId,
            event_id: `account_activated:${accountId}:again`,
            timestamp: at(0),
            properties: { plan: "team" }
          })
          assert.strictEqual(later.status, 202, later.text)
          assert.deepStrictEqual(later.json, {
            status: "suppressed",
            suppressed: true,
            duplicate: false,
            event_id: `account_activated:${accountId}:again`,
            account_id: accountId
          })
          assert.deepStrictEqual((yield* rowsHolding(env.sql, accountId)).found, { accord_suppressions: 1 })

          // A bulk import does not bring it back either: its line is counted refused `suppressed`.
          const imported = yield* request(`${env.service.base}/api/events/imports/after-erasure`, {
            method: "PUT",
            headers: { authorization: `Bearer ${env.ingestKey}`, "content-type": "application/x-ndjson" },
            body: `${JSON.stringify({
              event_name: "account_activated",
              account_id: accountId,
              event_id: `account_activated:${accountId}:imported`,
              timestamp: at(0),
              properties: { plan: "team" }
            })}\n`
          })
          assert.strictEqual(imported.status, 202, imported.text)
          const job = imported.json as {
            accepted: number
            refused: number
            errors: ReadonlyArray<{ line: number; code: string }>
          }
          assert.strictEqual(job.accepted, 0, imported.text)
          assert.strictEqual(job.refused, 1, imported.text)
          assert.deepStrictEqual(
            job.errors.map((e) => e.code),
            ["suppressed"]
          )
          assert.deepStrictEqual((yield* rowsHolding(env.sql, accountId)).found, { accord_suppressions: 1 })

          const listed = yield* request(`${env.service.ws}/suppressions`, { headers: admin })
          assert.strictEqual(listed.status, 200, listed.text)
          const subjects = (listed.json as { data: Array<{ subject: { kind: string; id: string } }> }).data.map(
            (s) => s.subject
          )
          assert.deepInclude(subjects, { kind: "account", id: accountId })
        }),
      120_000
    )

    it.live(
      "a user is erased from every account and suppressed; an account with an action in flight is refused",
      () =>
        Effect.gen(function* () {
          const workspaceId = env.service.ws.split("/").at(-1)!
          const userId = `user_gone_${globalThis.crypto.randomUUID()}`
          const accountId = `acct_${globalThis.crypto.randomUUID()}`
          const at = new Date(Date.now() - hour).toISOString()
          for (const account of [accountId, `${accountId}_b`]) {
            const reply = yield* ingest(env, {
              event_name: "feature_used",
              account_id: account,
              user_id: userId,
              user: { name: "Grace" },
              event_id: `feature_used:${account}:${userId}`,
              timestamp: at
            })
            assert.strictEqual(reply.status, 202, reply.text)
          }
          const kept = yield* ingest(env, { event_name: "feature_used", account_id: accountId, timestamp: at })
          assert.strictEqual(kept.status, 202, kept.text)
          const erased = yield* request(`${env.service.ws}/users/${userId}`, { method: "DELETE", headers: admin })
          assert.strictEqual(erased.status, 200, erased.text)
          assert.strictEqual((erased.json as { removed: { events: number } }).removed.events, 2)
          assert.deepStrictEqual((yield* rowsHolding(env.sql, userId)).found, { accord_suppressions: 1 })
          const events = yield* request(`${env.service.ws}/events?account_id=${accountId}`, { headers: admin })
          assert.strictEqual((events.json as { data: Array<unknown> }).data.length, 1)
          const later = yield* ingest(env, {
            event_name: "feature_used",
            account_id: `${accountId}_c`,
            user_id: userId,
            timestamp: at
          })
          assert.strictEqual(later.status, 202, later.text)
          assert.strictEqual((later.json as { status: string }).status, "suppressed")

          const busy = `acct_busy_${globalThis.crypto.randomUUID()}`
          yield* Effect.flatMap(ActionLedger, (ledger) =>
            ledger.create({
              record: settledAction(workspaceId, busy, "user_1", "dispatching"),
              history: { at: Date.now(), trigger: "intake", detail: {} }
            })
          ).pipe(Effect.provide(env.storage as Context.Context<ActionLedger>))
          const refused = yield* request(`${env.service.ws}/accounts/${busy}`, { method: "DELETE", headers: admin })
          assert.strictEqual(refused.status, 409, refused.text)
          assert.strictEqual((refused.json as { code: string }).code, "actions_in_flight")
          const still = yield* ingest(env, { event_name: "feature_used", account_id: busy, timestamp: at })
          assert.strictEqual((still.json as { status: string }).status, "accepted")
        }),
      120_000
    )
  })
