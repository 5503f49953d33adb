/**
 * The whole connector story over real HTTP with nothing stubbed: the Accord server (real
 * composition, SQL storage) and the customer kit (`makeCustomerKit`: handler plus its execution
 * and completion-delivery workers, on its own storage, served by `node:http` on its own loopback
 * port). The administrator registers the endpoint and runs the check through the admin API, a
 * trusted caller submits actions, the kit acknowledges, executes each exactly once, delivers a
 * signed completion, and the service verifies it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type { ClaimedExecution } from "../../core/customer/ClaimedExecution.ts"
import { intakeInput, secrets } from "../core/connector/dispatch/support.ts"
import { request } from "../support/http.ts"
import { storageVariants } from "../support/storage.ts"
import { actionStatus, admin, bootService, connect, serveKit, waitFor } from "./support.ts"

/** The kit with a host executor that counts its runs per idempotency key. */
const startKit = (storage: (typeof storageVariants)[number], serviceUrl: string) => {
  const runs = new Map<string, number>()
  return Effect.map(
    serveKit(storage, serviceUrl, {
      executor: {
        execute: async (request: ClaimedExecution) => {
          runs.set(request.providerIdempotencyKey, (runs.get(request.providerIdempotencyKey) ?? 0) + 1)
          return {
            outcome: "succeeded",
            providerReference: `trial_ext_raw_${request.actionRequestId.slice(0, 8)}`,
            evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
          }
        },
        lookup: async () => undefined
      }
    }),
    (served) => ({ ...served, runs })
  )
}

for (const storage of storageVariants.filter((v) => v.name !== "memory")) {
  describe.skipIf(!storage.available)(`service and customer kit end to end (${storage.name})`, () => {
    it.live(
      "register, check, intake -> accepted -> kit executes once -> signed completion -> verified",
      () =>
        Effect.gen(function* () {
          const service = yield* bootService({ storage })
          const kit = yield* startKit(storage, service.base)
          const ws = service.ws
          yield* connect(service, kit.url, secrets)

          const ids: Array<string> = []
          for (let i = 0; i < 5; i++) {
            const created = yield* request(`${ws}/action-requests`, {
              method: "POST",
              headers: admin,
              body: JSON.stringify(intakeInput(`acct_e2e_${i}`))
            })
            assert.strictEqual(created.status, 202)
            assert.strictEqual(created.json.state, "dispatching")
            ids.push(created.json.actionRequestId)
          }
          for (const id of ids) {
            const status = yield* waitFor(
              actionStatus(service, id),
              (json) => json?.state === "verified",
              `${id} to be verified`
            )
            const states = status.history.map((h: { toState: string }) => h.toState)
            const completionAt = status.history.findIndex((h: { trigger: string }) => h.trigger === "completion")
            const completion = status.history[completionAt]
            if (completionAt === 2) {
              // The usual order: the acknowledgement recorded, then the completion.
              assert.deepStrictEqual(states, ["dispatching", "accepted", "verified"])
              assert.deepStrictEqual(completion.detail.passedThrough, ["pending"])
            } else {
              // The completion arrived before the dispatcher recorded the acknowledgement (seen on a
              // loaded machine): the authenticated completion proves the acceptance itself, and the
              // acknowledgement is recorded after it without changing the state.
              assert.strictEqual(completionAt, 1, JSON.stringify(status.history))
              assert.deepStrictEqual(states, ["dispatching", "verified", "verified"])
              assert.deepStrictEqual(completion.detail.passedThrough, ["accepted", "pending"])
              assert.strictEqual(status.history[2].trigger, "acknowledgement")
            }
            assert.strictEqual(completion.detail.evidence.matched, "authenticated_completion")
            // Operators see hashes, never the raw provider reference, a secret or a continuation.
            const text = JSON.stringify(status)
            assert.notInclude(text, "trial_ext_raw_")
            assert.notInclude(text, Redacted.value(secrets.completion))
            assert.notInclude(text, Redacted.value(secrets.actionSigning))
            assert.notInclude(text, "sealedContinuation")
            assert.match(completion.detail.providerReferenceHash, /^[0-9a-f]{64}$/)
          }
          // Each action ran exactly once at the customer.
          assert.strictEqual(kit.runs.size, ids.length)
          for (const count of kit.runs.values()) assert.strictEqual(count, 1)
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "intake before the connection is active: 409 connector_not_active",
      () =>
        Effect.gen(function* () {
          const { ws } = yield* bootService({ storage })
          const created = yield* request(`${ws}/action-requests`, {
            method: "POST",
            headers: admin,
            body: JSON.stringify(intakeInput())
          })
          assert.strictEqual(created.status, 409)
          assert.strictEqual(created.json.code, "connector_not_active")
        }).pipe(Effect.scoped),
      60_000
    )
  })
}
