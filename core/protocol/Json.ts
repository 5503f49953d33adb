/**
 * JSON at the edges of the protocol: raw bytes parsed strictly as UTF-8 JSON (a byte-order mark or
 * invalid UTF-8 is malformed), Schema errors turned into field issues that never quote a received
 * value (errors carry no raw values), and canonical JSON (RFC 8785 key order) for hashes and
 * comparisons.
 *
 * The one strict parser of every body (ingest, admin routes, completions, connector messages):
 * besides syntax it refuses an object with the same key twice (`JSON.parse` would silently keep
 * the last, so two readers could see two different messages — "verify the raw body, then parse":
 * an authentic body with a duplicate key is still malformed), and a string or name holding
 * U+0000 or an unpaired surrogate (DAI "Validation": text that cannot be stored is refused before
 * any storage call, on every route).
 */
import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isStorableText } from "./Text.ts"

/**
 * Why a body is malformed: not UTF-8 JSON (`syntax`), an object with a key twice
 * (`duplicate_key`), or a string or name that cannot be stored (`unstorable_text`).
 */
export const MalformedReason = Schema.Literal("syntax", "duplicate_key", "unstorable_text")

export type MalformedReason = typeof MalformedReason.Type

/**
 * The (authentic) body is not strict UTF-8 JSON. `at` is where (object keys and array indexes as
 * received, for `duplicate_key` and `unstorable_text`): render it only through a redacting
 * path function (the HTTP edge uses `Safety.pathSegment`), never as is.
 */
export class MalformedBody extends Schema.TaggedError<MalformedBody>()("MalformedBody", {
  reason: Schema.optionalWith(MalformedReason, {
    /** Plain syntax unless a stricter rule named its reason. */
    default: () => "syntax"
  }),
  at: Schema.optionalWith(Schema.Array(Schema.Union(Schema.String, Schema.Number)), {
    /** The top level unless the reason names a place. */
    default: () => []
  })
}) {
  override get message(): string {
    return this.reason === "duplicate_key"
      ? "body has an object with the same key twice"
      : this.reason === "unstorable_text"
        ? "body holds a NUL character or an unpaired UTF-16 surrogate"
        : "body is not a UTF-8 JSON document"
  }
}

/**
 * One failing field of a body: where, and what was expected. Never the received value.
 */
export const FieldIssue = Schema.Struct({ path: Schema.String, message: Schema.String })

export type FieldIssue = typeof FieldIssue.Type

/**
 * `true` when the `Content-Type` is `application/json` (parameters allowed; a charset, if given,
 * must be UTF-8, the only encoding RFC 8259 permits between systems). Every JSON route and the
 * customer kit's endpoint require it (415 otherwise).
 */
export const isJsonContentType = (header: string | undefined): boolean => {
  if (header === undefined) return false
  const [mediaType, ...parameters] = header.split(";")
  if (mediaType?.trim().toLowerCase() !== "application/json") return false
  return parameters.every((parameter) => {
    const [name, value] = parameter.split("=").map((part) => part.trim().toLowerCase())
    return name !== "charset" || value === "utf-8" || value === '"utf-8"'
  })
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * Parses raw body bytes as strict JSON. A byte-order mark, invalid UTF-8, a duplicate key at any
 * depth, and a string or name with U+0000 or an unpaired surrogate are malformed.
 */
export const parseJsonBody = (body: Uint8Array): Effect.Effect<unknown, MalformedBody> => parseJsonBytes(body)

/**
 * The same, as a plain result.
 */
export const parseJsonBytes = (body: Uint8Array): Either.Either<unknown, MalformedBody> => {
  let text: string
  let value: unknown
  try {
    text = utf8.decode(body)
    value = JSON.parse(text)
  } catch {
    return Either.left(new MalformedBody())
  }
  return checkParsed(text, value)
}

/**
 * JSON syntax only (a duplicate key keeps its last value, as `JSON.parse` does): for reading which
 * secret or purpose a signed message claims BEFORE its signature is verified ("verify the raw body,
 * then parse"). Never accept data from it: the verified body is then parsed with `parseJsonBytes`.
 */
export const parseJsonSyntax = (body: Uint8Array): Either.Either<unknown, MalformedBody> => {
  try {
    return Either.right(JSON.parse(utf8.decode(body)) as unknown)
  } catch {
    return Either.left(new MalformedBody())
  }
}

/**
 * Parses JSON text strictly (see `parseJsonBytes`).
 */
export const parseJsonText = (text: string): Either.Either<unknown, MalformedBody> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Either.left(new MalformedBody())
  }
  return checkParsed(text, value)
}

const checkParsed = (text: string, value: unknown): Either.Either<unknown, MalformedBody> => {
  const duplicate = keysInText(text) === keysInValue(value) ? undefined : findDuplicateKey(text)
  if (duplicate !== undefined) return Either.left(new MalformedBody({ reason: "duplicate_key", at: duplicate }))
  // Invalid UTF-8 is refused by the decoder, and JSON forbids raw control characters in strings,
  // so U+0000 and lone surrogates can only come from a `\u` escape: walk the value only then.
  if (mayHoldUnstorable.test(text)) {
    const at = findUnstorable(value)
    if (at !== undefined) return Either.left(new MalformedBody({ reason: "unstorable_text", at }))
  }
  return Either.right(value)
}

const mayHoldUnstorable = /\\u(?:0000|[dD][89a-fA-F])/

/**
 * Where the first string or name that cannot be stored is. Iterative, and each visited value keeps
 * only a link to its parent (the path is built once, on a hit), so no depth exhausts the stack or
 * costs more than linear time.
 */
const findUnstorable = (root: unknown): ReadonlyArray<string | number> | undefined => {
  interface Node {
    readonly value: unknown
    readonly parent: Node | undefined
    readonly segment: string | number
  }
  const pathOf = (node: Node | undefined, last?: string): ReadonlyArray<string | number> => {
    const path: Array<string | number> = last === undefined ? [] : [last]
    for (let at = node; at !== undefined && at.parent !== undefined; at = at.parent) path.push(at.segment)
    return path.reverse()
  }
  const pending: Array<Node> = [{ value: root, parent: undefined, segment: "" }]
  while (pending.length > 0) {
    const node = pending.pop()!
    const value = node.value
    if (typeof value === "string") {
      if (!isStorableText(value)) return pathOf(node)
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) pending.push({ value: value[i], parent: node, segment: i })
    } else if (typeof value === "object" && value !== null) {
      for (const [name, item] of Object.entries(value)) {
        if (!isStorableText(name)) return pathOf(node, name)
        pending.push({ value: item, parent: node, segment: name })
      }
    }
  }
  return undefined
}

interface Frame {
  /** The keys seen so far (objects); `undefined` for an array. */
  readonly keys: Array<string> | undefined
  /** The current member's key (objects) or item index (arrays). */
  at: string | number
}

/**
 * How many object members the text has: each member's key is a closing quote followed (after
 * optional whitespace) by a colon. A quote inside a string is escaped, so a `"` + `:` that is not
 * a key's end is always preceded by an odd run of backslashes. Fast: `indexOf` over the colons.
 */
const keysInText = (text: string): number => {
  let count = 0
  for (let colon = text.indexOf(":"); colon !== -1; colon = text.indexOf(":", colon + 1)) {
    let k = colon - 1
    let c = text.charCodeAt(k)
    while (c === 32 || c === 10 || c === 13 || c === 9) c = text.charCodeAt(--k)
    if (c === 34 && !isEscaped(text, k)) count++
  }
  return count
}

/** How many object members a parsed value has, at every depth. */
const keysInValue = (root: unknown): number => {
  let count = 0
  const pending: Array<unknown> = [root]
  while (pending.length > 0) {
    const value = pending.pop()
    if (typeof value !== "object" || value === null) continue
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) if (typeof value[i] === "object") pending.push(value[i])
    } else {
      for (const key in value) {
        count++
        const item = (value as Record<string, unknown>)[key]
        if (typeof item === "object") pending.push(item)
      }
    }
  }
  return count
}

const isEscaped = (text: string, quote: number): boolean => {
  let k = quote - 1
  while (text.charCodeAt(k) === 92) k--
  return (quote - 1 - k) % 2 === 1
}

/**
 * One pass over JSON text that `JSON.parse` has accepted: the path of the first object key that
 * appears twice in its object (keys compared after unescaping), or `undefined`. Only strings and
 * structure are looked at; keys are collected per object in a small array (objects in bodies are
 * small; a linear scan beats a `Set` there).
 */
const findDuplicateKey = (text: string): ReadonlyArray<string | number> | undefined => {
  const stack: Array<Frame> = []
  let expectKey = false
  let backslash = text.indexOf("\\")
  const length = text.length
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i)
    if (c === 34) {
      // "
      // The closing quote is the next one not preceded by an odd run of backslashes.
      if (backslash !== -1 && backslash < i) backslash = text.indexOf("\\", i)
      let j = text.indexOf('"', i + 1)
      while (backslash !== -1 && backslash < j && isEscaped(text, j)) j = text.indexOf('"', j + 1)
      if (expectKey) {
        const frame = stack[stack.length - 1]!
        const key: string = backslash !== -1 && backslash < j ? JSON.parse(text.slice(i, j + 1)) : text.slice(i + 1, j)
        const keys = frame.keys!
        if (keys.includes(key)) return [...stack.slice(0, -1).map((f) => f.at), key]
        keys.push(key)
        frame.at = key
        expectKey = false
      }
      i = j
    } else if (c === 123) {
      // {
      stack.push({ keys: [], at: "" })
      expectKey = true
    } else if (c === 91) {
      // [
      stack.push({ keys: undefined, at: 0 })
    } else if (c === 125 || c === 93) {
      // } ]
      stack.pop()
      expectKey = false
    } else if (c === 44) {
      // ,
      const frame = stack[stack.length - 1]!
      if (frame.keys === undefined) frame.at = (frame.at as number) + 1
      else expectKey = true
    }
  }
  return undefined
}

/**
 * Converts a Schema parse error to field issues (paths like `action.operation.extensionDays`), one
 * per path, never quoting the received value (docs/decisions.md, "Problem details"): Schema's
 * `, actual …` suffix is cut, missing and unknown fields get fixed wording, and `messages` may give
 * fixed wording per path.
 */
export const toFieldIssues = (
  error: ParseResult.ParseError,
  messages: Readonly<Record<string, string>> = {}
): ReadonlyArray<FieldIssue> => {
  const byPath = new Map<string, Array<{ readonly tag: string; readonly message: string }>>()
  let formatted: ReadonlyArray<ParseResult.ArrayFormatterIssue>
  try {
    formatted = ParseResult.ArrayFormatter.formatErrorSync(error)
  } catch {
    // Schema's messages quote the received value, formatted recursively: a body nested tens of
    // thousands deep exhausts the stack there (a fuzzed body found it). The quote is
    // cut anyway, so the whole body is named instead of a 500.
    return [{ path: "", message: messages[""] ?? "is nested too deeply" }]
  }
  for (const issue of formatted) {
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
    const message =
      texts.length > 1 && texts.every((text) => text.startsWith("Expected "))
        ? "Expected " + texts.map((text) => text.slice("Expected ".length)).join(" | ")
        : texts.join("; ")
    return { path, message }
  })
}

/**
 * Canonical JSON: object keys sorted by UTF-16 code units at every level (RFC 8785 order), no
 * whitespace, numbers and strings as `JSON.stringify` writes them; `undefined` members are
 * omitted as in JSON. Equal JSON values have equal serializations whatever their key order.
 */
export const canonicalJson = (value: unknown): string => {
  try {
    return write(value, 0)
  } catch (error) {
    if (error !== tooDeep) throw error
    return serialize([{ value }])
  }
}

/**
 * An object's members in key order (canonical JSON); `timestamp`, when given, stands in for the object's own
 * `timestamp` member (the payload hash's sending form). The default sort orders strings by UTF-16
 * code units, as canonical JSON requires.
 */
export const canonicalObject = (record: object, timestamp?: string): string => {
  try {
    return writeObject(record, 1, timestamp)
  } catch (error) {
    if (error !== tooDeep) throw error
    const work: Array<Work> = []
    const opening = pushObject(record, work, timestamp)
    return opening + serialize(work)
  }
}

/**
 * The common case, written directly: values nested at most {@link directDepth} deep are serialized
 * by recursion, one string per member and no work items (the work stack below allocated two
 * objects per member, a measurable share of the ingest route's allocations). Deeper values throw
 * {@link tooDeep} and are serialized again by the stack, which no depth exhausts. Both write the
 * same text.
 */
const directDepth = 64
const tooDeep: unique symbol = Symbol("tooDeep")

const write = (received: unknown, depth: number): string => {
  const value = withoutToJson(received)
  if (typeof value !== "object" || value === null) return scalarText(value)
  if (depth >= directDepth) throw tooDeep
  if (Array.isArray(value)) {
    let out = "["
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      out += (i === 0 ? "" : ",") + (isOmitted(item) ? "null" : write(item, depth + 1))
    }
    return out + "]"
  }
  return writeObject(value, depth + 1)
}

const writeObject = (record: object, depth: number, timestamp?: string): string => {
  const keys = Object.keys(record).sort()
  let out = "{"
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const item =
      timestamp !== undefined && key === "timestamp" ? timestamp : (record as Readonly<Record<string, unknown>>)[key]
    if (isOmitted(item)) continue
    out += (out.length === 1 ? "" : ",") + JSON.stringify(key) + ":" + write(item, depth)
  }
  return out + "}"
}

/**
 * What is left to write, last item first: text as it is, or a value to serialize. Serializing
 * with this stack instead of recursion lets no nesting depth exhaust the call stack (a 64 KiB body
 * of `[` nests 32 768 deep, as a fuzzed body showed).
 */
type Work = { readonly text: string } | { readonly value: unknown }

const serialize = (work: Array<Work>): string => {
  let out = ""
  while (work.length > 0) {
    const item = work.pop()!
    if ("text" in item) out += item.text
    else out += open(item.value, work)
  }
  return out
}

/** A scalar's text, or an array's or object's opening bracket with its rest pushed on `work`. */
const open = (received: unknown, work: Array<Work>): string => {
  const value = withoutToJson(received)
  if (typeof value !== "object" || value === null) return scalarText(value)
  if (Array.isArray(value)) {
    work.push({ text: "]" })
    for (let i = value.length - 1; i >= 0; i--) {
      const item: unknown = value[i]
      work.push(isOmitted(item) ? { text: "null" } : { value: item })
      if (i > 0) work.push({ text: "," })
    }
    return "["
  }
  return pushObject(value, work)
}

/** The value an object's `toJSON` stands in for (again while the result has one), else the value itself. */
const withoutToJson = (value: unknown): unknown => {
  for (;;) {
    if (typeof value !== "object" || value === null) return value
    const json = (value as { readonly toJSON?: unknown }).toJSON
    if (typeof json !== "function") return value
    value = json.call(value)
  }
}

/** A value that is not an object, as JSON: strings, booleans and finite numbers as `JSON.stringify` writes them, anything else `null`. */
const scalarText = (value: unknown): string => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value)
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null"
    default:
      return "null"
  }
}

const pushObject = (record: object, work: Array<Work>, timestamp?: string): string => {
  const members: Array<readonly [string, unknown]> = []
  for (const key of Object.keys(record).sort()) {
    const item =
      timestamp !== undefined && key === "timestamp" ? timestamp : (record as Readonly<Record<string, unknown>>)[key]
    if (!isOmitted(item)) members.push([key, item])
  }
  work.push({ text: "}" })
  for (let i = members.length - 1; i >= 0; i--) {
    const [key, item] = members[i]!
    work.push({ value: item })
    work.push({ text: (i === 0 ? "" : ",") + JSON.stringify(key) + ":" })
  }
  return "{"
}

const isOmitted = (value: unknown): boolean =>
  value === undefined || typeof value === "function" || typeof value === "symbol"
