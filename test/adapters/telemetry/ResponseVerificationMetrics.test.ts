/**
 * `GET /metrics`: customer responses the service refuses in its own verification, counted by
 * message and reason. The real server composition (PGlite storage) dispatches to a
 * real customer kit behind a misbehaving HTTP front (`startPeer`): an acknowledgement with a wrong
 * signature, then one re-signed with a stale timestamp. No value of the response is a label.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as MemoryReadiness from "../../../adapters/memory/Readiness.ts"
import * as HttpTransport from "../../../adapters/transport/HttpTransport.ts"
import * as Server from "../../../runtimes/Server.ts"
import { connect, intakeInput, type Peer, startPeer, workspaceId } from "../../core/connector/dispatch/support.ts"
import { configFrom, request } from "../../support/http.ts"
import { storageVariants } from "../../support/storage.ts"

const adminKey = "metrics-admin-key-0123456789abcdef01234567"
const admin = { authorization: `Bearer ${adminKey}`, "content-type": "application/json" }
const storage = storageVariants.find((v) => v.name === "pglite")!
let peer: Peer

beforeAll(async () => {
  peer = await startPeer({ storage: storage.layer() })
}, 60_000)
afterAll(() => peer.close())

/** The value of one sample line (`name{labels} value`), 0 when absent. */
const sample = (text: string, line: string): number => {
  const found = text.split("\n").find((candidate) => candidate.startsWith(line + " "))
  return found === undefined ? 0 : Number(found.slice(line.length + 1))
}

const boot = Effect.gen(function* () {
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
    Layer.merge(Layer.succeedContext(ports), MemoryReadiness.layerMemory),
    { transport: HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 1_000 }) }
  )
  if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
  yield* connect(peer.url).pipe(Effect.provide(ports))
  return `http://127.0.0.1:${address.port}`
})

const stateOf = (base: string, id: string) =>
  Effect.map(
    request(`${base}/api/admin/v1/workspaces/${workspaceId}/action-requests/${id}`, { headers: admin }),
    (reply) => reply.json?.state as string | undefined
  )

describe.skipIf(!storage.available)("GET /metrics: customer responses refused by verification", () => {
  it.live(
    "a wrongly signed, then a stale acknowledgement count under message=acknowledgement and their reasons",
    () =>
      Effect.gen(function* () {
        const base = yield* boot
        const scrape = Effect.map(request(base + "/metrics"), (reply) => reply.text)
        const line = (reason: string) =>
          `accord_customer_response_verification_failures_total{message="acknowledgement",reason="${reason}"}`
        const before = yield* scrape
        const dispatchTo = (mode: Peer["mode"], reason: string) =>
          Effect.gen(function* () {
            peer.mode = mode
            const seen = peer.requests
            const created = yield* request(`${base}/api/admin/v1/workspaces/${workspaceId}/action-requests`, {
              method: "POST",
              headers: admin,
              body: JSON.stringify(intakeInput())
            })
            assert.strictEqual(created.status, 202, created.text)
            const id = created.json.actionRequestId as string
            // Wait until the refused answer is counted (the action is then in unknown_outcome).
            for (
              let i = 0;
              i < 200 &&
              (sample(yield* scrape, line(reason)) - sample(before, line(reason)) < 1 || peer.requests === seen);
              i++
            ) {
              yield* Effect.sleep("50 millis")
            }
            assert.strictEqual(yield* stateOf(base, id), "unknown_outcome")
            return id
          })
        const wrong = yield* dispatchTo("wrong_signature", "invalid_signature")
        const stale = yield* dispatchTo("stale_response", "stale_timestamp")
        peer.mode = "good"
        const after = yield* scrape
        assert.isAtLeast(sample(after, line("invalid_signature")) - sample(before, line("invalid_signature")), 1, after)
        assert.isAtLeast(sample(after, line("stale_timestamp")) - sample(before, line("stale_timestamp")), 1, after)
        assert.include(after, "# TYPE accord_customer_response_verification_failures_total counter")
        for (const value of [wrong, stale, workspaceId, adminKey, "0".repeat(64)]) assert.notInclude(after, value)
      }).pipe(Effect.ensuring(Effect.sync(() => (peer.mode = "good"))), Effect.scoped),
    60_000
  )
})
