/**
 * The connector end to end over real HTTP: the Accord server (the real composition, SQL storage)
 * dispatches to the customer kit on its own loopback server and storage, the kit's completion
 * arrives at the completion route, and the action status shows the whole story.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import * as MemoryReadiness from "../../adapters/memory/Readiness.ts"
import { ActionLedger, type ActionLedgerService } from "../../core/ports/ActionLedger.ts"
import { StorageError } from "../../core/ports/StorageError.ts"
import * as HttpTransport from "../../adapters/transport/HttpTransport.ts"
import { encodeBody } from "../../core/protocol/Signing.ts"
import { formatTimestamp } from "../../core/protocol/Timestamp.ts"
import * as Server from "../../runtimes/Server.ts"
import {
  connect,
  intakeInput,
  misbehavingModes,
  paymentIntakeInput,
  type Peer,
  signedCompletion as signCompletion,
  startPeer,
  workspaceId
} from "../core/connector/dispatch/support.ts"
import { configFrom, request } from "../support/http.ts"
import { storageVariants } from "../support/storage.ts"

const adminKey = "e2e-admin-key-0123456789abcdef0123456789"

let peer: Peer

/** `ledger` wraps the service's action ledger (to make one of its operations fail). */
const boot = (storage: (typeof storageVariants)[number], ledger?: (real: ActionLedgerService) => ActionLedgerService) =>
  Effect.gen(function* () {
    const built = yield* Layer.build(Layer.mergeAll(storage.layer(), NodeCrypto.layer))
    const ports =
      ledger === undefined ? built : Context.add(built, ActionLedger, ledger(Context.get(built, ActionLedger)))
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

const admin = { authorization: `Bearer ${adminKey}`, "content-type": "application/json" }

const waitForState = (base: string, id: string, state: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100; i++) {
      const reply = yield* request(`${base}/api/admin/v1/workspaces/${workspaceId}/action-requests/${id}`, {
        headers: admin
      })
      if (reply.json?.state === state) return reply.json
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`action never reached ${state}`)
  })

/** Intake through the admin route, then the server's own dispatcher delivers it: the accepted status. */
const acceptedAction = (base: string) =>
  Effect.gen(function* () {
    const created = yield* request(`${base}/api/admin/v1/workspaces/${workspaceId}/action-requests`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(intakeInput())
    })
    assert.strictEqual(created.status, 202)
    assert.strictEqual(
      created.headers.get("location"),
      `/api/admin/v1/workspaces/${workspaceId}/action-requests/${created.json.actionRequestId}`
    )
    return yield* waitForState(base, created.json.actionRequestId as string, "accepted")
  })

/** A succeeded completion with matched catalog evidence for an accepted action's status. */
const succeededCompletion = (
  accepted: { readonly actionRequestId: string; readonly providerIdempotencyKey: string },
  providerReference: string
) => ({
  type: "service.customer_action.completion",
  protocolVersion: 1,
  workspaceId,
  actionRequestId: accepted.actionRequestId,
  providerIdempotencyKey: accepted.providerIdempotencyKey,
  providerReference,
  completionId: `cmp_${accepted.actionRequestId}`,
  completedAt: formatTimestamp(Date.now()),
  outcome: "succeeded",
  // Exactly the spec's evidence fields.
  evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
})

const signedCompletion = (body: Record<string, unknown>) =>
  Effect.map(signCompletion(body), (signed) => ({ method: "POST", ...signed }))

/** The suite on one SQL storage variant; each variant runs from a test file of its own, in parallel. */
export const suite = (name: "pglite" | "postgres"): void => {
  const storage = storageVariants.find((v) => v.name === name)!
  describe.skipIf(!storage.available)(`connector end to end (${storage.name})`, () => {
    // The kit on its own storage of the same kind: never the service's database.
    beforeAll(async () => {
      peer = await startPeer({ storage: storage.layer(), slowMillis: 2_500 })
    }, 60_000)
    afterAll(() => peer.close())

    it.live(
      "intake -> accepted by the kit -> signed completion -> verified; redelivery acknowledged once",
      () =>
        Effect.gen(function* () {
          peer.mode = "good"
          const base = yield* boot(storage)
          const executionsBefore = yield* Effect.promise(() => peer.executions())
          const accepted = yield* acceptedAction(base)
          const id = accepted.actionRequestId as string
          assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore + 1)

          const completion = succeededCompletion(accepted, "trial_ext_secretref_77")
          const url = `${base}/api/funnels/v1/runtime/actions/customer-complete`
          const first = yield* request(url, yield* signedCompletion(completion))
          assert.strictEqual(first.status, 200)
          assert.deepStrictEqual(first.json, {
            status: "recorded",
            actionRequestId: id,
            completionId: `cmp_${id}`,
            state: "verified"
          })
          const again = yield* request(url, yield* signedCompletion(completion))
          assert.strictEqual(again.status, 200)
          assert.strictEqual(again.json.status, "duplicate")
          const tampered = yield* signedCompletion(completion)
          const bad = yield* request(url, { ...tampered, body: encodeBody({ ...completion, outcome: "failed" }) })
          assert.strictEqual(bad.status, 401)
          assert.strictEqual(bad.headers.get("content-type"), "application/problem+json")

          const status = yield* waitForState(base, id, "verified")
          assert.deepStrictEqual(
            status.history.map((h: { toState: string }) => h.toState),
            ["dispatching", "accepted", "verified"]
          )
          assert.notInclude(JSON.stringify(status), "trial_ext_secretref_77")
          assert.notInclude(JSON.stringify(status), "as_3f9c")
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "intake needs an admin key and a valid body",
      () =>
        Effect.gen(function* () {
          const base = yield* boot(storage)
          const url = `${base}/api/admin/v1/workspaces/${workspaceId}/action-requests`
          assert.strictEqual((yield* request(url, { method: "POST", body: "{}" })).status, 401)
          const invalid = yield* request(url, {
            method: "POST",
            headers: admin,
            body: JSON.stringify({ accountId: "a" })
          })
          assert.strictEqual(invalid.status, 400)
          assert.isAbove(invalid.json.errors.length, 0)
          const unknown = yield* request(`${url}/8d0f2b4c-6e8a-4c0d-9f3b-5c7e9a1d3f5b`, { headers: admin })
          assert.strictEqual(unknown.status, 404)
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "a Payment action on a connection holding no payment capability: 409 payment_mode_not_enabled naming the mode, nothing sent",
      () =>
        Effect.gen(function* () {
          const base = yield* boot(storage)
          const executionsBefore = yield* Effect.promise(() => peer.executions())
          const url = `${base}/api/admin/v1/workspaces/${workspaceId}/action-requests`
          const refused = yield* request(url, {
            method: "POST",
            headers: admin,
            body: JSON.stringify(paymentIntakeInput())
          })
          assert.strictEqual(refused.status, 409)
          assert.strictEqual(refused.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(refused.json.code, "payment_mode_not_enabled")
          assert.include(refused.json.detail, "one_time_purchase")
          assert.notInclude(JSON.stringify(refused.json), "as_3f9c")
          yield* Effect.sleep("300 millis")
          assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore)
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "a completion while storage fails: 503 storage_unavailable, nothing recorded; delivered again later, recorded once",
      () =>
        Effect.gen(function* () {
          peer.mode = "good"
          let failing = false
          // Recording a completion (a transition with its completion claim) fails while `failing`.
          const base = yield* boot(storage, (ledger) => ({
            ...ledger,
            transition: (options) =>
              failing && options.completion !== undefined
                ? Effect.fail(new StorageError({ operation: "action.transition", message: "connection lost" }))
                : ledger.transition(options)
          }))
          const accepted = yield* acceptedAction(base)
          const id = accepted.actionRequestId as string
          const completion = succeededCompletion(accepted, "ref_storage_down")
          const url = `${base}/api/funnels/v1/runtime/actions/customer-complete`
          failing = true
          const refused = yield* request(url, yield* signedCompletion(completion))
          assert.strictEqual(refused.status, 503)
          assert.strictEqual(refused.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(refused.json.code, "storage_unavailable")
          assert.notInclude(refused.text, "connection lost")
          const unchanged = yield* waitForState(base, id, "accepted")
          assert.deepStrictEqual(unchanged.history, accepted.history)
          failing = false
          // The customer redelivers (same body and completionId, fresh nonce): nothing was claimed, so it is recorded now.
          const recorded = yield* request(url, yield* signedCompletion(completion))
          assert.strictEqual(recorded.status, 200)
          assert.deepStrictEqual(recorded.json, {
            status: "recorded",
            actionRequestId: id,
            completionId: `cmp_${id}`,
            state: "verified"
          })
          const status = yield* waitForState(base, id, "verified")
          assert.strictEqual(status.history.filter((h: { trigger: string }) => h.trigger === "completion").length, 1)
        }).pipe(Effect.scoped),
      60_000
    )

    for (const mode of misbehavingModes) {
      it.live(
        `${mode}: the server's own dispatcher records unknown_outcome, redelivers the same key and resolves it, one execution`,
        () =>
          Effect.gen(function* () {
            peer.mode = mode
            const base = yield* boot(storage)
            const executionsBefore = yield* Effect.promise(() => peer.executions())
            const seenBefore = peer.seen.length
            const created = yield* request(`${base}/api/admin/v1/workspaces/${workspaceId}/action-requests`, {
              method: "POST",
              headers: admin,
              body: JSON.stringify(intakeInput())
            })
            assert.strictEqual(created.status, 202)
            const id = created.json.actionRequestId as string
            const unknown = yield* waitForState(base, id, "unknown_outcome")
            peer.mode = "good"
            const accepted = yield* waitForState(base, id, "accepted")
            assert.deepStrictEqual(
              accepted.history.map((h: { toState: string }) => h.toState),
              ["dispatching", "unknown_outcome", "accepted"]
            )
            assert.strictEqual(accepted.providerIdempotencyKey, unknown.providerIdempotencyKey)
            const deliveries = peer.seen.slice(seenBefore).filter((d) => d.key === accepted.providerIdempotencyKey)
            assert.isAtLeast(deliveries.length, 2)
            assert.strictEqual(new Set(deliveries.map((d) => d.nonce)).size, deliveries.length)
            assert.strictEqual(yield* Effect.promise(() => peer.executions()), executionsBefore + 1)
          }).pipe(Effect.ensuring(Effect.sync(() => (peer.mode = "good"))), Effect.scoped),
        60_000
      )
    }

    describe("completion route", () => {
      let base: string
      let scope: Scope.CloseableScope
      let action: { readonly id: string; readonly key: string }
      beforeAll(
        () =>
          Effect.runPromise(
            Effect.gen(function* () {
              peer.mode = "good"
              scope = yield* Scope.make()
              base = yield* boot(storage).pipe(Scope.extend(scope))
              const accepted = yield* acceptedAction(base)
              action = { id: accepted.actionRequestId, key: accepted.providerIdempotencyKey }
            })
          ),
        60_000
      )
      afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

      const url = () => `${base}/api/funnels/v1/runtime/actions/customer-complete`
      const completionFor = (overrides: Record<string, unknown> = {}) => ({
        type: "service.customer_action.completion",
        protocolVersion: 1,
        workspaceId,
        actionRequestId: action.id,
        providerIdempotencyKey: action.key,
        providerReference: "ref_route_1",
        completionId: `cmp_route_${globalThis.crypto.randomUUID()}`,
        completedAt: formatTimestamp(Date.now()),
        outcome: "unknown",
        evidence: { entitlement: "", reasonCode: "pending_review", source: "customer_server_event" },
        ...overrides
      })
      const problem = (
        reply: { readonly status: number; readonly headers: Headers; readonly json: any },
        status: number,
        code: string
      ) => {
        assert.strictEqual(reply.status, status)
        assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
        assert.strictEqual(reply.json.code, code)
        assert.strictEqual(reply.json.status, status)
        assert.isString(reply.json.title)
        assert.isString(reply.json.type)
      }

      it.live("not application/json: 415", () =>
        Effect.gen(function* () {
          const delivery = yield* signedCompletion(completionFor())
          problem(
            yield* request(url(), { ...delivery, headers: { ...delivery.headers, "content-type": "text/plain" } }),
            415,
            "unsupported_media_type"
          )
        })
      )

      it.live("over 64 KiB: 413", () =>
        Effect.gen(function* () {
          const delivery = yield* signedCompletion(completionFor({ padding: "x".repeat(70_000) }))
          problem(yield* request(url(), delivery), 413, "content_too_large")
        })
      )

      it.live("not JSON: the same 401 as a bad signature", () =>
        Effect.gen(function* () {
          const delivery = yield* signedCompletion(completionFor())
          const notJson = yield* request(url(), { ...delivery, body: new TextEncoder().encode("not json at all") })
          const badSignature = yield* request(url(), {
            ...delivery,
            headers: { ...delivery.headers, "x-service-customer-action-signature": "v1=" + "0".repeat(64) }
          })
          problem(notJson, 401, "invalid_signature")
          assert.deepStrictEqual(notJson.json, badSignature.json)
        })
      )

      it.live("unknown workspace: byte for byte the same 401 as a bad signature", () =>
        Effect.gen(function* () {
          const unknownWorkspace = yield* request(
            url(),
            yield* signedCompletion(completionFor({ workspaceId: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d" }))
          )
          const delivery = yield* signedCompletion(completionFor())
          const badSignature = yield* request(url(), {
            ...delivery,
            headers: { ...delivery.headers, "x-service-customer-action-signature": "v1=" + "0".repeat(64) }
          })
          problem(unknownWorkspace, 401, "invalid_signature")
          assert.strictEqual(unknownWorkspace.text, badSignature.text)
        })
      )

      it.live("stale timestamp: 401 stale_timestamp", () =>
        Effect.gen(function* () {
          const delivery = yield* signedCompletion(completionFor())
          problem(
            yield* request(url(), {
              ...delivery,
              headers: {
                ...delivery.headers,
                "x-service-customer-action-timestamp": formatTimestamp(Date.now() - 600_000)
              }
            }),
            401,
            "stale_timestamp"
          )
        })
      )

      it.live("replayed nonce: 401 replayed_nonce", () =>
        Effect.gen(function* () {
          const delivery = yield* signedCompletion(completionFor())
          assert.strictEqual((yield* request(url(), delivery)).status, 200)
          problem(yield* request(url(), delivery), 401, "replayed_nonce")
        })
      )

      it.live("invalid body (extra field): 400 with the failing path, never the value", () =>
        Effect.gen(function* () {
          const reply = yield* request(url(), yield* signedCompletion(completionFor({ extra: "secret-ish-value" })))
          problem(reply, 400, "invalid_body")
          assert.isAbove(reply.json.errors.length, 0)
          assert.notInclude(reply.text, "secret-ish-value")
        })
      )

      it.live("unknown action: 404", () =>
        Effect.gen(function* () {
          problem(
            yield* request(
              url(),
              yield* signedCompletion(completionFor({ actionRequestId: "8d0f2b4c-6e8a-4c0d-9f3b-5c7e9a1d3f5b" }))
            ),
            404,
            "unknown_action"
          )
        })
      )

      it.live("idempotency key of another action: 422", () =>
        Effect.gen(function* () {
          problem(
            yield* request(
              url(),
              yield* signedCompletion(completionFor({ providerIdempotencyKey: "pva_" + "d".repeat(64) }))
            ),
            422,
            "idempotency_key_mismatch"
          )
        })
      )

      it.live("same completionId, another body: 409; the same body again: 200 duplicate", () =>
        Effect.gen(function* () {
          const body = completionFor()
          assert.strictEqual((yield* request(url(), yield* signedCompletion(body))).json.status, "recorded")
          const again = yield* request(url(), yield* signedCompletion(body))
          assert.strictEqual(again.status, 200)
          assert.strictEqual(again.json.status, "duplicate")
          problem(
            yield* request(url(), yield* signedCompletion({ ...body, outcome: "failed" })),
            409,
            "completion_id_conflict"
          )
        })
      )
    })
  })
}
