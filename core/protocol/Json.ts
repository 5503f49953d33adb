/**
 * JSON at the edges of the protocol: raw bytes parsed strictly as UTF-8 JSON (a byte-order mark or
 * invalid UTF-8 is malformed), Schema errors turned into field issues that never quote a received
 * value (D8), and canonical JSON (RFC 8785 key order) for hashes and comparisons.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * The (authentic) body is not UTF-8 JSON.
 *
 * @since 0.1.0
 */
export class MalformedBody extends Schema.TaggedError<MalformedBody>()("MalformedBody", {}) {
  override get message(): string {
    return "body is not a UTF-8 JSON document"
  }
}

/**
 * One failing field of a body: where, and what was expected. Never the received value.
 *
 * @since 0.1.0
 */
export const FieldIssue = Schema.Struct({ path: Schema.String, message: Schema.String })

/**
 * @since 0.1.0
 */
export type FieldIssue = typeof FieldIssue.Type

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * Parses raw body bytes as JSON. A byte-order mark or invalid UTF-8 is malformed.
 *
 * @since 0.1.0
 */
export const parseJsonBody = (body: Uint8Array): Effect.Effect<unknown, MalformedBody> => parseJsonBytes(body)

/**
 * The same, as a plain result.
 *
 * @since 0.1.0
 */
export const parseJsonBytes = (body: Uint8Array): Either.Either<unknown, MalformedBody> => {
  try {
    return Either.right(JSON.parse(utf8.decode(body)) as unknown)
  } catch {
    return Either.left(new MalformedBody())
  }
}

/**
 * Converts a Schema parse error to field issues (paths like `action.operation.extensionDays`), one
 * per path, never quoting the received value (D8): Schema's `, actual …` suffix is cut, missing
 * and unknown fields get fixed wording, and `messages` may give fixed wording per path.
 *
 * @since 0.1.0
 */
export const toFieldIssues = (
  error: ParseResult.ParseError,
  messages: Readonly<Record<string, string>> = {}
): ReadonlyArray<FieldIssue> => {
  const byPath = new Map<string, Array<{ readonly tag: string; readonly message: string }>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = issue.path.map(String).join(".")
    const issues = byPath.get(path) ?? []
    issues.push({ tag: issue._tag, message: issue.message.replace(/,\s*actual\b[\s\S]*$/, "") })
    byPath.set(path, issues)
  }
  return [...byPath].map(([path, issues]) => {
    if (issues.some((issue) => issue.tag === "Missing")) return { path, message: "is missing" }
    if (issues.some((issue) => issue.tag === "Unexpected")) return { path, message: "is not allowed" }
    const known = messages[path]
    if (known !== undefined) return { path, message: known }
    const texts = [...new Set(issues.map((issue) => issue.message))]
    // A union reports one "Expected X" per member: say it once as "Expected X | Y".
    const message = texts.length > 1 && texts.every((text) => text.startsWith("Expected "))
      ? "Expected " + texts.map((text) => text.slice("Expected ".length)).join(" | ")
      : texts.join("; ")
    return { path, message }
  })
}

/**
 * Canonical JSON: object keys sorted by UTF-16 code units at every level (RFC 8785 order), no
 * whitespace, numbers and strings as `JSON.stringify` writes them; `undefined` members are
 * omitted as in JSON. Equal JSON values have equal serializations whatever their key order.
 *
 * @since 0.1.0
 */
export const canonicalJson = (value: unknown): string => {
  if (value === null) return "null"
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value)
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null"
    case "object": {
      const json = (value as { readonly toJSON?: unknown }).toJSON
      if (typeof json === "function") return canonicalJson(json.call(value))
      if (Array.isArray(value)) {
        let out = "["
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i]
          out += (i === 0 ? "" : ",") + (isOmitted(item) ? "null" : canonicalJson(item))
        }
        return out + "]"
      }
      return canonicalObject(value as Readonly<Record<string, unknown>>)
    }
    default:
      return "null"
  }
}

/**
 * An object's members in key order (canonical JSON); `timestamp`, when given, stands in for the object's own
 * `timestamp` member (the payload hash's sending form). The default sort orders strings by UTF-16
 * code units, as canonical JSON requires.
 *
 * @since 0.1.0
 */
export const canonicalObject = (record: object, timestamp?: string): string => {
  let out = "{"
  let first = true
  for (const key of Object.keys(record).sort()) {
    const item = timestamp !== undefined && key === "timestamp" ? timestamp : (record as Readonly<Record<string, unknown>>)[key]
    if (isOmitted(item)) continue
    out += (first ? "" : ",") + JSON.stringify(key) + ":" + canonicalJson(item)
    first = false
  }
  return out + "}"
}

const isOmitted = (value: unknown): boolean =>
  value === undefined || typeof value === "function" || typeof value === "symbol"
