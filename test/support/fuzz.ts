/**
 * Arbitraries shared by the fuzz suites (`test/adapters/http/Fuzz.test.ts`,
 * `test/adapters/customer/Fuzz.test.ts`): hostile bodies, header values, methods and request
 * targets. Every suite runs them with a fixed seed, so a failure replays the same way in CI.
 */
import * as fc from "fast-check"

const encoder = new TextEncoder()
export const utf8 = (text: string): Uint8Array => encoder.encode(text)

/** The seed every fuzz suite uses, fixed so that a failure replays exactly. */
export const seed = 19

/** A JSON text with `key` written twice (the strict parser refuses it). */
const withDuplicate = (value: Record<string, unknown>, key: string): string => {
  const text = JSON.stringify(value)
  return text.replace(/^\{/, () => `{${JSON.stringify(key)}:${JSON.stringify(value[key] ?? 1)},`)
}

/** `base` with one field replaced by a generated value, deleted, or given hostile text. */
export const oneFieldMutated = (base: Record<string, unknown>): fc.Arbitrary<Record<string, unknown>> => {
  const keys = Object.keys(base)
  return fc
    .tuple(
      fc.constantFrom(...keys, "properties", "unknown_field"),
      fc.oneof(
        fc.jsonValue({ maxDepth: 3 }),
        fc.constant(undefined),
        fc.constant("\u0000"),
        fc.constant("\ud800"),
        fc.constant("x".repeat(70_000)),
        fc.integer(),
        fc.double(),
        fc.constant(null)
      )
    )
    .map(([key, value]) => {
      const copy: Record<string, unknown> = { ...base }
      if (value === undefined) delete copy[key]
      else copy[key] = value
      return copy
    })
}

/** Bodies around `size` bytes: a valid-looking JSON object padded to just under, at, or over it. */
const nearLimit = (size: number): fc.Arbitrary<Uint8Array> =>
  fc.integer({ min: -16, max: 16 }).map((delta) => {
    const fill = Math.max(0, size + delta - 12)
    return utf8(`{"pad":"${"a".repeat(fill)}"}`)
  })

/**
 * Hostile bodies: random bytes, random JSON, `valid` with one field mutated (and the same with a
 * duplicate key), NULs and lone surrogates (escaped and raw), invalid UTF-8, bodies near each of
 * `limits`, and deep nesting.
 */
export const bodies = (
  valid: ReadonlyArray<Record<string, unknown>>,
  limits: ReadonlyArray<number>
): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    fc.uint8Array({ maxLength: 512 }),
    fc.json().map(utf8),
    fc.constantFrom(...valid).map((body) => utf8(JSON.stringify(body))),
    fc
      .constantFrom(...valid)
      .chain(oneFieldMutated)
      .map((body) => utf8(JSON.stringify(body))),
    fc
      .constantFrom(...valid)
      .chain((body) => fc.constantFrom(...Object.keys(body)).map((key) => utf8(withDuplicate(body, key)))),
    fc.constantFrom(...valid).map((body) => utf8(JSON.stringify(body).replace(/"$|"(?=[,}])/, '\\u0000"'))),
    fc.constantFrom(
      utf8('{"a":"\\u0000"}'),
      utf8('{"a":"\\ud800"}'),
      utf8('{"\\udfff":1}'),
      utf8('{"a":"x\u0000y"}'),
      new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
      new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]),
      new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
      utf8(""),
      utf8("null"),
      utf8("[]"),
      utf8("{}")
    ),
    fc.constantFrom(...limits).chain(nearLimit),
    fc.integer({ min: 1, max: 200_000 }).map((depth) => utf8("[".repeat(depth) + "]".repeat(depth))),
    fc.integer({ min: 1, max: 50_000 }).map((depth) => utf8('{"a":'.repeat(depth) + "1" + "}".repeat(depth)))
  )

/** A header value as a client can send it: printable ASCII and obs-text (latin1), no CR or LF. */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 80 }).map((text) => text.replace(/[\r\n]/g, "")),
  fc
    .uint8Array({ maxLength: 60 })
    .map((bytes) => String.fromCharCode(...Array.from(bytes).filter((b) => b !== 0x0d && b !== 0x0a && b !== 0x00)))
)

/** `undefined` means the header is left out; JSON half the time, so bodies reach the parser. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { arbitrary: fc.constant("application/json"), weight: 4 },
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "Application/JSON",
    "application/json; charset=latin1",
    "application/problem+json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    ""
  ),
  fc.constant(undefined),
  headerValue
)

export const methods: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"),
  fc.stringMatching(/^[A-Z]{1,12}$/)
)

/** Path segments: plain, percent-encoded (valid and not), dot segments, NUL, invalid UTF-8, long. */
const segment: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_.~-]{0,20}$/),
  fc.constantFrom(
    "..",
    ".",
    "%2e%2e",
    "%2F",
    "%00",
    "%ff",
    "%c3%28",
    "%ed%a0%80",
    "%",
    "%zz",
    "%25",
    "a%20b",
    ";x=1",
    "\u0000",
    "\u00ff\u00fe",
    "*"
  ),
  fc.uuid(),
  fc.integer({ min: 1, max: 10_000 }).map((n) => "s".repeat(n)),
  fc.string({ maxLength: 12 }).map((text) => encodeURIComponent(text))
)

const query: fc.Arbitrary<string> = fc.oneof(
  fc.constant(""),
  fc
    .array(fc.tuple(fc.constantFrom("limit", "cursor", "account_id", "event_name", "from", "to", "x", ""), segment), {
      maxLength: 4
    })
    .map((pairs) => "?" + pairs.map(([k, v]) => `${k}=${v}`).join("&")),
  fc.constantFrom(
    "?",
    "??",
    "?limit=0",
    "?limit=-1",
    "?limit=1e9",
    "?cursor=%ff",
    "?from=not-a-date",
    "?limit=1&limit=2"
  )
)

/** A request target: `prefix` followed by generated segments and a query (as latin1 text). */
export const targets = (prefixes: ReadonlyArray<string>): fc.Arbitrary<string> =>
  fc.oneof(
    fc
      .tuple(fc.constantFrom(...prefixes), fc.array(segment, { maxLength: 4 }), query)
      .map(([prefix, segments, q]) => prefix + segments.map((s) => "/" + s).join("") + q),
    fc.tuple(fc.constantFrom(...prefixes), query).map(([prefix, q]) => prefix + q),
    fc.constantFrom("*", "/", "//", "http://127.0.0.1/healthz", "/healthz/../api/events/ingest", "/api//events/ingest")
  )
