/**
 * The gate in front of the context server's streamable HTTP transport. The server listens on
 * loopback, but a browser on the same machine can still reach it: a page on any origin can POST
 * `text/plain` without a preflight, and DNS rebinding can make a hostile name resolve to
 * 127.0.0.1. So every request must name the bound address as its `Host`, come from no origin or a
 * loopback one, carry the bearer token printed at start, send JSON, and stay under the body cap.
 * Checked in that order, before the MCP handler reads anything.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Problem from "../http/Problem.ts"

/** The largest JSON-RPC body accepted: tool arguments are small; this keeps memory bounded. */
export const maxBodyBytes = 1024 * 1024

export interface Bound {
  /** The loopback port the server listens on. */
  readonly port: number
  /** The bearer token every request must carry. */
  readonly token: Redacted.Redacted<string>
}

const loopbackHosts = ["127.0.0.1", "localhost", "[::1]"]

const loopbackOrigin = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/

const digest = (text: string): Buffer => createHash("sha256").update(text).digest()

/**
 * Whether `header` is `Bearer <token>`, compared in constant time over digests so neither the
 * token's length nor its prefix leaks through timing.
 */
const bearerMatches = (header: string | undefined, token: Redacted.Redacted<string>): boolean => {
  if (header === undefined || !header.startsWith("Bearer ")) return false
  return timingSafeEqual(digest(header.slice("Bearer ".length)), digest(Redacted.value(token)))
}

/**
 * The refusal for a request, or `undefined` when it may reach the MCP handler.
 */
export const refusal = (
  request: { readonly method: string; readonly headers: Readonly<Record<string, string | undefined>> },
  bound: Bound
): Problem.Problem | undefined => {
  const host = request.headers["host"]
  if (host === undefined || !loopbackHosts.some((name) => host === `${name}:${bound.port}`))
    return Problem.forbidden("the Host header must name the address this server is bound to")
  const origin = request.headers["origin"]
  if (origin !== undefined && !loopbackOrigin.test(origin))
    return Problem.forbidden("requests from a non-loopback Origin are refused")
  if (!bearerMatches(request.headers["authorization"], bound.token))
    return Problem.unauthorized("send the bearer token printed when the context server started")
  if (request.method === "POST") {
    const type = request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase()
    if (type !== "application/json") return Problem.unsupportedMediaType("application/json")
    const length = Number(request.headers["content-length"] ?? "0")
    if (length > maxBodyBytes) return Problem.contentTooLarge(maxBodyBytes)
  }
  return undefined
}

/**
 * The middleware: refuses what {@link refusal} names, and caps the body the handler may read
 * (a chunked body past the cap fails while it is read, so it is never buffered whole).
 */
export const guard =
  (bound: Bound) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const refused = refusal(request, bound)
      return refused === undefined
        ? HttpIncomingMessage.withMaxBodySize(app, Option.some(maxBodyBytes))
        : // the body was not read: closing the connection keeps it from being read as the next request
          Effect.succeed(HttpServerResponse.setHeader(Problem.toResponse(refused), "connection", "close"))
    })
