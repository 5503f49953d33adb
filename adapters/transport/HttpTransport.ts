/**
 * The `ConnectorTransport` on `node:http` / `node:https` (docs/decisions.md, "Outbound calls",
 * "Public endpoints"): one `POST` of the signed bytes, redirects never followed (a 3xx is returned
 * for the caller to refuse), the response body capped at 64 KiB, one time-out over the whole
 * exchange, and the host resolved and every address checked again at connect time; the connection
 * goes to the checked address (the `lookup` option), so a DNS answer that changes between check and
 * connect (rebinding) cannot redirect it. The checks of the URL itself (and the verdict on a host
 * that is itself an address) never change, so they are made once per endpoint URL. Requests reuse
 * keep-alive connections; the agents close with the layer's scope.
 */
import * as http from "node:http"
import * as https from "node:https"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { type EndpointPolicy, Resolver } from "../../core/connector/Endpoint.ts"
import {
  ConnectorTransport,
  type ConnectorTransportService,
  maxResponseBytes,
  type OutboundResponse,
  type TransportFailure
} from "../../core/ports/ConnectorTransport.ts"
import * as DnsResolver from "./DnsResolver.ts"
import { checkedPost, type Exchange, exchangeFailure, fixedLookup, flattenHeaders } from "./internal/targets.ts"

export interface HttpTransportOptions {
  /** Default time-out of one exchange (connect, send, whole response); 10 s. */
  readonly timeoutMillis?: number
  /**
   * Keep-alive sockets per host (default 256). Above the dispatcher's concurrency, so deliveries in
   * flight never queue for a socket: with 64, a dispatcher at 128 in flight waited for one.
   */
  readonly maxSockets?: number
}

/**
 * A transport bound to `policy`, with its keep-alive agents released when `scope` closes.
 */
export const make = (
  policy: EndpointPolicy,
  options: HttpTransportOptions = {}
): Effect.Effect<ConnectorTransportService, never, Scope.Scope | Resolver> =>
  Effect.gen(function* () {
    const resolver = yield* Resolver
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 256, keepAliveMsecs: 1_000 }
    const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        agents.http.destroy()
        agents.https.destroy()
      })
    )
    const defaultTimeout = options.timeoutMillis ?? 10_000

    const exchange: Exchange = (url, address, headers, body, timeoutMillis) =>
      Effect.async<OutboundResponse, TransportFailure>((resume) => {
        const secure = url.protocol === "https:"
        let connected = false
        let settled = false
        const finish = (result: { readonly ok: OutboundResponse } | { readonly fail: TransportFailure }) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resume("ok" in result ? Effect.succeed(result.ok) : Effect.fail(result.fail))
        }
        const request = (secure ? https : http).request({
          protocol: url.protocol,
          hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
          port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
          path: url.pathname,
          method: "POST",
          agent: secure ? agents.https : agents.http,
          // Connect to the address that was checked, whatever the resolver says now.
          lookup: fixedLookup(address),
          headers: { ...headers, "content-type": "application/json", "content-length": String(body.byteLength) }
        })
        const timer = setTimeout(() => {
          finish({ fail: exchangeFailure.timeout(connected) })
          request.destroy()
        }, timeoutMillis)
        // Connected: a kept-alive connection at once; a new one once it can carry the request (for
        // TLS after the handshake: nothing is sent before it completes).
        request.on("socket", (socket) => {
          if (request.reusedSocket || (!secure && !socket.connecting)) connected = true
          else socket.once(secure ? "secureConnect" : "connect", () => (connected = true))
        })
        request.on("error", () => finish({ fail: exchangeFailure.broken(connected) }))
        request.on("response", (response) => {
          const chunks: Array<Buffer> = []
          let size = 0
          response.on("data", (chunk: Buffer) => {
            size += chunk.byteLength
            if (size > maxResponseBytes) {
              finish({ fail: exchangeFailure.tooLarge() })
              response.destroy()
              request.destroy()
              return
            }
            chunks.push(chunk)
          })
          response.on("end", () =>
            finish({
              ok: {
                status: response.statusCode ?? 0,
                headers: flattenHeaders(response.headers),
                body: new Uint8Array(Buffer.concat(chunks))
              }
            })
          )
          response.on("error", () => finish({ fail: exchangeFailure.cutOff() }))
        })
        request.end(body)
        return Effect.sync(() => {
          settled = true
          clearTimeout(timer)
          request.destroy()
        })
      })

    return { post: checkedPost(policy, resolver, defaultTimeout, exchange) }
  })

/**
 * The transport under `policy`, resolving with `DnsResolver`.
 */
export const layer = (policy: EndpointPolicy, options?: HttpTransportOptions): Layer.Layer<ConnectorTransport> =>
  Layer.scoped(ConnectorTransport, make(policy, options)).pipe(Layer.provide(DnsResolver.layer))
