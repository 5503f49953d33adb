/**
 * The reference customer backend end to end, over real HTTP, against the real Accord server:
 * register and check the connection, dispatch an extend-trial action, the backend extends the trial
 * once, its completion verifies the action, and its `entitlement_active` event unlocks the feature
 * gate, through an outage of the service's ingest endpoint (a loopback gate in front of the server
 * answers 503 to ingest requests until it is opened) and across a restart of the backend, on PGlite
 * on disk and on PostgreSQL (`DATABASE_URL`). Also: a later connection revision, and the
 * entitlement route's answers when the database fails.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Database from "../../../adapters/sql/Database.ts"
import { configFromEnv, type RunningBackend, start } from "../../../examples/customer-backend/Backend.ts"
import { intakeInput, secrets, workspaceId } from "../../core/connector/dispatch/support.ts"
import { actionStatus, admin, check, connect, register, type Service, bootService, waitFor } from "../../e2e/support.ts"
import { request } from "../../support/http.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../../support/postgres.ts"
import { storageVariants } from "../../support/storage.ts"

const featureKey = "advanced_reports"
const memory = storageVariants[0]!

/** Every ingest request the gate saw: the event's id and what the sender was answered. */
interface IngestAttempt {
  readonly eventId: string
  readonly status: number
}

/**
 * A loopback gate in front of the service: forwards every request, except that ingest requests get
 * 503 while `state.down`. Records each ingest attempt.
 */
const ingestGate = (target: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const state = { down: true }
      const attempts: Array<IngestAttempt> = []
      const server: Server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", async () => {
          const body = Buffer.concat(chunks)
          const ingest = req.method === "POST" && req.url === "/api/events/ingest"
          if (ingest && state.down) {
            attempts.push({ eventId: JSON.parse(body.toString()).event_id, status: 503 })
            return void res.writeHead(503, { "content-type": "application/problem+json" }).end('{"code":"unavailable"}')
          }
          const headers = Object.fromEntries(
            Object.entries(req.headers).filter(
              ([name]) => !["host", "connection", "content-length", "transfer-encoding"].includes(name)
            )
          ) as Record<string, string>
          const answer = await fetch(target + req.url, {
            method: req.method!,
            headers,
            ...(req.method === "GET" ? {} : { body })
          })
          const text = Buffer.from(await answer.arrayBuffer())
          if (ingest) attempts.push({ eventId: JSON.parse(body.toString()).event_id, status: answer.status })
          res
            .writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" })
            .end(text)
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, state, attempts, server }
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

/** The backend's environment as an operator would write it. */
const backendEnv = (serviceUrl: string, more: Record<string, string> = {}): Record<string, string> => ({
  PORT: "0",
  ACCORD_WORKSPACE_ID: workspaceId,
  ACCORD_ACTION_SIGNING_SECRET: Redacted.value(secrets.actionSigning),
  ACCORD_COMPLETION_SECRET: Redacted.value(secrets.completion),
  ACCORD_SERVICE_URL: serviceUrl,
  ACCORD_ALLOW_INSECURE_ENDPOINTS: "true",
  ACCORD_DATA_DIR: "memory://",
  EXAMPLE_FEATURE_KEY: featureKey,
  ...more
})

/** Starts the backend from `env`, with short delays between event attempts. */
const startBackend = (env: Record<string, string>) =>
  Effect.promise(() => start({ ...configFromEnv(env), eventRetry: { baseMillis: 50, capMillis: 200 } }))

const scopedBackend = (env: Record<string, string>) =>
  Effect.acquireRelease(startBackend(env), (b) => Effect.promise(() => b.close()))

const ingestKey = (service: Service) =>
  Effect.map(
    request(`${service.ws}/api-keys`, { method: "POST", headers: admin, body: JSON.stringify({ scope: "ingest" }) }),
    (r) => r.json.secret as string
  )

/**
 * Submits one extend-trial action for `accountId` and waits until its `succeeded` completion is in:
 * the backend names `entitlement_state` evidence, so the action stays `pending` until the service
 * itself has received the `entitlement_active` event (an action is verified only on evidence the
 * service holds itself).
 */
const completedAction = (service: Service, accountId: string) =>
  Effect.gen(function* () {
    const created = yield* request(`${service.ws}/action-requests`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(intakeInput(accountId))
    })
    assert.strictEqual(created.status, 202)
    const id: string = created.json.actionRequestId
    const status = yield* waitFor(actionStatus(service, id), (s) => s.state === "pending", `${id} to be pending`)
    assert.deepStrictEqual(
      status.history.map((h: { toState: string }) => h.toState),
      ["dispatching", "accepted", "pending"]
    )
    assert.deepStrictEqual(status.history[2].detail.evidence, {
      source: "entitlement_state",
      reasonCode: "trial_extended",
      matched: "entitlement_state",
      standing: "awaiting"
    })
    return id
  })

/** Waits until the service verified the action on the `entitlement_active` event it received. */
const verifiedOnEvent = (service: Service, id: string) =>
  Effect.gen(function* () {
    const status = yield* waitFor(actionStatus(service, id), (s) => s.state === "verified", `${id} to be verified`)
    assert.deepStrictEqual(
      status.history.map((h: { trigger: string; toState: string }) => `${h.trigger}:${h.toState}`),
      ["intake:dispatching", "acknowledgement:accepted", "completion:pending", "evidence_observed:verified"]
    )
  })

/** Opens the gate and waits until the backend has the event `delivered`; then checks it was sent exactly once. */
const deliveredOnce = (
  backend: RunningBackend,
  gate: { state: { down: boolean }; attempts: Array<IngestAttempt> },
  eventId: string
) =>
  Effect.gen(function* () {
    gate.state.down = false
    const [event] = yield* waitFor(
      Effect.promise(backend.accessEvents),
      (events) => events[0]?.state === "delivered",
      "entitlement_active to be delivered"
    )
    assert.strictEqual(event!.eventId, eventId)
    // Every attempt carried the same event_id; the one that reached the service was the only one it saw.
    assert.deepStrictEqual([...new Set(gate.attempts.map((a) => a.eventId))], [eventId])
    assert.deepStrictEqual(
      gate.attempts.filter((a) => a.status !== 503).map((a) => a.status),
      [202]
    )
  })

const eventsNamed = (service: Service) =>
  Effect.map(
    request(`${service.ws}/events?event_name=entitlement_active`, { headers: admin }),
    (r) => r.json.data as Array<{ event_id: string }>
  )

describe("reference customer backend", () => {
  it.live(
    "connection check, extend-trial dispatch, verified completion; entitlement_active survives an ingest outage and unlocks the gate",
    () =>
      Effect.gen(function* () {
        const service = yield* bootService({ storage: memory })
        const gate = yield* ingestGate(service.base)
        const backend = yield* scopedBackend(
          backendEnv(gate.url, { SERVICE_INGEST_API_KEY: yield* ingestKey(service) })
        )
        const registered = yield* connect(service, `${backend.url}/connector`, secrets)
        assert.strictEqual(registered.revision, 0)

        const input = intakeInput("acct_trial_1")
        const featureGate = yield* request(`${service.ws}/feature-gates`, {
          method: "POST",
          headers: admin,
          body: JSON.stringify({
            accountId: "acct_trial_1",
            journeyId: input.binding.journeyId,
            versionId: input.binding.publishedVersionId,
            featureKey,
            startedAt: new Date(Date.now() - 60_000).toISOString()
          })
        })
        assert.strictEqual(featureGate.json.state, "checking")
        const id = yield* completedAction(service, "acct_trial_1")

        const trial = yield* Effect.promise(() => backend.trialOf("acct_trial_1"))
        assert.strictEqual(trial?.extensions, 1)
        assert.isAbove(trial!.trialEndsAt, Date.now() + 13 * 24 * 60 * 60_000)
        const entitlement = yield* request(`${backend.url}/entitlements/acct_trial_1`)
        assert.isTrue(entitlement.json.trialActive)

        // Ingest answers 503: the backend keeps the event pending and retries it.
        yield* waitFor(
          Effect.sync(() => gate.attempts.length),
          (n) => n >= 3,
          "three refused ingest attempts"
        )
        assert.strictEqual((yield* Effect.promise(backend.accessEvents))[0]?.state, "pending")
        assert.strictEqual(
          (yield* request(`${service.ws}/feature-gates/${featureGate.json.id}`, { headers: admin })).json.state,
          "checking"
        )
        // No event seen: the completion alone does not verify the action.
        assert.strictEqual((yield* actionStatus(service, id)).state, "pending")

        const eventId = `entitlement_active:${id}:${featureKey}`
        yield* deliveredOnce(backend, gate, eventId)
        yield* verifiedOnEvent(service, id)
        const unlocked = yield* waitFor(
          Effect.map(request(`${service.ws}/feature-gates/${featureGate.json.id}`, { headers: admin }), (r) => r.json),
          (g) => g.state === "unlocked",
          "the gate to unlock"
        )
        assert.strictEqual(unlocked.state, "unlocked")
        assert.deepStrictEqual(
          (yield* eventsNamed(service)).map((e) => e.event_id),
          [eventId]
        )
      }).pipe(Effect.scoped),
    120_000
  )

  /** The ingest outage spans a restart of the backend on `storageEnv`'s database. */
  const acrossRestart = (storageEnv: Record<string, string>) =>
    Effect.gen(function* () {
      const service = yield* bootService({ storage: memory })
      const gate = yield* ingestGate(service.base)
      const env = backendEnv(gate.url, { SERVICE_INGEST_API_KEY: yield* ingestKey(service), ...storageEnv })
      const first = yield* startBackend(env)
      yield* connect(service, `${first.url}/connector`, secrets)
      const id = yield* completedAction(service, "acct_restart")
      yield* waitFor(
        Effect.sync(() => gate.attempts.length),
        (n) => n >= 2,
        "refused ingest attempts"
      )
      yield* Effect.promise(first.close)

      // The restarted backend finds the pending event in its table and goes on retrying it.
      const before = gate.attempts.length
      const second = yield* scopedBackend(env)
      yield* waitFor(
        Effect.sync(() => gate.attempts.length),
        (n) => n > before,
        "an attempt by the restarted backend"
      )
      const eventId = `entitlement_active:${id}:${featureKey}`
      yield* deliveredOnce(second, gate, eventId)
      yield* verifiedOnEvent(service, id)
      assert.deepStrictEqual(
        (yield* eventsNamed(service)).map((e) => e.event_id),
        [eventId]
      )
      assert.strictEqual((yield* Effect.promise(() => second.trialOf("acct_restart")))?.extensions, 1)
    })

  it.live(
    "entitlement_active across an ingest outage and a backend restart: delivered once, same event_id (PGlite on disk)",
    () =>
      Effect.gen(function* () {
        const dir = mkdtempSync(join(tmpdir(), "accord-backend-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        yield* acrossRestart({ ACCORD_DATA_DIR: dir })
      }).pipe(Effect.scoped),
    120_000
  )

  warnIfSkipped("reference customer backend")
  it.live.skipIf(databaseUrl === undefined)(
    "entitlement_active across an ingest outage and a backend restart: delivered once, same event_id (PostgreSQL, DATABASE_URL)",
    () =>
      Effect.gen(function* () {
        const url = yield* freshSchemaUrl(databaseUrl!)
        yield* acrossRestart({ DATABASE_URL: Redacted.value(url) })
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "ACCORD_CONNECTION_REVISION: after a second PUT /connector the check passes at revision 1",
    () =>
      Effect.gen(function* () {
        const service = yield* bootService({ storage: memory })
        const backend = yield* scopedBackend(backendEnv(service.base, { ACCORD_CONNECTION_REVISION: "1" }))
        const endpoint = `${backend.url}/connector`
        assert.strictEqual((yield* register(service, endpoint, secrets)).revision, 0)
        // The backend holds revision 1's secrets: revision 0's handshake is refused and activates nothing.
        const refused = yield* check(service)
        assert.strictEqual(refused.revision, 0)
        assert.notStrictEqual(refused.state, "active")
        assert.isString(refused.problem)
        assert.strictEqual((yield* register(service, endpoint, secrets)).revision, 1)
        const checked = yield* check(service)
        assert.deepStrictEqual([checked.revision, checked.state], [1, "active"])
      }).pipe(Effect.scoped),
    60_000
  )

  it.live.skipIf(databaseUrl === undefined)(
    "GET /entitlements/{accountId}: 503 with a JSON error when the database fails, 400 for a malformed id (PostgreSQL)",
    () =>
      Effect.gen(function* () {
        const url = yield* freshSchemaUrl(databaseUrl!)
        const backend = yield* scopedBackend(backendEnv("http://127.0.0.1:9", { DATABASE_URL: Redacted.value(url) }))
        const fine = yield* request(`${backend.url}/entitlements/acct_1`)
        assert.deepStrictEqual(
          [fine.status, fine.json],
          [200, { accountId: "acct_1", trialActive: false, trialEndsAt: null }]
        )
        const malformed = yield* request(`${backend.url}/entitlements/%E0%A4%A`)
        assert.deepStrictEqual([malformed.status, malformed.json], [400, { error: "invalid_account_id" }])

        // The table disappears under the running backend: the request is answered, not left hanging.
        yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`ALTER TABLE example_trials RENAME TO example_trials_gone`
        ).pipe(Effect.provide(Layer.fresh(Database.layerPg(url))))
        const failed = yield* request(`${backend.url}/entitlements/acct_1`)
        assert.strictEqual(failed.status, 503)
        assert.strictEqual(failed.headers.get("content-type"), "application/json")
        assert.deepStrictEqual(failed.json, { error: "storage_unavailable" })
      }).pipe(Effect.scoped),
    60_000
  )
})
