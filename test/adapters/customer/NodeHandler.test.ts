/**
 * The `node:http` adapter over real loopback HTTP: raw bytes from the stream, from an
 * `express.raw()`-style `Buffer` body, and refusals when the raw bytes are gone.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { toNodeHandler } from "../../../adapters/customer/NodeHandler.ts"
import { makeCustomerHandler } from "../../../core/customer/Handler.ts"
import { importSigningKeys } from "../../../core/protocol/Signing.ts"
import { executionBody, executionDelivery, secrets, storageLayer, workspaceId } from "../../support/customer.ts"

type Middleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void

const serve = async (middleware: Middleware) => {
  const runtime = ManagedRuntime.make(storageLayer())
  const { handler, keys } = await runtime.runPromise(
    Effect.gen(function* () {
      const keys = yield* importSigningKeys(secrets)
      return { keys, handler: yield* makeCustomerHandler({ workspaceId, keys }) }
    })
  )
  const node = toNodeHandler(handler.handle)
  const server = createServer((req, res) => middleware(req, res, () => node(req, res)))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/connector`
  const post = async (init?: { readonly method?: string; readonly body?: Uint8Array | string }) => {
    const delivery = await runtime.runPromise(
      Effect.flatMap(executionBody(globalThis.crypto.randomUUID()), (b) => executionDelivery(keys, b))
    )
    const response = await fetch(url, {
      method: init?.method ?? "POST",
      headers: delivery.headers,
      ...(init?.method === "GET" ? {} : { body: init?.body ?? delivery.body })
    })
    return { status: response.status, json: (await response.json()) as Record<string, unknown> }
  }
  return {
    post,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await runtime.dispose()
    }
  }
}

/** Reads the whole stream first, then calls `next` with `req.body` set by `parse`. */
const preRead =
  (parse: (bytes: Buffer) => unknown): Middleware =>
  (req, _res, next) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      ;(req as IncomingMessage & { body?: unknown }).body = parse(Buffer.concat(chunks))
      next()
    })
  }

describe("customer node:http handler", () => {
  it("reads the raw body from the stream; other methods get 405; oversized bodies 413", async () => {
    const kit = await serve((_req, _res, next) => next())
    try {
      const accepted = await kit.post()
      assert.strictEqual(accepted.status, 202)
      assert.strictEqual(accepted.json.state, "accepted")
      assert.deepStrictEqual(await kit.post({ method: "GET" }), { status: 405, json: { error: "method_not_allowed" } })
      assert.deepStrictEqual(await kit.post({ body: "x".repeat(70 * 1024) }), {
        status: 413,
        json: { error: "body_too_large" }
      })
    } finally {
      await kit.close()
    }
  })

  it("uses a Buffer body left by express.raw(); refuses when a JSON parser consumed the bytes", async () => {
    const raw = await serve(preRead((bytes) => bytes))
    try {
      assert.strictEqual((await raw.post()).status, 202)
    } finally {
      await raw.close()
    }
    const parsed = await serve(preRead((bytes) => JSON.parse(bytes.toString())))
    try {
      assert.deepStrictEqual(await parsed.post(), { status: 500, json: { error: "raw_body_unavailable" } })
    } finally {
      await parsed.close()
    }
  })
})
