/**
 * The `ConnectorTransport` on undici (docs/decisions.md, "Outbound calls", "Public endpoints"),
 * Node's default: the same contract and checks as `HttpTransport` (one `POST` of the signed bytes,
 * redirects never followed, the response body capped at 64 KiB, one time-out over the whole exchange,
 * the host resolved and every address checked again on each request, the connection made to the
 * checked address), with undici's connection pools instead of `node:http`'s agent. An exchange costs
 * the sending process about half the CPU of `node:http`'s (measured: docs/performance.md).
 *
 * A pool serves one endpoint origin at one checked address: its connections go to that address
 * (the `lookup` option), so a DNS answer that changes between the check and a new connection
 * cannot redirect it, and an origin that resolves to another allowed address gets a pool of its
 * own. Connecting takes at most the transport's default time-out. Pools, and connections still
 * being made (which a pool does not track), close with the layer's scope.
 *
 * Known difference from `HttpTransport`: undici refuses a `1xx` answer the request did not ask
 * for (it sends no `Expect`), so such an exchange ends as a reset that may have been delivered (an
 * unknown outcome), not with the final answer after it.
 *
 * undici runs on Node; Bun and Deno use `HttpTransport` (`Transport.layer` chooses).
 */
import type { Socket } from "node:net"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { buildConnector, type Dispatcher, Pool } from "undici"
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

export interface UndiciTransportOptions {
  /** Default time-out of one exchange (connect, send, whole response); 10 s. */
  readonly timeoutMillis?: number
  /** Connections per pool, one pool per endpoint origin and address (default 256, as `HttpTransport`'s sockets). */
  readonly connections?: number
}

/** Pools kept at once (one per endpoint origin and address in use); past this the oldest is closed. */
const maxPools = 256

/**
 * A transport bound to `policy`, with its pools closed when `scope` closes.
 */
export const make = (
  policy: EndpointPolicy,
  options: UndiciTransportOptions = {}
): Effect.Effect<ConnectorTransportService, never, Scope.Scope | Resolver> =>
  Effect.gen(function* () {
    const resolver = yield* Resolver
    const defaultTimeout = options.timeoutMillis ?? 10_000
    // Least recently used last; a pool in use moves to the end.
    const pools = new Map<string, Pool>()
    // Sockets still connecting: a pool's `destroy` does not reach them.
    const connecting = new Set<Socket>()
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        closed = true
        const open = Array.from(pools.values())
        pools.clear()
        for (const socket of connecting) socket.destroy()
        connecting.clear()
        return Promise.allSettled(open.map((pool) => pool.destroy()))
      })
    )
    const connectorFor = (address: string): buildConnector.connector => {
      const connect = buildConnector({ lookup: fixedLookup(address), timeout: defaultTimeout })
      return (connectOptions, callback) => {
        let socket: Socket | undefined
        let settled = false
        socket = connect(connectOptions, (error, connected) => {
          settled = true
          if (socket !== undefined) connecting.delete(socket)
          if (error !== null) callback(error, null)
          else callback(null, connected)
        }) as unknown as Socket | undefined
        if (socket !== undefined && !settled) connecting.add(socket)
      }
    }
    const poolFor = (url: URL, address: string): Pool => {
      const key = `${url.origin}\u0000${address}`
      const known = pools.get(key)
      if (known !== undefined) {
        pools.delete(key)
        pools.set(key, known)
        return known
      }
      if (pools.size >= maxPools) {
        // The least recently used pool finishes its requests in flight, then closes.
        const [oldestKey, oldest] = pools.entries().next().value as [string, Pool]
        pools.delete(oldestKey)
        void oldest.close().catch(() => undefined)
      }
      const pool = new Pool(url.origin, {
        connections: options.connections ?? 256,
        pipelining: 1,
        connect: connectorFor(address)
      })
      pools.set(key, pool)
      return pool
    }

    const exchange: Exchange = (url, address, headers, body, timeoutMillis) =>
      Effect.async<OutboundResponse, TransportFailure>((resume) => {
        let controller: Dispatcher.DispatchController | undefined
        let settled = false
        let status = 0
        let responseHeaders: Record<string, string> = {}
        const chunks: Array<Buffer> = []
        let size = 0
        const finish = (result: { readonly ok: OutboundResponse } | { readonly fail: TransportFailure }) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resume("ok" in result ? Effect.succeed(result.ok) : Effect.fail(result.fail))
        }
        const abort = (reason: string) => {
          if (controller !== undefined && !controller.aborted) controller.abort(new Error(reason))
        }
        const timer = setTimeout(() => {
          finish({ fail: exchangeFailure.timeout(controller !== undefined) })
          abort("time-out")
        }, timeoutMillis)
        const handler: Dispatcher.DispatchHandler = {
          // Called once a connection is ready and the request is about to be written on it.
          onRequestStart: (started) => {
            controller = started
            if (settled) abort("interrupted")
          },
          onResponseStart: (_, statusCode, received) => {
            status = statusCode
            responseHeaders = flattenHeaders(received)
          },
          onResponseData: (_, chunk) => {
            if (settled) return
            size += chunk.byteLength
            if (size > maxResponseBytes) {
              finish({ fail: exchangeFailure.tooLarge() })
              abort("response too large")
              return
            }
            chunks.push(chunk)
          },
          onResponseEnd: () =>
            finish({
              ok: {
                status,
                headers: responseHeaders,
                body: new Uint8Array(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))
              }
            }),
          // undici reports every failure to connect before `onRequestStart`; once a request has
          // started on a connection, whatever the error code, it may have reached the endpoint.
          onResponseError: () =>
            finish({ fail: status !== 0 ? exchangeFailure.cutOff() : exchangeFailure.broken(controller !== undefined) })
        }
        if (closed) {
          finish({ fail: exchangeFailure.notMade("the transport is closed") })
          return Effect.void
        }
        try {
          poolFor(url, address).dispatch(
            {
              origin: url.origin,
              path: url.pathname,
              method: "POST",
              headers: { ...headers, "content-type": "application/json" },
              body
            },
            handler
          )
        } catch {
          finish({ fail: exchangeFailure.notMade("the request could not be made") })
        }
        return Effect.sync(() => {
          settled = true
          clearTimeout(timer)
          abort("interrupted")
        })
      })

    return { post: checkedPost(policy, resolver, defaultTimeout, exchange) }
  })

/**
 * The transport under `policy`, resolving with `DnsResolver`.
 */
export const layer = (policy: EndpointPolicy, options?: UndiciTransportOptions): Layer.Layer<ConnectorTransport> =>
  Layer.scoped(ConnectorTransport, make(policy, options)).pipe(Layer.provide(DnsResolver.layer))
