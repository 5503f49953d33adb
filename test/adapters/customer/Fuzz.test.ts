/**
 * Fuzzed edge of the customer kit: its one endpoint through the `node:http`
 * adapter on loopback, with generated bodies (unsigned, signed as they are, and signed executions
 * with one field mutated), signature headers, content types, methods and request targets. Every
 * answer is 2xx or 4xx with a JSON `error` for a refusal, a refused delivery claims no action, and
 * the endpoint keeps answering. Fixed seed, bounded runs.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as fc from "fast-check"
import { toNodeHandler } from "../../../adapters/customer/NodeHandler.ts"
import { makeCustomerHandler, maxRequestBytes } from "../../../core/customer/Handler.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { freshNonce, headerNames, importSigningKeys, sign } from "../../../core/protocol/Signing.ts"
import { executionBody, executionDelivery, secrets, storageLayer, workspaceId } from "../../support/customer.ts"
import { bodies, contentType, headerValue, methods, oneFieldMutated, seed, targets } from "../../support/fuzz.ts"
import { type RawReply, type RawRequest, rawRequest } from "../../support/rawHttp.ts"

/** Node's parser refuses a malformed request line with a bare 400 (or 431 when too long) before the kit. */
const isParserRefusal = (reply: RawReply) =>
  (reply.status === 400 || reply.status === 431) &&
  reply.headers["content-type"] === undefined &&
  reply.body.length === 0

const assertAnswer = (request: RawRequest, reply: RawReply) => {
  const what = `${request.method} ${String(request.target).slice(0, 120)} -> ${reply.status} ${reply.text.slice(0, 300)}`
  assert.isTrue(reply.status >= 200 && reply.status < 500, what)
  if (reply.status < 400 || isParserRefusal(reply) || request.method === "HEAD") return
  assert.isString(reply.json?.error, what)
}

describe("fuzzed edge of the customer kit", () => {
  it.live(
    "the kit's endpoint: never 5xx, a refused delivery claims no action",
    () =>
      Effect.gen(function* () {
        const runtime = ManagedRuntime.make(storageLayer())
        yield* Effect.addFinalizer(() => Effect.promise(() => runtime.dispose()))
        const keys = yield* Effect.promise(() => runtime.runPromise(importSigningKeys(secrets)))
        const handler = yield* Effect.promise(() => runtime.runPromise(makeCustomerHandler({ workspaceId, keys })))
        const server = createServer(toNodeHandler(handler.handle))
        yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)))
        yield* Effect.addFinalizer(() =>
          Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
        )
        const port = (server.address() as AddressInfo).port
        const base = yield* Effect.promise(() =>
          runtime.runPromise(executionBody("1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e"))
        )
        const stored = (id: unknown) =>
          typeof id !== "string"
            ? Promise.resolve(false)
            : runtime.runPromise(
                Effect.flatMap(ActionLedger, (ledger) => Effect.map(Effect.orDie(ledger.get(id)), Option.isSome))
              )
        const accepted = new Set<unknown>()

        const delivery = fc.oneof(
          // unsigned, with generated signature headers
          fc
            .tuple(
              bodies([base], [maxRequestBytes]),
              fc.record({
                [headerNames.version]: fc.option(fc.oneof(fc.constant("1"), headerValue), { nil: undefined }),
                [headerNames.timestamp]: fc.option(fc.oneof(fc.constant(new Date().toISOString()), headerValue), {
                  nil: undefined
                }),
                [headerNames.nonce]: fc.option(fc.oneof(fc.uuid(), headerValue), { nil: undefined }),
                [headerNames.signature]: fc.option(
                  fc.oneof(
                    fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => "v1=" + h),
                    headerValue
                  ),
                  { nil: undefined }
                ),
                [headerNames.idempotencyKey]: fc.option(headerValue, { nil: undefined })
              })
            )
            .map(([body, headers]) => ({ kind: "unsigned" as const, body, headers })),
          // any bytes, signed as they are: only the parser and the schema stand between them and a claim
          bodies([base], [maxRequestBytes]).map((body) => ({ kind: "signed" as const, body })),
          // a signed execution with one field mutated
          oneFieldMutated(base).map((body) => ({ kind: "mutated" as const, body }))
        )

        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(delivery, contentType, async (generated, type) => {
              let body: Uint8Array
              let headers: Record<string, string | undefined>
              let actionRequestId: unknown
              if (generated.kind === "unsigned") {
                body = generated.body
                headers = generated.headers
              } else if (generated.kind === "signed") {
                body = generated.body
                headers = {
                  ...(await runtime.runPromise(
                    Effect.flatMap(freshNonce, (nonce) => sign({ purpose: "dispatch_request", keys, body, nonce }))
                  ))
                }
              } else {
                const fresh = await runtime.runPromise(executionBody(globalThis.crypto.randomUUID()))
                const signed = await runtime.runPromise(
                  executionDelivery(keys, fresh, { mutate: (b) => applyMutation(base, generated.body, b) })
                )
                body = signed.body
                headers = signed.headers
                actionRequestId = JSON.parse(new TextDecoder().decode(body)).actionRequestId
              }
              const request: RawRequest = {
                method: "POST",
                target: "/connector",
                headers: Object.entries({ "content-type": type, ...headers }).flatMap(([k, v]) =>
                  v === undefined ? [] : [[k, v] as const]
                ),
                body
              }
              const reply = await rawRequest(port, request)
              assertAnswer(request, reply)
              if (reply.status < 300) accepted.add(actionRequestId)
              else if (!accepted.has(actionRequestId))
                assert.isFalse(await stored(actionRequestId), "a refused delivery claimed an action")
            }),
            { seed, numRuns: 150, endOnFailure: true }
          )
        )

        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              methods,
              targets(["/connector", "/"]),
              contentType,
              fc.option(bodies([base], [maxRequestBytes]), { nil: undefined }),
              async (method, target, type, body) => {
                const request: RawRequest = {
                  method,
                  target,
                  headers: type === undefined ? [] : [["content-type", type]],
                  ...(body === undefined ? {} : { body })
                }
                assertAnswer(request, await rawRequest(port, request))
              }
            ),
            { seed, numRuns: 150, endOnFailure: true }
          )
        )

        // Still serving: a fresh, correctly signed execution is accepted.
        const fresh = yield* Effect.promise(() =>
          runtime.runPromise(
            Effect.flatMap(executionBody(globalThis.crypto.randomUUID()), (b) => executionDelivery(keys, b))
          )
        )
        const reply = yield* Effect.promise(() =>
          rawRequest(port, {
            method: "POST",
            target: "/connector",
            headers: Object.entries(fresh.headers),
            body: fresh.body
          })
        )
        assert.strictEqual(reply.status, 202, reply.text)
      }).pipe(Effect.scoped),
    60_000
  )
})

/** `signed` (a fresh execution with its nonce) with the one field `mutated` changed from `base`. */
const applyMutation = (
  base: Record<string, unknown>,
  mutated: Record<string, unknown>,
  signed: Record<string, unknown>
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...signed }
  for (const key of new Set([...Object.keys(base), ...Object.keys(mutated)])) {
    if (!(key in mutated)) delete out[key]
    else if (mutated[key] !== base[key]) out[key] = mutated[key]
  }
  return out
}
