/**
 * `makeCustomerKit` as a host calls it: the options it refuses, and requests refused through its
 * Fetch handler.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as TestClock from "effect/TestClock"
import * as NodeCrypto from "../../adapters/crypto/NodeCrypto.ts"
import { type CustomerKitOptions, CustomerKitOptionsError, makeCustomerKit } from "../../adapters/customer/Kit.ts"
import * as MemoryStorage from "../../adapters/memory/Storage.ts"
import { importSigningKeys } from "../../core/Signing.ts"
import { cipherLayer } from "../support/storage.ts"
import { executionBody, executionDelivery, secrets, workspaceId } from "./support.ts"

const calls = { execute: 0, lookup: 0 }

const baseOptions = (): CustomerKitOptions => ({
  workspaceId,
  secrets,
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
  Effect.acquireRelease(Effect.promise(() => makeCustomerKit(options)), (kit) => Effect.promise(() => kit.dispose()))

describe("makeCustomerKit refuses", () => {
  it.effect("a secret under 32 characters, naming it but never its value", () =>
    Effect.gen(function*() {
      const short = "as_short_secret_value_0123456"
      const error = yield* refusal({ ...baseOptions(), secrets: { ...secrets, actionSigning: Redacted.make(short) } })
      assert.instanceOf(error, CustomerKitOptionsError)
      const refused = error as CustomerKitOptionsError
      assert.deepStrictEqual(refused.issues, [{ path: "secrets.actionSigningSecret", message: "must be at least 32 characters" }])
      assert.notInclude(refused.message, short)
    }))

  it.effect("two equal secrets", () =>
    Effect.gen(function*() {
      const error = yield* refusal({ ...baseOptions(), secrets: { ...secrets, completion: secrets.actionSigning } })
      assert.instanceOf(error, CustomerKitOptionsError)
      assert.deepStrictEqual((error as CustomerKitOptionsError).issues, [
        { path: "secrets.completionSecret", message: "must differ from actionSigningSecret" }
      ])
      assert.notInclude((error as Error).message, Redacted.value(secrets.actionSigning))
    }))

  it.effect("an execute time limit not shorter than the execution lease", () =>
    Effect.gen(function*() {
      const error = yield* refusal({ ...baseOptions(), worker: { executeTimeoutMillis: 60_000, executeLeaseMillis: 60_000 } })
      assert.instanceOf(error, CustomerKitOptionsError)
      assert.deepStrictEqual((error as CustomerKitOptionsError).issues.map((issue) => issue.path), ["worker.executeTimeoutMillis"])
    }))
})

describe("the kit's Fetch handler", () => {
  it.scoped("refuses an execution timestamped more than 5 minutes ahead, and runs nothing", () =>
    Effect.gen(function*() {
      const customer = yield* kit(baseOptions())
      // The delivery is signed on a clock 6 minutes ahead of the kit's (real) clock.
      yield* TestClock.setTime(Date.now() + 6 * 60_000)
      const keys = yield* importSigningKeys(secrets)
      const delivery = yield* executionDelivery(keys, yield* executionBody(globalThis.crypto.randomUUID()))
      const response = yield* Effect.promise(() =>
        customer.fetch(new Request("http://customer.example/connector", { method: "POST", headers: delivery.headers, body: delivery.body }))
      )
      assert.strictEqual(response.status, 401)
      assert.deepStrictEqual(yield* Effect.promise(() => response.json()), { error: "future_timestamp" })
      assert.deepStrictEqual(calls, { execute: 0, lookup: 0 })
    }).pipe(Effect.provide(NodeCrypto.layer)))
})
