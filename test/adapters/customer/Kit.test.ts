/**
 * `makeCustomerKit` as a host calls it: the options it refuses, and requests refused through its
 * Fetch handler.
 */
import { createHmac } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import {
  type CustomerKitOptions,
  CustomerKitOptionsError,
  type CustomerKitSettings,
  makeCustomerKit
} from "../../../adapters/customer/Kit.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import * as MemoryNonceStore from "../../../adapters/memory/NonceStore.ts"
import { importSigningKeys } from "../../../core/protocol/Signing.ts"
import { cipherLayer } from "../../support/storage.ts"
import {
  executionBody,
  executionDelivery,
  nextSecrets,
  secrets,
  startService,
  succeeded,
  until,
  verifyCompletion,
  workspaceId
} from "../../support/customer.ts"

const calls = { execute: 0, lookup: 0 }

const settings = (): CustomerKitSettings => ({
  workspaceId,
  serviceUrl: "http://127.0.0.1:9",
  allowInsecureServiceUrl: true,
  storage: MemoryStorage.layer.pipe(Layer.provideMerge(cipherLayer)),
  executor: {
    execute: async () => {
      calls.execute++
      throw new Error("not expected in this test")
    },
    lookup: async () => {
      calls.lookup++
      return undefined
    }
  }
})

const baseOptions = () => ({ ...settings(), secrets })

/** The error `makeCustomerKit` refused `options` with (a kit that starts is disposed). */
const refusal = (options: CustomerKitOptions) =>
  Effect.promise(() =>
    makeCustomerKit(options).then(
      async (kit) => {
        await kit.dispose()
        return undefined
      },
      (error: unknown) => error
    )
  )

const kit = (options: CustomerKitOptions) =>
  Effect.acquireRelease(
    Effect.promise(() => makeCustomerKit(options)),
    (kit) => Effect.promise(() => kit.dispose())
  )

describe("makeCustomerKit refuses", () => {
  it.effect("a secret under 32 characters, naming it but never its value", () =>
    Effect.gen(function* () {
      const short = "as_short_secret_value_0123456"
      const error = yield* refusal({ ...baseOptions(), secrets: { ...secrets, actionSigning: Redacted.make(short) } })
      assert.instanceOf(error, CustomerKitOptionsError)
      const refused = error as CustomerKitOptionsError
      assert.deepStrictEqual(refused.issues, [
        { path: "secrets.actionSigningSecret", message: "must be at least 32 characters" }
      ])
      assert.notInclude(refused.message, short)
    })
  )

  it.effect("two equal secrets", () =>
    Effect.gen(function* () {
      const error = yield* refusal({ ...baseOptions(), secrets: { ...secrets, completion: secrets.actionSigning } })
      assert.instanceOf(error, CustomerKitOptionsError)
      assert.deepStrictEqual((error as CustomerKitOptionsError).issues, [
        { path: "secrets.completionSecret", message: "must differ from actionSigningSecret" }
      ])
      assert.notInclude((error as Error).message, Redacted.value(secrets.actionSigning))
    })
  )

  it.effect("no revisions, a repeated revision, or a revision's bad secret, naming each by its path", () =>
    Effect.gen(function* () {
      const empty = yield* refusal({ ...settings(), revisions: [] })
      assert.deepStrictEqual(
        (empty as CustomerKitOptionsError).issues.map((issue) => issue.path),
        ["revisions"]
      )
      const bad = yield* refusal({
        ...settings(),
        revisions: [
          { revision: 3, secrets },
          { revision: 3, secrets: nextSecrets },
          { revision: -1, secrets: { ...nextSecrets, completion: nextSecrets.actionSigning } }
        ]
      })
      assert.instanceOf(bad, CustomerKitOptionsError)
      assert.deepStrictEqual(
        (bad as CustomerKitOptionsError).issues.map((issue) => issue.path),
        ["revisions[1].revision", "revisions[2].revision", "revisions[2].secrets.completionSecret"]
      )
    })
  )

  it.effect("an execute time limit that is not positive is refused", () =>
    Effect.gen(function* () {
      for (const executeTimeoutMillis of [0, -1, Number.NaN]) {
        const error = yield* refusal({ ...baseOptions(), worker: { executeTimeoutMillis } })
        assert.instanceOf(error, CustomerKitOptionsError)
        assert.deepStrictEqual(
          (error as CustomerKitOptionsError).issues.map((issue) => issue.path),
          ["worker.executeTimeoutMillis"]
        )
      }
    })
  )

  it.effect("a lease below a second is refused (the heartbeat beats every third of it)", () =>
    Effect.gen(function* () {
      const error = yield* refusal({ ...baseOptions(), worker: { executeLeaseMillis: 999, deliveryLeaseMillis: 0 } })
      assert.instanceOf(error, CustomerKitOptionsError)
      assert.deepStrictEqual(
        (error as CustomerKitOptionsError).issues.map((issue) => issue.path),
        ["worker.executeLeaseMillis", "worker.deliveryLeaseMillis"]
      )
    })
  )

  it.effect("a host call may outlast the lease: the heartbeat keeps it (60 s time limit, 10 s lease)", () =>
    Effect.gen(function* () {
      const error = yield* refusal({
        ...baseOptions(),
        worker: { executeTimeoutMillis: 60_000, executeLeaseMillis: 10_000 }
      })
      assert.isUndefined(error)
    })
  )
})

describe("the kit with two revisions (secret rotation)", () => {
  it.scoped("each action's completion is signed with the completion secret of the revision it was claimed under", () =>
    Effect.gen(function* () {
      const service = yield* Effect.acquireRelease(
        Effect.promise(() => startService()),
        (service) => Effect.promise(service.close)
      )
      const customer = yield* kit({
        ...settings(),
        serviceUrl: service.url,
        worker: { pollMillis: 50 },
        executor: {
          execute: async (request) => succeeded(request.actionRequestId),
          lookup: async () => undefined
        },
        revisions: [
          { revision: 3, secrets },
          { revision: 4, secrets: nextSecrets }
        ]
      })
      // Deliveries are signed, and completions verified, on the real clock the kit runs on.
      yield* TestClock.setTime(Date.now())
      const byAction = new Map<string, typeof secrets>()
      for (const pair of [secrets, nextSecrets]) {
        const body = yield* executionBody(globalThis.crypto.randomUUID())
        const delivery = yield* executionDelivery(yield* importSigningKeys(pair), body)
        const response = yield* Effect.promise(() =>
          customer.fetch(
            new Request("http://customer.example/connector", {
              method: "POST",
              headers: delivery.headers,
              body: delivery.body
            })
          )
        )
        assert.strictEqual(response.status, 202)
        byAction.set(body.actionRequestId, pair)
      }
      yield* Effect.promise(() => until(() => service.received.length >= 2, "both completions"))
      for (const received of service.received) {
        const actionRequestId = JSON.parse(new TextDecoder().decode(received.body)).actionRequestId as string
        const pair = byAction.get(actionRequestId)!
        const other = pair === secrets ? nextSecrets : secrets
        assert.isTrue((yield* Effect.either(verifyCompletion(received, pair)))._tag === "Right")
        assert.isTrue((yield* Effect.either(verifyCompletion(received, other)))._tag === "Left")
      }
    }).pipe(Effect.provide(Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer)))
  )
})

describe("the kit with revisions sharing their action signing secret", () => {
  it.scoped(
    "a completion the service refuses (401) is signed with the other revision's completion secret next time",
    () =>
      Effect.gen(function* () {
        // Revision 4 keeps revision 3's action signing secret and has a new completion secret; the
        // service has not activated 4 yet, so it accepts only revision 3's completion secret.
        const shared = { actionSigning: secrets.actionSigning, completion: nextSecrets.completion }
        const accepted = Redacted.value(secrets.completion)
        const signedWith = (
          delivery: { readonly headers: IncomingHttpHeaders; readonly body: Uint8Array },
          secret: string
        ) => {
          const prefix = `service-customer-action-v1\ncompletion\n${delivery.headers["x-service-customer-action-timestamp"]}\n${delivery.headers["x-service-customer-action-nonce"]}\n`
          const mac = createHmac("sha256", secret).update(prefix).update(delivery.body).digest("hex")
          return delivery.headers["x-service-customer-action-signature"] === `v1=${mac}`
        }
        const service = yield* Effect.acquireRelease(
          Effect.promise(() => startService({ accepts: (delivery) => signedWith(delivery, accepted) })),
          (service) => Effect.promise(service.close)
        )
        const customer = yield* kit({
          ...settings(),
          serviceUrl: service.url,
          worker: { pollMillis: 20, backoff: { baseMillis: 10, capMillis: 20 } },
          executor: {
            execute: async (request) => succeeded(request.actionRequestId),
            lookup: async () => undefined
          },
          revisions: [
            { revision: 3, secrets },
            { revision: 4, secrets: shared }
          ]
        })
        yield* TestClock.setTime(Date.now())
        const delivery = yield* executionDelivery(
          yield* importSigningKeys(secrets),
          yield* executionBody(globalThis.crypto.randomUUID())
        )
        const response = yield* Effect.promise(() =>
          customer.fetch(
            new Request("http://customer.example/connector", {
              method: "POST",
              headers: delivery.headers,
              body: delivery.body
            })
          )
        )
        assert.strictEqual(response.status, 202)
        yield* Effect.promise(() =>
          until(() => service.received.some((d) => signedWith(d, accepted)), "a completion the service accepts")
        )
        // The first attempt used the claimed revision (4, newest to verify); the retry the other one.
        assert.isTrue(signedWith(service.received[0]!, Redacted.value(nextSecrets.completion)))
        assert.strictEqual(new Set(service.received.map((d) => new TextDecoder().decode(d.body))).size, 1)
      }).pipe(Effect.provide(Layer.merge(NodeCrypto.layer, MemoryNonceStore.layer)))
  )
})

describe("the kit's Fetch handler", () => {
  it.scoped("refuses an execution timestamped more than 5 minutes ahead, and runs nothing", () =>
    Effect.gen(function* () {
      const customer = yield* kit(baseOptions())
      // The delivery is signed on a clock 6 minutes ahead of the kit's (real) clock.
      yield* TestClock.setTime(Date.now() + 6 * 60_000)
      const keys = yield* importSigningKeys(secrets)
      const delivery = yield* executionDelivery(keys, yield* executionBody(globalThis.crypto.randomUUID()))
      const response = yield* Effect.promise(() =>
        customer.fetch(
          new Request("http://customer.example/connector", {
            method: "POST",
            headers: delivery.headers,
            body: delivery.body
          })
        )
      )
      assert.strictEqual(response.status, 401)
      assert.deepStrictEqual(yield* Effect.promise(() => response.json()), { error: "future_timestamp" })
      assert.deepStrictEqual(calls, { execute: 0, lookup: 0 })
    }).pipe(Effect.provide(NodeCrypto.layer))
  )
})
