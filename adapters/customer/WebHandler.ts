/**
 * The customer handler as a Fetch API handler (`(request: Request) => Promise<Response>`), for any
 * runtime or framework that speaks `Request`/`Response` (Node via adapters, Bun, Deno, edge).
 *
 * The body is read as bytes, never with `text()`: signatures cover the raw bytes (`text()` strips a
 * byte-order mark). At most `maxRequestBytes` (64 KiB) are read: a larger declared `content-length`
 * is refused before reading, a larger stream as soon as it passes the limit (413 `body_too_large`).
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { ActionLedger } from "../../core/ports/ActionLedger.ts"
import type { Crypto } from "../../core/ports/Crypto.ts"
import {
  type CustomerHandler,
  type CustomerHandlerSettings,
  makeCustomerHandler,
  maxRequestBytes
} from "../../core/customer/Handler.ts"
import type { NonceStore } from "../../core/ports/NonceStore.ts"
import { type ConnectorSecrets, encodeBody, importSigningKeys } from "../../core/protocol/Signing.ts"

/** A Fetch-API handler (Hono, Bun, Deno, workers): one `Request` in, one `Response` out. */
export type WebHandler = (request: Request) => Promise<Response>

const json = (status: number, body: unknown): Response =>
  new Response(encodeBody(body), { status, headers: { "content-type": "application/json" } })

/** The body's bytes, or `undefined` past `maxBytes` (the rest is not read). */
const readBody = async (request: Request, maxBytes: number): Promise<Uint8Array | undefined> => {
  const declared = request.headers.get("content-length")
  if (declared !== null && Number(declared) > maxBytes) return undefined
  if (request.body === null) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      return undefined
    }
    chunks.push(value)
  }
  const body = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.byteLength
  }
  return body
}

/**
 * Wraps a built handler. Only `POST` is answered (others get 405). `maxBytes` (default
 * `maxRequestBytes`, 64 KiB) bounds the body read (the webhook route reads up to 256 KiB).
 */
export const toWebHandler =
  (handle: CustomerHandler["handle"], maxBytes: number = maxRequestBytes): WebHandler =>
  async (request) => {
    if (request.method !== "POST") return json(405, { error: "method_not_allowed" })
    let body: Uint8Array | undefined
    try {
      body = await readBody(request, maxBytes)
    } catch {
      return json(400, { error: "unreadable_body" })
    }
    if (body === undefined) return json(413, { error: "body_too_large" })
    const response = await Effect.runPromise(handle({ headers: request.headers, body }))
    return new Response(response.body, { status: response.status, headers: response.headers })
  }

export interface WebHandlerOptions extends CustomerHandlerSettings {
  /** The connector secrets; imported once with the layer's `Crypto`. */
  readonly secrets: ConnectorSecrets
  /** The connection revision of `secrets` (default 0). */
  readonly revision?: number
}

/**
 * A Fetch handler plus the runtime it owns.
 */
export interface ManagedWebHandler {
  readonly fetch: WebHandler
  /** Releases the layer's resources. */
  readonly dispose: () => Promise<void>
}

/**
 * Builds `layer` once, imports the secrets and binds the handler to them.
 */
export const makeWebHandler = async <E>(
  layer: Layer.Layer<Crypto | NonceStore | ActionLedger, E>,
  options: WebHandlerOptions
): Promise<ManagedWebHandler> => {
  const runtime = ManagedRuntime.make(layer)
  const { secrets, ...rest } = options
  try {
    const handler = await runtime.runPromise(
      Effect.flatMap(importSigningKeys(secrets), (keys) => makeCustomerHandler({ ...rest, keys }))
    )
    return { fetch: toWebHandler(handler.handle), dispose: () => runtime.dispose() }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
