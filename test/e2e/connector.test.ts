/**
 * The connector end to end over real HTTP: the Accord server (the real composition, SQL storage)
 * dispatches to the customer kit on its own loopback server and storage, the kit's completion
 * arrives at the completion route, and the action status shows the whole story.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as Readiness from "../../adapters/http/Readiness.ts"
import * as HttpTransport from "../../adapters/transport/HttpTransport.ts"
import { encodeBody, importSigningKeys, sign } from "../../core/Signing.ts"
import { formatTimestamp } from "../../core/Timestamp.ts"
import * as Server from "../../runtimes/Server.ts"
import { connect, intakeInput, type Peer, secrets, startPeer, workspaceId } from "../connector/dispatch/support.ts"
import { configFrom, request } from "../http/support.ts"
import { storageVariants } from "../support/storage.ts"

const adminKey = "e2e-admin-key-0123456789abcdef0123456789"

let peer: Peer
beforeAll(async () => {
  peer = await startPeer()
})
afterAll(() => peer.close())

const boot = (storage: (typeof storageVariants)[number]) =>
  Effect.gen(function*() {
    const ports = yield* Layer.build(Layer.mergeAll(storage.layer(), NodeCrypto.layer))
    const config = yield* configFrom({
      ACCORD_DATA_DIR: "memory://",
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ACCORD_ALLOW_INSECURE_ENDPOINTS: "1"
    })
    const address = yield* Server.start(
      config,
      NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" }),
      Layer.merge(Layer.succeedContext(ports), Readiness.layerAlwaysReady),
      { transport: HttpTransport.layer({ allowInsecure: true }) }
    )
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    yield* connect(peer.url).pipe(Effect.provide(ports))
    return `http://127.0.0.1:${address.port}`
  })

const admin = { authorization: `Bearer ${adminKey}`, "content-type": "application/json" }

const waitForState = (base: string, id: string, state: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      const reply = yield* request(`${base}/api/admin/v1/workspaces/${workspaceId}/action-requests/${id}`, { headers: admin })
      if (reply.json?.state === state) return reply.json
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`action never reached ${state}`)
  })

const signedCompletion = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const keys = yield* importSigningKeys(secrets)
    const bytes = encodeBody(body)
    const headers = yield* sign({ purpose: "completion", keys, body: bytes })
    return { method: "POST", headers: { ...headers }, body: bytes }
  }).pipe(Effect.provide(NodeCrypto.layer))

for (const storage of storageVariants.filter((v) => v.name !== "memory")) {
  describe.skipIf(!storage.available)(`connector end to end (${storage.name})`, () => {
    it.live("intake -> accepted by the kit -> signed completion -> verified; redelivery acknowledged once", () =>
      Effect.gen(function*() {
        peer.mode = "good"
        const base = yield* boot(storage)
        const executionsBefore = yield* Effect.promise(() => peer.executions())
        const created = yield* request(`${base}/api/admin/v1/workspaces/${workspaceId}/action-requests`, {
          method: "POST",
          headers: admin,
          body: JSON.stringify(intakeInput())
        })
        assert.strictEqual(created.status, 202)
        const id = created.json.actionRequestId as string
        const accepted = yield* waitForState(base, id, "accepted")
        assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore + 1)

        const completion = {
          type: "service.customer_action.completion",
          protocolVersion: 1,
          workspaceId,
          actionRequestId: id,
          providerIdempotencyKey: accepted.providerIdempotencyKey,
          providerReference: "trial_ext_secretref_77",
          completionId: `cmp_${id}`,
          completedAt: formatTimestamp(Date.now()),
          outcome: "succeeded",
          evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "entitlement_state", accountId: "acct_42" }
        }
        const url = `${base}/api/funnels/v1/runtime/actions/customer-complete`
        const first = yield* request(url, yield* signedCompletion(completion))
        assert.strictEqual(first.status, 200)
        assert.deepStrictEqual(first.json, { status: "recorded", actionRequestId: id, completionId: `cmp_${id}`, state: "verified" })
        const again = yield* request(url, yield* signedCompletion(completion))
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.json.status, "duplicate")
        const tampered = yield* signedCompletion(completion)
        const bad = yield* request(url, { ...tampered, body: encodeBody({ ...completion, outcome: "failed" }) })
        assert.strictEqual(bad.status, 401)
        assert.strictEqual(bad.headers.get("content-type"), "application/problem+json")

        const status = yield* waitForState(base, id, "verified")
        assert.deepStrictEqual(status.history.map((h: { toState: string }) => h.toState), ["dispatching", "accepted", "verified"])
        assert.notInclude(JSON.stringify(status), "trial_ext_secretref_77")
        assert.notInclude(JSON.stringify(status), "as_3f9c")
      }).pipe(Effect.scoped), 60_000)

    it.live("intake needs an admin key and a valid body", () =>
      Effect.gen(function*() {
        const base = yield* boot(storage)
        const url = `${base}/api/admin/v1/workspaces/${workspaceId}/action-requests`
        assert.strictEqual((yield* request(url, { method: "POST", body: "{}" })).status, 401)
        const invalid = yield* request(url, { method: "POST", headers: admin, body: JSON.stringify({ accountId: "a" }) })
        assert.strictEqual(invalid.status, 400)
        assert.isAbove(invalid.json.errors.length, 0)
        const unknown = yield* request(`${url}/8d0f2b4c-6e8a-4c0d-9f3b-5c7e9a1d3f5b`, { headers: admin })
        assert.strictEqual(unknown.status, 404)
      }).pipe(Effect.scoped), 60_000)
  })
}
