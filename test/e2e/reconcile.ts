/**
 * Payment reconciliation end to end over real HTTP: the Accord server (real composition, SQL
 * storage, its reconciler running) and the customer kit with a host `PaymentReader`, each on its
 * own loopback port. A Payment action's `succeeded` completion leaves it `pending`; the service
 * then reads the payment back, verifies the signed observation and judges it — only a matching
 * one verifies the action, a mismatched one leaves it pending with the reason in its history.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { ClaimedExecution } from "../../core/customer/ClaimedExecution.ts"
import type { PaymentReading } from "../../core/customer/Reconciliation.ts"
import type { PaymentReconciliationRequest } from "../../core/protocol/messages/Reconciliation.ts"
import { chargedReading, paymentIntakeInput, providerReferenceOf, secrets } from "../core/connector/dispatch/support.ts"
import { request } from "../support/http.ts"
import { storageVariants } from "../support/storage.ts"
import { actionStatus, admin, bootService, connect, serveKit, waitFor } from "./support.ts"

/** The kit selling one-time purchases, reading payments through `reading`. */
const startKit = (
  storage: (typeof storageVariants)[number],
  serviceUrl: string,
  reading: (request: PaymentReconciliationRequest) => PaymentReading
) => {
  const reads: Array<string> = []
  return Effect.map(
    serveKit(storage, serviceUrl, {
      payment: { modes: ["one_time_purchase"], providerAccountId: "acct_1Nv0FGQ9RKHgCVdK", livemode: false },
      paymentReader: {
        read: async ({ request }) => {
          reads.push(request.actionRequestId)
          return reading(request)
        }
      },
      executor: {
        execute: async (request: ClaimedExecution) => ({
          outcome: "succeeded",
          providerReference: providerReferenceOf(request.actionRequestId),
          evidence: { entitlement: "addon_purchased", reasonCode: "charged", source: "provider_event" }
        }),
        lookup: async () => undefined
      }
    }),
    (served) => ({ ...served, reads })
  )
}

/** What the provider reports now: charged `charged` (default: the expected amount), read just now. */
const paid =
  (charged?: number) =>
  (request: PaymentReconciliationRequest): PaymentReading => ({
    ...chargedReading(request),
    ...(charged === undefined ? {} : { chargedAmountMinor: charged })
  })

const submit = (ws: string, accountId: string) =>
  Effect.map(
    request(`${ws}/action-requests`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(paymentIntakeInput(accountId))
    }),
    (created) => {
      assert.strictEqual(created.status, 202, JSON.stringify(created.json))
      return created.json.actionRequestId as string
    }
  )

/** The suite on one SQL storage variant; each variant runs from a test file of its own, in parallel. */
export const suite = (name: "pglite" | "postgres"): void => {
  const storage = storageVariants.find((v) => v.name === name)!
  describe.skipIf(!storage.available)(`payment reconciliation end to end (${storage.name})`, () => {
    it.live(
      "succeeded completion -> pending -> signed observation read back and matched -> verified",
      () =>
        Effect.gen(function* () {
          const service = yield* bootService({ storage })
          const kit = yield* startKit(storage, service.base, paid())
          yield* connect(service, kit.url, secrets)
          const id = yield* submit(service.ws, "acct_pay_1")
          const status = yield* waitFor(
            actionStatus(service, id),
            (json) => json?.state === "verified",
            `${id} to be verified`
          )
          const steps = status.history.map((h: { trigger: string; toState: string }) => `${h.trigger}:${h.toState}`)
          assert.deepStrictEqual(steps, [
            "intake:dispatching",
            "acknowledgement:accepted",
            "completion:pending",
            "reconciliation:verified"
          ])
          const completion = status.history[2]
          assert.strictEqual(completion.detail.unchanged, undefined)
          assert.strictEqual(completion.detail.reconciliation, "queued")
          const read = status.history[3].detail
          assert.strictEqual(read.verdict, "verified")
          assert.strictEqual(read.reason, "charge_matches")
          assert.strictEqual(read.outcome, "succeeded")
          assert.strictEqual(read.chargedAmountMinor, 4900)
          // The observed reference is the one the completion named, and only its hash is kept.
          assert.strictEqual(read.providerReferenceHash, completion.detail.providerReferenceHash)
          assert.match(read.providerEventIdHash, /^[0-9a-f]{64}$/)
          const text = JSON.stringify(status)
          assert.notInclude(text, "pi_raw_")
          assert.notInclude(text, `evt_${id.slice(0, 8)}`)
          assert.deepStrictEqual(kit.reads, [id])
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "an observation charging another amount leaves the action pending, with the reason, and is not read again",
      () =>
        Effect.gen(function* () {
          const service = yield* bootService({ storage })
          const kit = yield* startKit(storage, service.base, paid(4_800))
          yield* connect(service, kit.url, secrets)
          const id = yield* submit(service.ws, "acct_pay_2")
          const status = yield* waitFor(
            actionStatus(service, id),
            (json) => json?.history?.some((h: { trigger: string }) => h.trigger === "reconciliation") === true,
            `${id} to be judged`
          )
          assert.strictEqual(status.state, "pending")
          const read = status.history.find((h: { trigger: string }) => h.trigger === "reconciliation")
          assert.strictEqual(read.toState, "pending")
          assert.strictEqual(read.detail.verdict, "inconclusive")
          assert.strictEqual(read.detail.reason, "amount_mismatch")
          assert.strictEqual(read.detail.unchanged, "observation_inconclusive")
          yield* Effect.sleep("1500 millis")
          assert.deepStrictEqual(kit.reads, [id], "a definite mismatch is not read again")
          assert.strictEqual((yield* actionStatus(service, id)).state, "pending")
        }).pipe(Effect.scoped),
      90_000
    )

    it.live(
      "a payment still processing is read again until it settles",
      () =>
        Effect.gen(function* () {
          const service = yield* bootService({ storage })
          let answered = 0
          const kit = yield* startKit(storage, service.base, (request) => {
            answered++
            return answered === 1
              ? { ...paid()(request), outcome: "pending", paymentStatus: "processing" }
              : paid()(request)
          })
          yield* connect(service, kit.url, secrets)
          const id = yield* submit(service.ws, "acct_pay_3")
          const status = yield* waitFor(
            actionStatus(service, id),
            (json) => json?.state === "verified",
            `${id} to be verified`
          )
          assert.isAtLeast(kit.reads.length, 2)
          // A read that may still change writes no history entry; only the settled one does.
          assert.deepStrictEqual(
            status.history
              .filter((h: { trigger: string }) => h.trigger === "reconciliation")
              .map((h: { detail: { verdict: string } }) => h.detail.verdict),
            ["verified"]
          )
        }).pipe(Effect.scoped),
      90_000
    )
  })
}
