/**
 * The reference customer backend end to end, over real HTTP, against the real Accord server:
 * register and check the connection, dispatch an extend-trial action, the backend extends the trial
 * once, its completion verifies the action, and its `entitlement_active` event unlocks the feature
 * gate.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as Readiness from "../../adapters/http/Readiness.ts"
import * as Server from "../../runtimes/Server.ts"
import { start } from "../../examples/customer-backend/Backend.ts"
import { intakeInput, secrets, workspaceId } from "../connector/dispatch/support.ts"
import { configFrom, request } from "../http/support.ts"
import { storageVariants } from "../support/storage.ts"

const adminKey = "example-admin-key-0123456789abcdef0123456789"
const admin = { authorization: `Bearer ${adminKey}`, "content-type": "application/json" }

const poll = <A>(effect: Effect.Effect<A>, done: (a: A) => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const value = yield* effect
      if (done(value)) return value
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}`)
  })

describe("reference customer backend", () => {
  it.live("connection check, extend-trial dispatch, verified completion, entitlement_active unlocks the gate", () =>
    Effect.gen(function*() {
      const ports = yield* Layer.build(Layer.mergeAll(storageVariants[1]!.layer(), NodeCrypto.layer))
      const config = yield* configFrom({
        ACCORD_DATA_DIR: "memory://",
        ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
        ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
        ACCORD_ALLOW_INSECURE_ENDPOINTS: "1"
      })
      const address = yield* Server.start(
        config,
        NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" }),
        Layer.merge(Layer.succeedContext(ports), Readiness.layerAlwaysReady)
      )
      if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
      const service = `http://127.0.0.1:${address.port}`
      const ws = `${service}/api/admin/v1/workspaces/${workspaceId}`
      const ingestKey = (yield* request(`${ws}/api-keys`, { method: "POST", headers: admin, body: JSON.stringify({ scope: "ingest" }) })).json.secret

      const backend = yield* Effect.acquireRelease(
        Effect.promise(() =>
          start({
            port: 0,
            host: "127.0.0.1",
            workspaceId,
            actionSigningSecret: Redacted.value(secrets.actionSigning),
            completionSecret: Redacted.value(secrets.completion),
            serviceUrl: service,
            ingestApiKey: ingestKey,
            dataDir: "memory://",
            databaseUrl: undefined,
            featureKey: "advanced_reports",
            allowInsecureServiceUrl: true
          })
        ),
        (b) => Effect.promise(() => b.close())
      )

      const registered = yield* request(`${ws}/connector`, {
        method: "PUT",
        headers: admin,
        body: JSON.stringify({
          endpoint: `${backend.url}/connector`,
          actionSigningSecret: Redacted.value(secrets.actionSigning),
          completionSecret: Redacted.value(secrets.completion)
        })
      })
      assert.strictEqual(registered.status, 201)
      assert.strictEqual(registered.json.revision, 0)
      const checked = yield* request(`${ws}/connector/check`, { method: "POST", headers: admin })
      assert.strictEqual(checked.status, 200)
      assert.strictEqual(checked.json.state, "active")

      const input = intakeInput("acct_trial_1")
      const gate = yield* request(`${ws}/feature-gates`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({
          accountId: "acct_trial_1",
          journeyId: input.binding.journeyId,
          versionId: input.binding.publishedVersionId,
          featureKey: "advanced_reports",
          startedAt: new Date(Date.now() - 60_000).toISOString()
        })
      })
      assert.strictEqual(gate.json.state, "checking")

      const created = yield* request(`${ws}/action-requests`, { method: "POST", headers: admin, body: JSON.stringify(input) })
      assert.strictEqual(created.status, 202)
      const id = created.json.actionRequestId
      const status = yield* poll(
        Effect.map(request(`${ws}/action-requests/${id}`, { headers: admin }), (r) => r.json),
        (s) => s.state === "verified",
        "verified"
      )
      assert.deepStrictEqual(status.history.map((h: { toState: string }) => h.toState), ["dispatching", "accepted", "verified"])

      const trial = yield* Effect.promise(() => backend.trialOf("acct_trial_1"))
      assert.strictEqual(trial?.extensions, 1)
      assert.isAbove(trial!.trialEndsAt, Date.now() + 13 * 24 * 60 * 60_000)
      const entitlement = yield* request(`${backend.url}/entitlements/acct_trial_1`)
      assert.isTrue(entitlement.json.trialActive)

      const unlocked = yield* poll(
        Effect.map(request(`${ws}/feature-gates/${gate.json.id}`, { headers: admin }), (r) => r.json),
        (g) => g.state === "unlocked",
        "the gate to unlock"
      )
      assert.strictEqual(unlocked.state, "unlocked")
      const events = yield* request(`${ws}/events?event_name=entitlement_active`, { headers: admin })
      assert.strictEqual(events.json.data.length, 1)
      assert.strictEqual(events.json.data[0].event_id, `entitlement_active:${id}:advanced_reports`)
    }).pipe(Effect.scoped), 120_000)
})
