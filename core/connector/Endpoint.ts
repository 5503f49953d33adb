/**
 * The customer endpoint: validated at registration and again at connect time (spec "Connection
 * configuration", "Errors"; docs/decisions.md, "Public endpoints").
 *
 * A valid endpoint is an `https` URL with a host, no credentials, no query string and no fragment
 * (not even an empty `?` or `#`), and every address its host resolves to is public. Literal
 * addresses are classified directly, in every spelling the WHATWG URL parser accepts (decimal,
 * octal, hex and short IPv4 forms are normalized to dotted quads by `URL`; IPv6 forms that embed
 * an IPv4 address are judged by the embedded address). Insecure mode (local development and tests)
 * additionally allows `http` and loopback, never anything else private.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/** Which endpoints registration and delivery accept; insecure ones only for local development. */
export interface EndpointPolicy {
  /** `ACCORD_ALLOW_INSECURE_ENDPOINTS`: `http` and loopback addresses are accepted. */
  readonly allowInsecure: boolean
}

/** A registered endpoint, parsed and normalised: its URL and host. */
export interface ParsedEndpoint {
  /** The normalized URL (as `URL.href`). */
  readonly url: string
  /** The host as the URL names it (brackets removed from IPv6 literals). */
  readonly host: string
}

/**
 * Why an endpoint is refused: a stable code and fixed text (never the URL, which may carry
 * credentials).
 */
export class EndpointRejected extends Schema.TaggedError<EndpointRejected>()("EndpointRejected", {
  problem: Schema.String,
  detail: Schema.String
}) {}

/** The endpoint's host did not resolve; registration and delivery refuse it. */
export class ResolveFailed extends Data.TaggedError("ResolveFailed")<Record<never, never>> {}

/**
 * Resolves a host name to its addresses (all of them, IPv4 and IPv6).
 */
export class Resolver extends Context.Tag("@accord/core/Resolver")<
  Resolver,
  {
    /** Answers every address `host` resolves to, or `ResolveFailed`. */
    readonly resolve: (host: string) => Effect.Effect<ReadonlyArray<string>, ResolveFailed>
  }
>() {}

/**
 * A resolver answering from a fixed table (tests); unknown hosts do not resolve.
 */
export const layerResolverMemory = (table: Readonly<Record<string, ReadonlyArray<string>>>): Layer.Layer<Resolver> =>
  Layer.succeed(Resolver, {
    resolve: (host) => {
      const found = table[host.toLowerCase()]
      return found === undefined || found.length === 0 ? Effect.fail(new ResolveFailed()) : Effect.succeed(found)
    }
  })

/**
 * What kind of address a host resolved to; only `public` is accepted unless insecure endpoints are
 * allowed.
 */
export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link_local"
  | "shared"
  | "unspecified"
  | "multicast"
  | "reserved"
  | "documentation"
  | "invalid"

const refused = (problem: string, detail: string) => new EndpointRejected({ problem, detail })

/** Dotted-quad IPv4 to its 32-bit value; `undefined` for anything else. */
const parseIpv4 = (text: string): number | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  let value = 0
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined
    const n = Number(part)
    if (n > 255) return undefined
    value = value * 256 + n
  }
  return value
}

const v4 = (a: number, b: number, c: number, d: number) => ((a * 256 + b) * 256 + c) * 256 + d

const ipv4Ranges: ReadonlyArray<readonly [number, number, AddressClass]> = [
  [v4(0, 0, 0, 0), 8, "unspecified"],
  [v4(10, 0, 0, 0), 8, "private"],
  [v4(100, 64, 0, 0), 10, "shared"],
  [v4(127, 0, 0, 0), 8, "loopback"],
  [v4(169, 254, 0, 0), 16, "link_local"],
  [v4(172, 16, 0, 0), 12, "private"],
  [v4(192, 0, 0, 0), 24, "reserved"],
  [v4(192, 0, 2, 0), 24, "documentation"],
  [v4(192, 88, 99, 0), 24, "reserved"],
  [v4(192, 168, 0, 0), 16, "private"],
  [v4(198, 18, 0, 0), 15, "reserved"],
  [v4(198, 51, 100, 0), 24, "documentation"],
  [v4(203, 0, 113, 0), 24, "documentation"],
  [v4(224, 0, 0, 0), 4, "multicast"],
  [v4(240, 0, 0, 0), 4, "reserved"]
]

const classifyIpv4Value = (value: number): AddressClass => {
  for (const [base, bits, kind] of ipv4Ranges) {
    const size = 2 ** (32 - bits)
    if (value >= base && value < base + size) return kind
  }
  return "public"
}

/** IPv6 text to eight 16-bit groups; `undefined` when it is not an IPv6 address (zone ids refused). */
const parseIpv6 = (text: string): ReadonlyArray<number> | undefined => {
  if (text.includes("%")) return undefined
  let rest = text
  const tail: Array<number> = []
  const lastColon = rest.lastIndexOf(":")
  if (lastColon >= 0 && rest.slice(lastColon + 1).includes(".")) {
    const embedded = parseIpv4(rest.slice(lastColon + 1))
    if (embedded === undefined) return undefined
    tail.push(Math.floor(embedded / 65536), embedded % 65536)
    rest = rest.slice(0, lastColon + 1)
    if (!rest.endsWith("::")) rest = rest.slice(0, -1)
  }
  const halves = rest.split("::")
  if (halves.length > 2) return undefined
  const groups = (part: string): Array<string> => (part === "" ? [] : part.split(":"))
  const left = groups(halves[0]!)
  const right = halves.length === 2 ? groups(halves[1]!) : []
  if (![...left, ...right].every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return undefined
  const hex = (g: string) => Number.parseInt(g, 16)
  const explicit = left.length + right.length + tail.length
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined
  return [...left.map(hex), ...new Array<number>(8 - explicit).fill(0), ...right.map(hex), ...tail]
}

const embeddedV4 = (hi: number, lo: number): AddressClass => classifyIpv4Value(hi * 65536 + lo)

const classifyIpv6 = (g: ReadonlyArray<number>): AddressClass => {
  const [a, b, c, d, e, f, gg, h] = g as [number, number, number, number, number, number, number, number]
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0)
  if (zeroTo(8)) return "unspecified"
  if (zeroTo(7) && h === 1) return "loopback"
  // IPv4-mapped ::ffff:0:0/96 and IPv4-translated ::ffff:0:0:0/96: judged by the IPv4 address.
  if (zeroTo(5) && f === 0xffff) return embeddedV4(gg, h)
  if (zeroTo(4) && e === 0xffff && f === 0) return embeddedV4(gg, h)
  // IPv4-compatible ::/96 (deprecated).
  if (zeroTo(6)) return embeddedV4(gg, h)
  // NAT64 well-known prefix 64:ff9b::/96, and the local-use 64:ff9b:1::/48.
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0) return embeddedV4(gg, h)
  if (a === 0x64 && b === 0xff9b && c === 1) return "private"
  // 6to4 2002::/16 carries an IPv4 address in its next 32 bits.
  if (a === 0x2002) return embeddedV4(b, c)
  // Teredo 2001::/32, ORCHID, benchmarking 2001:2::/48 and documentation 2001:db8::/32.
  if (a === 0x2001 && b === 0) return "reserved"
  if (a === 0x2001 && b === 0x0db8) return "documentation"
  if (a === 0x2001 && b === 2 && c === 0) return "reserved"
  if (a === 0x2001 && (b & 0xfff0) === 0x10) return "reserved"
  if (a === 0x2001 && (b & 0xfff0) === 0x20) return "reserved"
  if (a === 0x3fff && (b & 0xf000) === 0) return "documentation"
  if (a === 0x0100 && b === 0 && c === 0 && d === 0) return "reserved"
  if ((a & 0xfe00) === 0xfc00) return "private"
  if ((a & 0xffc0) === 0xfe80) return "link_local"
  if ((a & 0xffc0) === 0xfec0) return "private"
  if ((a & 0xff00) === 0xff00) return "multicast"
  if ((a & 0xe000) === 0x2000) return "public"
  return "reserved"
}

/**
 * What kind of address `ip` is (dotted-quad IPv4 or IPv6 text, brackets allowed).
 */
export const classifyAddress = (ip: string): AddressClass => {
  const text = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip
  const value = parseIpv4(text)
  if (value !== undefined) return classifyIpv4Value(value)
  const groups = text.includes(":") ? parseIpv6(text) : undefined
  return groups === undefined ? "invalid" : classifyIpv6(groups)
}

/**
 * Whether the service may connect to `ip`: public addresses always, loopback only in insecure mode.
 */
export const isAllowedAddress = (ip: string, policy: EndpointPolicy): boolean => {
  const kind = classifyAddress(ip)
  return kind === "public" || (kind === "loopback" && policy.allowInsecure)
}

/**
 * Whether `host` (as `URL.hostname` gives it) is a literal address rather than a name.
 */
export const isLiteralAddress = (host: string): boolean =>
  parseIpv4(host) !== undefined || (host.startsWith("[") && host.endsWith("]"))

/**
 * The checks that need no resolution: scheme, credentials, query, fragment, host.
 */
export const parseEndpoint = (url: string, policy: EndpointPolicy): Effect.Effect<ParsedEndpoint, EndpointRejected> =>
  Effect.suspend(() => parseEndpointSync(url, policy))

/**
 * {@link parseEndpoint} as a plain function of the URL and the policy: its answer (an `Either`)
 * never changes for them, so the outbound transport checks each endpoint URL once.
 */
export const parseEndpointSync = (
  url: string,
  policy: EndpointPolicy
): Either.Either<ParsedEndpoint, EndpointRejected> => {
  if (url.length > 2048) return Either.left(refused("invalid_url", "the endpoint URL is longer than 2048 characters"))
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Either.left(refused("invalid_url", "the endpoint is not an absolute URL"))
  }
  const insecureOk = policy.allowInsecure && parsed.protocol === "http:"
  if (parsed.protocol !== "https:" && !insecureOk) {
    return Either.left(refused("not_https", "the endpoint must be an https URL"))
  }
  if (parsed.username !== "" || parsed.password !== "" || /^[a-z]+:\/\/[^/?#]*@/i.test(url.trim())) {
    return Either.left(refused("credentials", "the endpoint must not contain credentials"))
  }
  if (parsed.search !== "" || url.includes("?"))
    return Either.left(refused("query", "the endpoint must not have a query string"))
  if (parsed.hash !== "" || url.includes("#"))
    return Either.left(refused("fragment", "the endpoint must not have a fragment"))
  if (parsed.hostname === "") return Either.left(refused("invalid_url", "the endpoint must name a host"))
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname
  return Either.right({ url: parsed.href, host })
}

/**
 * The connect addresses of a host that is itself an address (IPv4 or IPv6 text, as
 * {@link parseEndpoint} gives it): the address, when allowed. `undefined` for a name, which has to
 * be resolved ({@link allowedAddresses}). The answer never changes for the host and the policy.
 */
export const literalAddresses = (
  host: string,
  policy: EndpointPolicy
): Either.Either<ReadonlyArray<string>, EndpointRejected> | undefined => {
  if (parseIpv4(host) === undefined && !host.includes(":")) return undefined
  return isAllowedAddress(host, policy) ? Either.right([host]) : Either.left(privateAddress())
}

const privateAddress = () =>
  refused("private_address", "the endpoint host resolves to a private, loopback or reserved address")

/**
 * The addresses to connect to: a literal address itself, or every address the host resolves to;
 * all of them must be allowed.
 */
export const allowedAddresses = (
  host: string,
  policy: EndpointPolicy
): Effect.Effect<ReadonlyArray<string>, EndpointRejected, Resolver> =>
  Effect.flatMap(Resolver, (resolver) => allowedAddressesWith(resolver, host, policy))

/**
 * {@link allowedAddresses} with the given resolver, for a caller that holds it (the outbound
 * transport, once per request): providing it per call copies the fiber's whole context each time.
 */
export const allowedAddressesWith = (
  resolver: Resolver["Type"],
  host: string,
  policy: EndpointPolicy
): Effect.Effect<ReadonlyArray<string>, EndpointRejected> =>
  Effect.suspend(() => {
    const literal = literalAddresses(host, policy)
    if (literal !== undefined) return literal
    return Effect.flatMap(
      Effect.mapError(resolver.resolve(host), () => refused("unresolvable", "the endpoint host does not resolve")),
      (addresses) => {
        if (addresses.length === 0) return Effect.fail(refused("unresolvable", "the endpoint host does not resolve"))
        if (!addresses.every((address) => isAllowedAddress(address, policy))) return Effect.fail(privateAddress())
        return Effect.succeed(addresses)
      }
    )
  })

/**
 * Validates an endpoint for registration: the URL rules, then every resolved address.
 */
export const validateEndpoint = (
  url: string,
  policy: EndpointPolicy
): Effect.Effect<ParsedEndpoint, EndpointRejected, Resolver> =>
  Effect.flatMap(parseEndpoint(url, policy), (endpoint) => Effect.as(allowedAddresses(endpoint.host, policy), endpoint))
