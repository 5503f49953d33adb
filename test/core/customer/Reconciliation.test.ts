/**
 * The kit's handshake options (revision, payment capability proof) and payment reconciliation
 * reads through a host `PaymentReader`.
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { type CustomerHandlerSettings, makeCustomerHandler } from "../../../core/customer/Handler.ts"
import * as PaymentReader from "../../../core/customer/Reconciliation.ts"
import { HandshakeAck } from "../../../core/protocol/messages/Handshake.ts"
import { PaymentObservation } from "../../../core/protocol/messages/Reconciliation.ts"
import { encodeBody, freshNonce, importSigningKeys, sign, type SigningKeys } from "../../../core/protocol/Signing.ts"
import {
  connectionId,
  executionBody,
  executionDelivery,
  handshakeDelivery,
  jsonOf,
  nextSecrets,
  secrets,
  start,
  storageLayer,
  verifyResponse,
  workspaceId
} from "../../support/customer.ts"

const setup = (options: Omit<CustomerHandlerSettings, "workspaceId"> & { readonly revision?: number } = {}) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(start)
    const keys = yield* importSigningKeys(secrets)
    const handler = yield* makeCustomerHandler({ workspaceId, keys, ...options })
    return { keys, handler }
  })

const withRevisionHeader = <D extends { readonly headers: Record<string, string> }>(
  delivery: D,
  revision: string
): D => ({
  ...delivery,
  headers: { ...delivery.headers, "x-service-customer-action-connection-revision": revision }
})

describe("customer handshake options", () => {
  it.effect("revision 0 by default: a revision header of 0 is answered, another is refused 409", () =>
    Effect.gen(function* () {
      const { handler, keys } = yield* setup()
      const zero = yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(keys), "0"))
      assert.strictEqual(zero.status, 200)
      const other = yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(keys), "1"))
      assert.strictEqual(other.status, 409)
      assert.deepStrictEqual(jsonOf(other), { error: "revision_mismatch" })
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("a configured revision is required to match when the header is present", () =>
    Effect.gen(function* () {
      const { handler, keys } = yield* setup({ revision: 3 })
      assert.strictEqual((yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(keys), "3"))).status, 200)
      assert.strictEqual((yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(keys), "0"))).status, 409)
      assert.strictEqual((yield* handler.handle(yield* handshakeDelivery(keys))).status, 200)
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("paymentCapabilities only when payment is configured, with the account hash and revision", () =>
    Effect.gen(function* () {
      const plain = yield* setup()
      const bare = yield* verifyResponse(
        HandshakeAck,
        "handshake_response",
        plain.keys,
        yield* plain.handler.handle(yield* handshakeDelivery(plain.keys))
      )
      assert.isUndefined(bare.paymentCapabilities)

      const { handler, keys } = yield* setup({
        revision: 2,
        payment: {
          modes: ["one_time_purchase", "setup_only"],
          providerAccountId: "acct_1Nv0FGQ9RKHgCVdK",
          livemode: false
        }
      })
      const delivery = yield* handshakeDelivery(keys)
      const ack = yield* verifyResponse(HandshakeAck, "handshake_response", keys, yield* handler.handle(delivery))
      assert.deepStrictEqual(ack, {
        challenge: delivery.nonce,
        connectionId,
        protocolVersion: 1,
        status: "ready",
        type: "service.customer_action.handshake_ack",
        workspaceId,
        paymentCapabilities: {
          connectedAccountReferenceHash: createHash("sha256")
            .update(JSON.stringify("acct_1Nv0FGQ9RKHgCVdK"))
            .digest("hex"),
          connectionRevision: 2,
          livemode: false,
          modes: ["one_time_purchase", "setup_only"]
        }
      })
    }).pipe(Effect.provide(storageLayer()))
  )
})

describe("customer handshake with several revisions (secret rotation)", () => {
  const rotating = Effect.gen(function* () {
    yield* TestClock.setTime(start)
    const current = yield* importSigningKeys(secrets)
    const next = yield* importSigningKeys(nextSecrets)
    const handler = yield* makeCustomerHandler({
      workspaceId,
      revisions: [
        { revision: 3, keys: current },
        { revision: 4, keys: next }
      ],
      payment: { modes: ["setup_only"], providerAccountId: "acct_1Nv0FGQ9RKHgCVdK", livemode: false }
    })
    return { handler, current, next }
  })
  const revisionOf = (keys: SigningKeys, response: Parameters<typeof verifyResponse>[3]) =>
    Effect.map(
      verifyResponse(HandshakeAck, "handshake_response", keys, response),
      (ack) => ack.paymentCapabilities?.connectionRevision
    )

  it.effect("the revision header selects the pair that verifies and signs, and the proof's revision", () =>
    Effect.gen(function* () {
      const { current, handler, next } = yield* rotating
      const four = yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(next), "4"))
      assert.strictEqual(four.status, 200)
      assert.strictEqual(yield* revisionOf(next, four), 4)
      assert.isTrue(
        (yield* Effect.either(revisionOf(current, four)))._tag === "Left",
        "not signed with revision 3's secret"
      )
      const three = yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(current), "3"))
      assert.strictEqual(three.status, 200)
      assert.strictEqual(yield* revisionOf(current, three), 3)
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("a handshake signed with another revision's secret than its header names is refused", () =>
    Effect.gen(function* () {
      const { current, handler } = yield* rotating
      const response = yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(current), "4"))
      assert.strictEqual(response.status, 401)
      assert.deepStrictEqual(jsonOf(response), { error: "invalid_signature" })
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("a revision not configured is refused 409 after verification", () =>
    Effect.gen(function* () {
      const { handler, next } = yield* rotating
      const response = yield* handler.handle(withRevisionHeader(yield* handshakeDelivery(next), "5"))
      assert.strictEqual(response.status, 409)
      assert.deepStrictEqual(jsonOf(response), { error: "revision_mismatch" })
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("without the header, the pair that verifies answers, with its revision in the proof", () =>
    Effect.gen(function* () {
      const { current, handler } = yield* rotating
      const response = yield* handler.handle(yield* handshakeDelivery(current))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(yield* revisionOf(current, response), 3)
    }).pipe(Effect.provide(storageLayer()))
  )
})

const hex = (c: string) => c.repeat(64)

/** A signed reconciliation request for the action behind `execution`, as the service sends it. */
const reconciliationDelivery = (
  keys: SigningKeys,
  execution: { readonly actionRequestId: string; readonly providerIdempotencyKey: string },
  mutate: (body: Record<string, unknown>) => Record<string, unknown> = (b) => b
) =>
  Effect.gen(function* () {
    const nonce = yield* freshNonce
    const body = {
      type: "service.customer_action.payment_reconciliation",
      protocolVersion: 1,
      workspaceId,
      accountId: "acct_42",
      actionRequestId: execution.actionRequestId,
      actionVersionId: "7b9d1f3a-5c7e-4a9b-8d1f-3a5c7e9b1d3f",
      offerVersionId: "8c0e2a4b-6d8f-4b0c-9e2a-4b6d8f0c2e4a",
      mode: "one_time_purchase",
      providerIdempotencyKey: execution.providerIdempotencyKey,
      providerReferenceHash: hex("a"),
      requestNonce: nonce,
      expected: { amountMinor: 1900, currency: "usd", priceReferenceHash: hex("b") },
      requestedAt: "2026-11-22T10:15:30.000Z"
    }
    const bytes = encodeBody(mutate(body))
    const headers = yield* sign({ purpose: "payment_reconciliation_request", keys, body: bytes, nonce })
    return { nonce, request: body, headers: { ...headers } as Record<string, string>, body: bytes }
  })

const reading: PaymentReader.PaymentReading = {
  providerReference: "pi_3Nv0FGQ9RKHgCVdK",
  eventId: "evt_1",
  eventSignatureVerified: true,
  stateReadAt: "2026-11-22T10:16:00.000Z",
  customerBound: true,
  intent: "payment",
  paymentStatus: "succeeded",
  subscriptionState: null,
  invoicePaid: null,
  methodAttached: true,
  chargedAmountMinor: 1900,
  refundedAmountMinor: 0,
  outcome: "succeeded"
}

/** A handler with a memory reader and one claimed execution. */
const claimed = (options: Parameters<typeof setup>[0] = {}) =>
  Effect.gen(function* () {
    const { handler, keys } = yield* setup(options)
    const execution = yield* executionBody(globalThis.crypto.randomUUID())
    assert.strictEqual((yield* handler.handle(yield* executionDelivery(keys, execution))).status, 202)
    return { handler, keys, execution }
  })

describe("customer payment reconciliation", () => {
  it.effect("answers 200 with a signed observation echoing every binding, the nonce and the expected terms", () =>
    Effect.gen(function* () {
      const reader = PaymentReader.makeMemory()
      const { execution, handler, keys } = yield* claimed({ paymentReader: reader })
      reader.set(execution.providerIdempotencyKey, reading)
      const delivery = yield* reconciliationDelivery(keys, execution)
      const response = yield* handler.handle(delivery)
      assert.strictEqual(response.status, 200)
      const observation = yield* verifyResponse(PaymentObservation, "payment_reconciliation_response", keys, response)
      const { requestedAt: _requestedAt, type: _type, ...bindings } = delivery.request
      assert.deepStrictEqual(observation, {
        ...bindings,
        type: "service.customer_action.payment_observation",
        ...reading
      } as never)
      assert.strictEqual(observation.requestNonce, delivery.nonce)
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("with no reading the memory reader reports unknown, read now", () =>
    Effect.gen(function* () {
      const { execution, handler, keys } = yield* claimed({ paymentReader: PaymentReader.makeMemory() })
      const response = yield* handler.handle(yield* reconciliationDelivery(keys, execution))
      const observation = yield* verifyResponse(PaymentObservation, "payment_reconciliation_response", keys, response)
      assert.strictEqual(observation.outcome, "unknown")
      assert.strictEqual(observation.stateReadAt, new Date(start).toISOString())
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("refuses an unknown key 404, another action or account 409, a nonce mismatch 401, no reader 501", () =>
    Effect.gen(function* () {
      const { execution, handler, keys } = yield* claimed({ paymentReader: PaymentReader.makeMemory() })
      const status = (mutate: (b: Record<string, unknown>) => Record<string, unknown>) =>
        Effect.flatMap(reconciliationDelivery(keys, execution, mutate), (d) =>
          Effect.map(handler.handle(d), (r) => [r.status, jsonOf(r).error])
        )
      assert.deepStrictEqual(yield* status((b) => ({ ...b, providerIdempotencyKey: "pva_" + hex("c") })), [
        404,
        "unknown_action"
      ])
      assert.deepStrictEqual(yield* status((b) => ({ ...b, accountId: "acct_other" })), [409, "binding_mismatch"])
      assert.deepStrictEqual(yield* status((b) => ({ ...b, actionRequestId: globalThis.crypto.randomUUID() })), [
        409,
        "binding_mismatch"
      ])
      assert.deepStrictEqual(yield* status((b) => ({ ...b, requestNonce: "another-nonce-0123456789abcdef" })), [
        401,
        "binding_mismatch"
      ])
      assert.deepStrictEqual(yield* status((b) => ({ ...b, extra: 1 })), [400, "invalid_body"])

      const noReader = yield* claimed()
      const response = yield* noReader.handler.handle(yield* reconciliationDelivery(noReader.keys, noReader.execution))
      assert.deepStrictEqual([response.status, jsonOf(response).error], [501, "reconciliation_unsupported"])
    }).pipe(Effect.provide(storageLayer()))
  )

  it.effect("a request signed for another purpose is refused", () =>
    Effect.gen(function* () {
      const { execution, handler, keys } = yield* claimed({ paymentReader: PaymentReader.makeMemory() })
      const delivery = yield* reconciliationDelivery(keys, execution)
      const resigned = yield* sign({ purpose: "dispatch_request", keys, body: delivery.body, nonce: delivery.nonce })
      const response = yield* handler.handle({ headers: { ...resigned }, body: delivery.body })
      assert.deepStrictEqual([response.status, jsonOf(response).error], [401, "invalid_signature"])
    }).pipe(Effect.provide(storageLayer()))
  )
})
