/**
 * What every outbound transport checks before it sends (docs/decisions.md, "Public endpoints"),
 * written once for the node:http and undici transports: the endpoint URL's checks (kept per URL, as
 * they never change under a fixed policy), the host resolved and every address checked again on each
 * request, and the exchange sent to the first checked address. Each transport brings only its
 * `exchange`; the pieces every exchange needs (the pinned `lookup`, the response headers' shape, the
 * failures and when each may have been delivered) are here too.
 */
import type { LookupFunction } from "node:net"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import {
  allowedAddressesWith,
  type EndpointPolicy,
  type EndpointRejected,
  literalAddresses,
  parseEndpointSync,
  type Resolver
} from "../../../core/connector/Endpoint.ts"
import {
  type OutboundRequest,
  type OutboundResponse,
  TransportFailure
} from "../../../core/ports/ConnectorTransport.ts"

/** An endpoint URL as checked: the URL to connect to, its host and, for an address host, its verdict (`undefined` for a name). */
interface Target {
  readonly url: URL
  readonly host: string
  readonly literal: Either.Either<ReadonlyArray<string>, TransportFailure> | undefined
}

/** Endpoint URLs whose checks are kept (one per connection revision in use); past this the memo starts over. */
const maxTargets = 1_024

/** A `lookup` that answers `address` (checked) whatever the resolver says now. */
export const fixedLookup = (address: string): LookupFunction => {
  const family = address.includes(":") ? 6 : 4
  return (_host, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) {
      ;(callback as unknown as (e: null, a: ReadonlyArray<{ address: string; family: number }>) => void)(null, [
        { address, family }
      ])
    } else callback(null, address, family)
  }
}

/** Response headers as the port returns them: lowercase names, a repeated header's values joined with `, `. */
export const flattenHeaders = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value !== undefined) out[name.toLowerCase()] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}

/**
 * How an exchange fails. `connected`: a connection that could carry the request was made, so any
 * failure after it may have delivered the request, whatever its error code.
 */
export const exchangeFailure = {
  timeout: (connected: boolean) =>
    new TransportFailure({
      reason: "timeout",
      maybeDelivered: connected,
      detail: "no complete response within the time-out"
    }),
  broken: (connected: boolean) =>
    connected
      ? new TransportFailure({
          reason: "reset",
          maybeDelivered: true,
          detail: "the connection broke before a complete response"
        })
      : new TransportFailure({ reason: "connect", maybeDelivered: false, detail: "the connection could not be made" }),
  cutOff: () => new TransportFailure({ reason: "reset", maybeDelivered: true, detail: "the response was cut off" }),
  tooLarge: () =>
    new TransportFailure({
      reason: "response_too_large",
      maybeDelivered: true,
      detail: "the response body exceeds 64 KiB"
    }),
  notMade: (detail: string) => new TransportFailure({ reason: "connect", maybeDelivered: false, detail })
}

/**
 * One exchange with a checked endpoint: POST `body` to `url`, connecting to `address` (checked),
 * within `timeoutMillis`.
 */
export type Exchange = (
  url: URL,
  address: string,
  headers: Readonly<Record<string, string>>,
  body: Uint8Array,
  timeoutMillis: number
) => Effect.Effect<OutboundResponse, TransportFailure>

const toFailure = (rejected: EndpointRejected) =>
  new TransportFailure({
    reason: rejected.problem === "unresolvable" ? "dns" : "refused_address",
    maybeDelivered: false,
    detail: rejected.detail
  })

/**
 * The `post` of a transport under `policy`: checks, resolves, then `exchange`s with the first
 * allowed address.
 */
export const checkedPost = (
  policy: EndpointPolicy,
  resolver: Resolver["Type"],
  defaultTimeoutMillis: number,
  exchange: Exchange
): ((request: OutboundRequest) => Effect.Effect<OutboundResponse, TransportFailure>) => {
  // What an endpoint URL's checks answer never changes for it (the policy is fixed): the parse, the
  // URL to connect to and, for a host that is itself an address, its verdict. Kept per URL; a name
  // is still resolved and its addresses checked on every request.
  const targets = new Map<string, Either.Either<Target, TransportFailure>>()
  const targetOf = (url: string): Either.Either<Target, TransportFailure> => {
    const known = targets.get(url)
    if (known !== undefined) return known
    const target = Either.match(parseEndpointSync(url, policy), {
      onLeft: (rejected) => Either.left(toFailure(rejected)),
      onRight: (endpoint) => {
        const literal = literalAddresses(endpoint.host, policy)
        return Either.right({
          url: new URL(endpoint.url),
          host: endpoint.host,
          literal: literal === undefined ? undefined : Either.mapLeft(literal, toFailure)
        })
      }
    })
    if (targets.size >= maxTargets) targets.clear()
    targets.set(url, target)
    return target
  }
  return (request) => {
    const target = targetOf(request.url)
    if (Either.isLeft(target)) return Effect.fail(target.left)
    const { host, literal, url } = target.right
    const send = (addresses: ReadonlyArray<string>) =>
      exchange(url, addresses[0]!, request.headers, request.body, request.timeoutMillis ?? defaultTimeoutMillis)
    if (literal !== undefined) return Either.isLeft(literal) ? Effect.fail(literal.left) : send(literal.right)
    return Effect.flatMap(Effect.mapError(allowedAddressesWith(resolver, host, policy), toFailure), send)
  }
}
