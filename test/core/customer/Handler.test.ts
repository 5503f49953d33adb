import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { makeWebHandler } from "../../../adapters/customer/WebHandler.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import {
  type CustomerHandler,
  type CustomerHandlerOptions,
  makeCustomerHandler,
  maxRequestBytes
} from "../../../core/customer/Handler.ts"
import { deriveProviderIdempotencyKey } from "../../../core/protocol/Idempotency.ts"
import { Acknowledgement } from "../../../core/protocol/messages/Acknowledgement.ts"
import { HandshakeAck } from "../../../core/protocol/messages/Handshake.ts"
import type * as NonceStore from "../../../core/ports/NonceStore.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import { encodeBody, importSigningKeys, sign } from "../../../core/protocol/Signing.ts"
import { storageVariants } from "../../support/storage.ts"
import {
  connectionId,
  decoder,
  executionBody,
  executionDelivery,
  handshakeDelivery,
  jsonOf,
  nextSecrets,
  secrets,
  start,
  storageLayer,
  verifyResponse,
  workspaceId,
  wrongSecrets
} from "../../support/customer.ts"

/** Every outbox item and, for one key, the ledger record and its history. */
const stored = (providerIdempotencyKey: string) =>
  Effect.gen(function* () {
    const ledger = yield* ActionLedger
    const outbox = yield* Outbox
    const record = yield* ledger.getByIdempotencyKey(providerIdempotencyKey)
    const history = Option.isSome(record) ? yield* ledger.history(record.value.actionRequestId) : []
    const items = yield* outbox.lease({ owner: "probe", now: Number.MAX_SAFE_INTEGER, leaseMillis: 1, limit: 1000 })
    return { record, history, items }
  })

const setup = (options: Pick<CustomerHandlerOptions, "precheck" | "revision"> = {}) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(start)
    const keys = yield* importSigningKeys(secrets)
    const handler: CustomerHandler = yield* makeCustomerHandler({ workspaceId, keys, ...options })
    return { keys, handler }
  })

const run = <A, E>(effect: Effect.Effect<A, E, Crypto | NonceStore.NonceStore | ActionLedger | Outbox>) =>
  Effect.provide(effect, storageLayer())

const newId = () => globalThis.crypto.randomUUID()

describe("customer handler", () => {
  it.effect("answers a handshake with a signed handshake_ack echoing the challenge", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const delivery = yield* handshakeDelivery(keys)
        const response = yield* handler.handle(delivery)
        assert.strictEqual(response.status, 200)
        const ack = yield* verifyResponse(HandshakeAck, "handshake_response", keys, response)
        assert.deepStrictEqual(ack, {
          challenge: delivery.nonce,
          connectionId,
          protocolVersion: 1,
          status: "ready",
          type: "service.customer_action.handshake_ack",
          workspaceId
        })
        assert.notStrictEqual(response.headers["x-service-customer-action-nonce"], delivery.nonce)
      })
    )
  )

  it.effect("refuses a handshake whose challenge differs from the nonce", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const response = yield* handler.handle(yield* handshakeDelivery(keys, "another-challenge-0123456789"))
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(jsonOf(response), { error: "binding_mismatch" })
      })
    )
  )

  it.effect("accepts an execution: 202, signed ack, one record and one outbox item", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const delivery = yield* executionDelivery(keys, body)
        const response = yield* handler.handle(delivery)
        assert.strictEqual(response.status, 202)
        const ack = yield* verifyResponse(Acknowledgement, "dispatch_response", keys, response)
        assert.strictEqual(ack.state, "accepted")
        assert.strictEqual(ack.requestNonce, delivery.nonce)
        assert.strictEqual(ack.actionRequestId, body.actionRequestId)
        assert.strictEqual(ack.providerIdempotencyKey, body.providerIdempotencyKey)
        const { history, items, record } = yield* stored(body.providerIdempotencyKey)
        assert.isTrue(Option.isSome(record))
        assert.strictEqual(history.length, 1)
        assert.strictEqual(items.length, 1)
        assert.strictEqual(items[0]!.kind, "customer.execute")
        assert.deepStrictEqual(items[0]!.payload, { actionRequestId: body.actionRequestId })
        const request = Option.getOrThrow(record).request as Record<string, unknown>
        assert.isFalse("requestNonce" in request)
        assert.isFalse("requestedAt" in request)
      })
    )
  )

  it.effect("answers a retry (fresh nonce and timestamp) with the original state, creating nothing", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const first = yield* handler.handle(yield* executionDelivery(keys, body))
        assert.strictEqual(first.status, 202)
        yield* TestClock.adjust("30 seconds")
        const retry = yield* executionDelivery(keys, { ...body, requestedAt: "2026-11-22T10:16:00.000Z" })
        const response = yield* handler.handle(retry)
        assert.strictEqual(response.status, 202)
        const ack = yield* verifyResponse(Acknowledgement, "dispatch_response", keys, response)
        assert.strictEqual(ack.state, "accepted")
        assert.strictEqual(ack.requestNonce, retry.nonce)
        const { history, items } = yield* stored(body.providerIdempotencyKey)
        assert.strictEqual(history.length, 1)
        assert.strictEqual(items.length, 1)
      })
    )
  )

  it.effect("100 concurrent identical deliveries: all accepted, one record, one outbox item", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const deliveries = yield* Effect.all(Array.from({ length: 100 }, () => executionDelivery(keys, body)))
        const responses = yield* Effect.all(
          deliveries.map((d) => handler.handle(d)),
          { concurrency: "unbounded" }
        )
        for (const [i, response] of responses.entries()) {
          assert.strictEqual(response.status, 202)
          const ack = yield* verifyResponse(Acknowledgement, "dispatch_response", keys, response)
          assert.strictEqual(ack.state, "accepted")
          assert.strictEqual(ack.requestNonce, deliveries[i]!.nonce)
        }
        const { history, items, record } = yield* stored(body.providerIdempotencyKey)
        assert.isTrue(Option.isSome(record))
        assert.strictEqual(history.length, 1)
        assert.strictEqual(items.length, 1)
      })
    )
  )

  it.effect("a precheck rejection is acknowledged and recorded, and a retry gets the same rejection", () =>
    run(
      Effect.gen(function* () {
        let calls = 0
        const { handler, keys } = yield* setup({
          precheck: () => Effect.sync(() => (calls++ === 0 ? Option.some("trial_not_found") : Option.none()))
        })
        const body = yield* executionBody(newId())
        for (let attempt = 0; attempt < 2; attempt++) {
          const response = yield* handler.handle(yield* executionDelivery(keys, body))
          assert.strictEqual(response.status, 202)
          const ack = yield* verifyResponse(Acknowledgement, "dispatch_response", keys, response)
          assert.strictEqual(ack.state, "rejected")
          assert.strictEqual(ack.state === "rejected" ? ack.errorCode : undefined, "trial_not_found")
        }
        const { items, record } = yield* stored(body.providerIdempotencyKey)
        assert.strictEqual(Option.getOrThrow(record).state, "rejected")
        assert.strictEqual(items.length, 0)
      })
    )
  )

  it.effect("an invalid pre-check error code is acknowledged as rejected with errorCode rejected", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup({ precheck: () => Effect.succeed(Option.some("not a bounded code!")) })
        const body = yield* executionBody(newId())
        const response = yield* handler.handle(yield* executionDelivery(keys, body))
        assert.strictEqual(response.status, 202)
        const ack = yield* verifyResponse(Acknowledgement, "dispatch_response", keys, response)
        assert.strictEqual(ack.state, "rejected")
        assert.strictEqual(ack.state === "rejected" ? ack.errorCode : undefined, "rejected")
        const { items, record } = yield* stored(body.providerIdempotencyKey)
        assert.deepStrictEqual(Option.getOrThrow(record).acknowledgement, { state: "rejected", errorCode: "rejected" })
        assert.strictEqual(items.length, 0)
      })
    )
  )

  it.effect("records a claimed execution under the configured connection revision", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup({ revision: 3 })
        const body = yield* executionBody(newId())
        assert.strictEqual((yield* handler.handle(yield* executionDelivery(keys, body))).status, 202)
        assert.strictEqual(Option.getOrThrow((yield* stored(body.providerIdempotencyKey)).record).revision, 3)
      })
    )
  )

  it.effect("the same key with other bindings is refused (409 request_mismatch, unsigned) and changes nothing", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        assert.strictEqual((yield* handler.handle(yield* executionDelivery(keys, body))).status, 202)
        const ledger = yield* ActionLedger
        const before = yield* ledger.getByIdempotencyKey(body.providerIdempotencyKey)
        const changes: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
          ["accountId", { accountId: "acct_43" }],
          ["action", { action: { ...(body.action as object), key: "extend_trial_30" } }],
          ["actor", { actor: { ...(body.actor as object), subjectId: "user_8" } }],
          ["binding", { binding: { ...(body.binding as object), offerId: newId() } }]
        ]
        for (const [field, change] of changes) {
          const response = yield* handler.handle(yield* executionDelivery(keys, { ...body, ...change }))
          assert.strictEqual(response.status, 409, field)
          assert.deepStrictEqual(jsonOf(response), { error: "request_mismatch", fields: [field] })
          assert.isUndefined(response.headers["x-service-customer-action-signature"])
        }
        const after = yield* stored(body.providerIdempotencyKey)
        assert.deepStrictEqual(after.record, before)
        assert.strictEqual(after.history.length, 1)
        assert.strictEqual(after.items.length, 1)
        // The original request is still answered as before.
        const retry = yield* handler.handle(yield* executionDelivery(keys, body))
        assert.strictEqual(retry.status, 202)
        assert.strictEqual((yield* verifyResponse(Acknowledgement, "dispatch_response", keys, retry)).state, "accepted")
      })
    )
  )

  it.effect("a replayed nonce is refused and creates nothing more", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const delivery = yield* executionDelivery(keys, body)
        assert.strictEqual((yield* handler.handle(delivery)).status, 202)
        const replay = yield* handler.handle(delivery)
        assert.strictEqual(replay.status, 401)
        assert.deepStrictEqual(jsonOf(replay), { error: "replayed_nonce" })
        const { history, items } = yield* stored(body.providerIdempotencyKey)
        assert.strictEqual(history.length, 1)
        assert.strictEqual(items.length, 1)
      })
    )
  )

  it.effect("a nonce used by a handshake can't be replayed as an execution; nothing stored", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const handshake = yield* handshakeDelivery(keys)
        assert.strictEqual((yield* handler.handle(handshake)).status, 200)
        const body = yield* executionBody(newId())
        const bytes = encodeBody({ ...body, requestNonce: handshake.nonce })
        const headers = yield* sign({ purpose: "dispatch_request", keys, body: bytes, nonce: handshake.nonce })
        const response = yield* handler.handle({
          headers: { ...headers, "x-service-customer-action-idempotency-key": body.providerIdempotencyKey },
          body: bytes
        })
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(jsonOf(response), { error: "replayed_nonce" })
        const { items, record } = yield* stored(body.providerIdempotencyKey)
        assert.isTrue(Option.isNone(record))
        assert.strictEqual(items.length, 0)
      })
    )
  )

  it.effect("a stale timestamp is refused", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const delivery = yield* executionDelivery(keys, body)
        yield* TestClock.adjust("6 minutes")
        const response = yield* handler.handle(delivery)
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(jsonOf(response), { error: "stale_timestamp" })
        assert.isTrue(Option.isNone((yield* stored(body.providerIdempotencyKey)).record))
      })
    )
  )

  it.effect("a tampered body is refused as invalid_signature", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const delivery = yield* executionDelivery(keys, body)
        const tampered = encodeBody({ ...JSON.parse(decoder.decode(delivery.body)), accountId: "acct_43" })
        const response = yield* handler.handle({ ...delivery, body: tampered })
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(jsonOf(response), { error: "invalid_signature" })
        assert.isTrue(Option.isNone((yield* stored(body.providerIdempotencyKey)).record))
      })
    )
  )

  it.effect("a message signed with another secret is refused", () =>
    run(
      Effect.gen(function* () {
        const { handler } = yield* setup()
        const otherKeys = yield* importSigningKeys(wrongSecrets)
        const body = yield* executionBody(newId())
        const response = yield* handler.handle(yield* executionDelivery(otherKeys, body))
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(jsonOf(response), { error: "invalid_signature" })
        const handshake = yield* handler.handle(yield* handshakeDelivery(otherKeys))
        assert.strictEqual(handshake.status, 401)
        assert.isTrue(Option.isNone((yield* stored(body.providerIdempotencyKey)).record))
      })
    )
  )

  it.effect("a mismatched idempotency header is refused and nothing is stored", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const otherKey = yield* deriveProviderIdempotencyKey(workspaceId, newId())
        const response = yield* handler.handle(yield* executionDelivery(keys, body, { idempotencyKey: otherKey }))
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(jsonOf(response), { error: "idempotency_key_mismatch" })
        const { items, record } = yield* stored(body.providerIdempotencyKey)
        assert.isTrue(Option.isNone(record))
        assert.strictEqual(items.length, 0)
      })
    )
  )

  it.effect("a missing idempotency header is refused and nothing is stored", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const response = yield* handler.handle(yield* executionDelivery(keys, body, { idempotencyKey: null }))
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(jsonOf(response), { error: "idempotency_key_mismatch" })
        const { items, record } = yield* stored(body.providerIdempotencyKey)
        assert.isTrue(Option.isNone(record))
        assert.strictEqual(items.length, 0)
      })
    )
  )

  it.effect(
    "a body key (equal to the header) that is not the locally derived key is refused and nothing is stored",
    () =>
      run(
        Effect.gen(function* () {
          const { handler, keys } = yield* setup()
          const body = yield* executionBody(newId())
          const otherKey = yield* deriveProviderIdempotencyKey(workspaceId, newId())
          const response = yield* handler.handle(
            yield* executionDelivery(keys, { ...body, providerIdempotencyKey: otherKey })
          )
          assert.strictEqual(response.status, 401)
          assert.deepStrictEqual(jsonOf(response), { error: "idempotency_key_mismatch" })
          for (const key of [body.providerIdempotencyKey, otherKey]) {
            const { items, record } = yield* stored(key)
            assert.isTrue(Option.isNone(record))
            assert.strictEqual(items.length, 0)
          }
        })
      )
  )

  it.effect("an extra field is refused as invalid_body without echoing values, and nothing is stored", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const body = yield* executionBody(newId())
        const response = yield* handler.handle(
          yield* executionDelivery(keys, body, { mutate: (b) => ({ ...b, extra: "secret-value-xyz" }) })
        )
        assert.strictEqual(response.status, 400)
        const json = jsonOf(response)
        assert.strictEqual(json.error, "invalid_body")
        assert.isTrue(json.issues.some((issue: { path: string }) => issue.path === "extra"))
        assert.notInclude(decoder.decode(response.body), "secret-value-xyz")
        const { items, record } = yield* stored(body.providerIdempotencyKey)
        assert.isTrue(Option.isNone(record))
        assert.strictEqual(items.length, 0)
      })
    )
  )

  it.effect("an unknown or malformed type is unsupported_type", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        for (const raw of [{ type: "service.customer_action.other" }, { type: "toString" }, [1], "x"]) {
          const bytes = encodeBody(raw)
          const headers = yield* sign({ purpose: "dispatch_request", keys, body: bytes })
          const response = yield* handler.handle({ headers, body: bytes })
          assert.strictEqual(response.status, 400)
          assert.deepStrictEqual(jsonOf(response), { error: "unsupported_type" })
        }
        const notJson = yield* handler.handle({
          headers: { "content-type": "application/json" },
          body: new TextEncoder().encode("{")
        })
        assert.strictEqual(notJson.status, 400)
      })
    )
  )

  it.effect("a signed message sent with a content type other than JSON is refused with 415", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const bytes = encodeBody({ type: "service.customer_action.handshake" })
        const signed = yield* sign({ purpose: "handshake_request", keys, body: bytes })
        for (const contentType of ["text/plain", "application/json; charset=latin1", undefined]) {
          const headers: Record<string, string> = { ...signed }
          if (contentType === undefined) delete headers["content-type"]
          else headers["content-type"] = contentType
          const response = yield* handler.handle({ headers, body: bytes })
          assert.strictEqual(response.status, 415)
          assert.deepStrictEqual(jsonOf(response), { error: "unsupported_media_type" })
        }
      })
    )
  )

  it.effect(
    "a correctly signed execution whose accountId cannot be stored or breaks the identifier rule gets a 4xx, never a 5xx",
    () =>
      run(
        Effect.gen(function* () {
          const { handler, keys } = yield* setup()
          for (const [accountId, error] of [
            ["acct\u0000x", "unstorable_text"],
            ["acct\ud800", "unstorable_text"],
            ["acct\u0001x", "invalid_body"],
            ["acct\u202ex", "invalid_body"],
            ["acct\u200bx", "invalid_body"]
          ] as const) {
            const body = { ...(yield* executionBody(newId())), accountId }
            const response = yield* handler.handle(yield* executionDelivery(keys, body))
            assert.strictEqual(response.status, 400)
            assert.strictEqual((jsonOf(response) as { error: string }).error, error)
            const { record } = yield* stored(body.providerIdempotencyKey)
            assert.isTrue(Option.isNone(record))
          }
        })
      )
  )

  it.effect(
    "a duplicate key in an authentic request is refused with 400 duplicate_key after verification; unsigned, 401",
    () =>
      run(
        Effect.gen(function* () {
          const { handler, keys } = yield* setup()
          const bytes = new TextEncoder().encode(
            `{"type":"service.customer_action.execute","accountId":"a","accountId":"b"}`
          )
          const headers = yield* sign({ purpose: "dispatch_request", keys, body: bytes })
          const response = yield* handler.handle({ headers, body: bytes })
          assert.strictEqual(response.status, 400)
          assert.deepStrictEqual(jsonOf(response), { error: "duplicate_key" })
          // "Verify the raw body, then parse": a body nobody signed is refused for its signature first.
          const forged = yield* handler.handle({
            headers: { ...headers, "x-service-customer-action-signature": "v1=" + "0".repeat(64) },
            body: bytes
          })
          assert.strictEqual(forged.status, 401)
        })
      )
  )

  it.effect("text that cannot be stored (a NUL in accountId) is refused with 400, not a storage failure", () =>
    run(
      Effect.gen(function* () {
        const { handler, keys } = yield* setup()
        const bytes = new TextEncoder().encode(`{"type":"service.customer_action.execute","accountId":"acct\\u0000x"}`)
        const headers = yield* sign({ purpose: "dispatch_request", keys, body: bytes })
        const response = yield* handler.handle({ headers, body: bytes })
        assert.strictEqual(response.status, 400)
        assert.deepStrictEqual(jsonOf(response), { error: "unstorable_text" })
      })
    )
  )
})

describe("customer handler with several revisions (secret rotation)", () => {
  it.effect(
    "an execution is verified with the pair it was signed with, answered with it and recorded under its revision",
    () =>
      run(
        Effect.gen(function* () {
          yield* TestClock.setTime(start)
          const current = yield* importSigningKeys(secrets)
          const next = yield* importSigningKeys(nextSecrets)
          const handler = yield* makeCustomerHandler({
            workspaceId,
            revisions: [
              { revision: 3, keys: current },
              { revision: 4, keys: next }
            ]
          })
          for (const [keys, other, revision] of [
            [current, next, 3],
            [next, current, 4]
          ] as const) {
            const body = yield* executionBody(newId())
            const response = yield* handler.handle(yield* executionDelivery(keys, body))
            assert.strictEqual(response.status, 202)
            assert.strictEqual(
              (yield* verifyResponse(Acknowledgement, "dispatch_response", keys, response)).state,
              "accepted"
            )
            assert.isTrue(
              (yield* Effect.either(verifyResponse(Acknowledgement, "dispatch_response", other, response)))._tag ===
                "Left"
            )
            assert.strictEqual(
              Option.getOrThrow((yield* stored(body.providerIdempotencyKey)).record).revision,
              revision
            )
          }
          const body = yield* executionBody(newId())
          const refused = yield* handler.handle(yield* executionDelivery(yield* importSigningKeys(wrongSecrets), body))
          assert.strictEqual(refused.status, 401)
          assert.deepStrictEqual(jsonOf(refused), { error: "invalid_signature" })
        })
      )
  )
})

describe("customer web handler", () => {
  it("serves an execution through a Fetch Request", async () => {
    const layer = storageLayer()
    const web = await makeWebHandler(layer, { workspaceId, secrets })
    try {
      const client = Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer)
      const { body, delivery, keys } = await Effect.runPromise(
        Effect.provide(
          Effect.gen(function* () {
            const keys = yield* importSigningKeys(secrets)
            const body = yield* executionBody(newId())
            return { keys, body, delivery: yield* executionDelivery(keys, body) }
          }),
          client
        )
      )
      const response = await web.fetch(
        new Request("https://customer.example/accord", {
          method: "POST",
          headers: delivery.headers,
          body: delivery.body
        })
      )
      assert.strictEqual(response.status, 202)
      const bytes = new Uint8Array(await response.arrayBuffer())
      const ack = await Effect.runPromise(
        Effect.provide(
          verifyResponse(Acknowledgement, "dispatch_response", keys, { headers: response.headers, body: bytes }),
          client
        )
      )
      assert.strictEqual(ack.state, "accepted")
      assert.strictEqual(ack.requestNonce, delivery.nonce)
      assert.strictEqual(ack.actionRequestId, body.actionRequestId)
      const get = await web.fetch(new Request("https://customer.example/accord"))
      assert.strictEqual(get.status, 405)
    } finally {
      await web.dispose()
    }
  })
})

describe("customer web handler body limit", () => {
  it("answers 413 past 64 KiB, and stops reading an endless stream there", async () => {
    const web = await makeWebHandler(storageLayer(), { workspaceId, secrets })
    try {
      const post = (body: Uint8Array | ReadableStream<Uint8Array>) =>
        web.fetch(
          new Request("https://customer.example/accord", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
            duplex: "half"
          } as RequestInit)
        )
      const over = await post(new Uint8Array(maxRequestBytes + 1))
      assert.strictEqual(over.status, 413)
      assert.deepStrictEqual(await over.json(), { error: "body_too_large" })
      // At the limit the body is read and handled (not JSON, so refused as unsupported).
      assert.strictEqual((await post(new Uint8Array(maxRequestBytes))).status, 400)
      let pulled = 0
      let cancelled = false
      const endless = new ReadableStream<Uint8Array>({
        pull: (controller) => {
          pulled += 16 * 1024
          controller.enqueue(new Uint8Array(16 * 1024))
        },
        cancel: () => void (cancelled = true)
      })
      const streamed = await post(endless)
      assert.strictEqual(streamed.status, 413)
      assert.isTrue(cancelled)
      assert.isAtMost(pulled, maxRequestBytes + 3 * 16 * 1024)
    } finally {
      await web.dispose()
    }
  })
})

for (const variant of storageVariants.filter((v) => v.name !== "memory")) {
  describe.skipIf(!variant.available)(`customer handler on ${variant.name}`, () => {
    it.effect(
      "concurrent deliveries and a later retry create one record and one outbox item",
      () =>
        Effect.provide(
          Effect.gen(function* () {
            const { handler, keys } = yield* setup()
            const body = yield* executionBody(newId())
            const deliveries = yield* Effect.all(Array.from({ length: 20 }, () => executionDelivery(keys, body)))
            const responses = yield* Effect.all(
              deliveries.map((d) => handler.handle(d)),
              { concurrency: "unbounded" }
            )
            for (const response of [...responses, yield* handler.handle(yield* executionDelivery(keys, body))]) {
              assert.strictEqual(response.status, 202)
              const ack = yield* verifyResponse(Acknowledgement, "dispatch_response", keys, response)
              assert.strictEqual(ack.state, "accepted")
            }
            const ledger = yield* ActionLedger
            const outbox = yield* Outbox
            const record = Option.getOrThrow(yield* ledger.getByIdempotencyKey(body.providerIdempotencyKey))
            assert.strictEqual((yield* ledger.history(record.actionRequestId)).length, 1)
            assert.isTrue(Option.isSome(yield* outbox.findByKey("customer.execute", body.providerIdempotencyKey)))
          }),
          Layer.merge(variant.layer(), NodeCrypto.layer)
        ),
      { timeout: 60_000 }
    )
  })
}
