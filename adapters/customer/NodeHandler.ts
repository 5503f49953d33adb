/**
 * The customer handler for `node:http` and Express-style servers: `(req, res) => void`.
 *
 * Signatures cover the raw body bytes (docs/decisions.md, "Raw body bytes"), so the handler reads
 * the request stream itself. Mount it before any JSON body parser; behind `express.raw()` (or
 * anything leaving a `Buffer` in `req.body` / `req.rawBody`) it uses those bytes instead. A stream
 * already consumed by a parser that kept no raw bytes is refused (500 `raw_body_unavailable`):
 * re-serialized JSON would not verify.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { type CustomerHandler, type CustomerResponse, maxRequestBytes } from "../../core/customer/Handler.ts"
import { encodeBody } from "../../core/protocol/Signing.ts"

/**
 * A `node:http` request listener (Express, Fastify, `http.createServer`) that reads the raw body
 * itself: mount it with no body parser.
 */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void

type RawBody =
  | { readonly kind: "bytes"; readonly bytes: Uint8Array }
  | { readonly kind: "error"; readonly status: number; readonly error: string }

const preParsed = (req: IncomingMessage): Uint8Array | undefined => {
  const carrier = req as IncomingMessage & { readonly rawBody?: unknown; readonly body?: unknown }
  if (carrier.rawBody instanceof Uint8Array) return carrier.rawBody
  if (carrier.body instanceof Uint8Array) return carrier.body
  return undefined
}

/** Reads the body and calls `done` once with it (no promise per request: this runs per execution request). */
const readBody = (req: IncomingMessage, maxBytes: number, done: (body: RawBody) => void): void => {
  const given = preParsed(req)
  if (given !== undefined) return done({ kind: "bytes", bytes: given })
  if (req.readableEnded) return done({ kind: "error", status: 500, error: "raw_body_unavailable" })
  const chunks: Array<Buffer> = []
  let size = 0
  let settled = false
  const settle = (result: RawBody) => {
    if (settled) return
    settled = true
    done(result)
  }
  req.on("data", (chunk: Buffer) => {
    size += chunk.length
    if (size > maxBytes) {
      settle({ kind: "error", status: 413, error: "body_too_large" })
      req.resume()
      return
    }
    chunks.push(chunk)
  })
  req.on("end", () => settle({ kind: "bytes", bytes: new Uint8Array(Buffer.concat(chunks)) }))
  req.on("error", () => settle({ kind: "error", status: 400, error: "unreadable_body" }))
}

const send = (res: ServerResponse, response: CustomerResponse): void => {
  res.writeHead(response.status, { ...response.headers, "content-length": String(response.body.byteLength) })
  res.end(response.body)
}

const error = (status: number, code: string): CustomerResponse => ({
  status,
  headers: { "content-type": "application/json" },
  body: encodeBody({ error: code })
})

/**
 * Wraps a built handler. Only `POST` is answered (others get 405). `maxBytes` (default
 * `maxRequestBytes`, 64 KiB) bounds the body read (the webhook route reads up to 256 KiB).
 */
export const toNodeHandler =
  (handle: CustomerHandler["handle"], maxBytes: number = maxRequestBytes): NodeHandler =>
  (req, res) => {
    if (req.method !== "POST") {
      req.resume()
      return send(res, error(405, "method_not_allowed"))
    }
    const reply = (response: CustomerResponse) => {
      try {
        send(res, response)
      } catch {
        if (!res.headersSent) send(res, error(500, "internal_error"))
      }
    }
    readBody(req, maxBytes, (body) => {
      if (body.kind === "error") return reply(error(body.status, body.error))
      Effect.runCallback(handle({ headers: req.headers, body: body.bytes }), {
        onExit: (exit) => reply(Exit.isSuccess(exit) ? exit.value : error(500, "internal_error"))
      })
    })
  }
