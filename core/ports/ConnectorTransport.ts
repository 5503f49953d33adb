/**
 * The `ConnectorTransport` port: one outbound signed-JSON `POST` to a peer (docs/decisions.md,
 * "Outbound calls", "Public endpoints").
 *
 * The service uses it for handshakes, executions and reconciliation reads to the customer endpoint;
 * the customer kit uses it to deliver completions to the service. Implementations never follow
 * redirects (a 3xx is returned as a response, which callers treat as invalid), refuse response
 * bodies over `maxResponseBytes`, time out, and — for the service — check every resolved address
 * again at connect time.
 *
 * A failure says whether the request may have reached the peer (`maybeDelivered`): the spec's
 * "unknown outcome at the connector boundary" applies only then; a failure before any byte was
 * sent (refused address, DNS failure, connection refused) is safe to retry as if never sent.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"

/**
 * "Response bodies over 64 KiB are invalid responses" (docs/decisions.md, "Outbound calls").
 */
export const maxResponseBytes = 64 * 1024

/** A signed request to a customer endpoint: URL, headers and the exact body bytes signed. */
export interface OutboundRequest {
  readonly url: string
  /** Lowercase header names; `content-type: application/json` is always sent. */
  readonly headers: Readonly<Record<string, string>>
  /** The exact bytes that were signed: the peer verifies the signature over these. */
  readonly body: Uint8Array
  /** Overrides the implementation's default time-out for this call. */
  readonly timeoutMillis?: number
}

/** A customer endpoint's answer: status, lowercase headers and body bytes (at most 64 KiB). */
export interface OutboundResponse {
  readonly status: number
  /** Lowercase header names. */
  readonly headers: Readonly<Record<string, string>>
  /** The raw body bytes as received, at most `maxResponseBytes`. */
  readonly body: Uint8Array
}

/**
 * - `refused_address`: the URL or a resolved address is not allowed (not public); nothing was sent.
 * - `dns`: the host did not resolve; nothing was sent.
 * - `connect`: no connection could be made; nothing was sent.
 * - `timeout`: no complete response within the time-out.
 * - `reset`: the connection broke after the request was (possibly) sent.
 * - `response_too_large`: the response body exceeded `maxResponseBytes`.
 */
export type TransportFailureReason = "refused_address" | "dns" | "connect" | "timeout" | "reset" | "response_too_large"

/**
 * An outbound request that got no usable answer; `ambiguous` when the peer may have acted on it.
 */
export class TransportFailure extends Data.TaggedError("TransportFailure")<{
  readonly reason: TransportFailureReason
  /** `true` when the peer may have received (and acted on) the request. */
  readonly maybeDelivered: boolean
  /** Fixed, secret-free text for operators (never a header or body). */
  readonly detail?: string
}> {}

/** Posts one signed request to a customer endpoint, with no redirects and a bounded answer. */
export interface ConnectorTransportService {
  /** Sends the request once; never follows a redirect. */
  readonly post: (request: OutboundRequest) => Effect.Effect<OutboundResponse, TransportFailure>
}

/** The service tag of the outbound connector transport. */
export class ConnectorTransport extends Context.Tag("@accord/core/ConnectorTransport")<
  ConnectorTransport,
  ConnectorTransportService
>() {}
