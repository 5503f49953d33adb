/**
 * A small `ConnectorTransport` on `fetch` for tests of code that sends signed requests: redirects
 * are returned, not followed; a connection that was refused is "not delivered", anything else
 * that fails after the request started may have been delivered.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ConnectorTransport, maxResponseBytes, TransportFailure } from "../../core/connector/Transport.ts"

const refused = (error: unknown): boolean => {
  const cause = (error as { cause?: { code?: string } }).cause
  return cause?.code === "ECONNREFUSED"
}

export const layerFetchTransport = (defaultTimeoutMillis = 2_000): Layer.Layer<ConnectorTransport> =>
  Layer.succeed(ConnectorTransport, {
    post: (request) =>
      Effect.tryPromise({
        try: async (signal) => {
          const timeout = AbortSignal.timeout(request.timeoutMillis ?? defaultTimeoutMillis)
          const response = await fetch(request.url, {
            method: "POST",
            headers: { ...request.headers, "content-type": "application/json" },
            body: request.body,
            redirect: "manual",
            signal: AbortSignal.any([signal, timeout])
          })
          const body = new Uint8Array(await response.arrayBuffer())
          if (body.byteLength > maxResponseBytes) throw new TransportFailure({ reason: "response_too_large", maybeDelivered: true })
          const headers: Record<string, string> = {}
          response.headers.forEach((value, name) => {
            headers[name] = value
          })
          return { status: response.status, headers, body }
        },
        catch: (error) =>
          error instanceof TransportFailure
            ? error
            : refused(error)
            ? new TransportFailure({ reason: "connect", maybeDelivered: false })
            : (error as { name?: string }).name === "TimeoutError"
            ? new TransportFailure({ reason: "timeout", maybeDelivered: true })
            : new TransportFailure({ reason: "reset", maybeDelivered: true })
      })
  })
