/**
 * The outbound transport for the runtime in use: `UndiciTransport` on Node (about half the
 * client's CPU per exchange), `HttpTransport` (`node:http`) on Bun and Deno, whose Node
 * compatibility covers `node:http`; undici is not tested there. Both keep one contract, tested
 * together in test/adapters/transport/HttpTransport.test.ts.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { EndpointPolicy } from "../../core/connector/Endpoint.ts"
import type { ConnectorTransport } from "../../core/ports/ConnectorTransport.ts"
import * as HttpTransport from "./HttpTransport.ts"

export interface TransportOptions {
  /** Default time-out of one exchange (connect, send, whole response); 10 s. */
  readonly timeoutMillis?: number
  /** Connections kept per endpoint (default 256): above the dispatcher's concurrency, so deliveries in flight never queue for one. */
  readonly connections?: number
}

/**
 * Which transport `layer` builds on this runtime: undici on Node itself, `node:http` on Bun and
 * Deno (both also set `process.versions.node`).
 */
export const implementation = (): "undici" | "node:http" =>
  !("Bun" in globalThis) &&
  !("Deno" in globalThis) &&
  typeof process !== "undefined" &&
  process.versions?.node !== undefined
    ? "undici"
    : "node:http"

/**
 * The transport under `policy`, resolving with the system resolver.
 */
export const layer = (policy: EndpointPolicy, options?: TransportOptions): Layer.Layer<ConnectorTransport> =>
  implementation() === "undici"
    ? Layer.unwrapEffect(
        Effect.map(
          Effect.promise(() => import("./UndiciTransport.ts")),
          (undici) => undici.layer(policy, options)
        )
      )
    : HttpTransport.layer(policy, {
        ...(options?.timeoutMillis !== undefined ? { timeoutMillis: options.timeoutMillis } : {}),
        ...(options?.connections !== undefined ? { maxSockets: options.connections } : {})
      })
