/**
 * The inbound Direct API event (spec `direct-api-ingestion.md`, "Resources and their fields",
 * Event): one JSON object per request, snake_case field names exactly as the spec's table.
 *
 * `validateEvent` decodes an untrusted body once (parse, don't validate) and reports every failing
 * field at once as `{ path, message }` issues. Messages say what was expected and never echo what
 * was received (DESIGN D8: no raw values in errors).
 *
 * Rules the spec leaves loose, fixed here:
 * - `event_name`: "static lower_snake_case string", 1–64 characters; a segment that is all digits,
 *   or 8+ characters containing a digit, is an embedded identifier and is refused
 *   (`checkout_completed_12345`, `user_5f3a9c2e_login`).
 * - `timestamp`: "ISO 8601 UTC": an RFC 3339 timestamp ending in `Z` or `+00:00`, at most
 *   {@link maxFutureSkewMillis} after the receiving clock.
 * - `user` requires `user_id` ("object with `name` and `email` strings for the user in `user_id`").
 * - `sentiment_score`, `sentiment_confidence` and `sentiment_source` require `sentiment`.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { exactParseOptions } from "../messages/Common.ts"
import { parseTimestamp } from "../Timestamp.ts"
import type { FieldIssue } from "../Verification.ts"

/**
 * How far after the receiving clock an event's `timestamp` may be: five minutes, the same clock
 * skew the connector accepts (DESIGN D5). A later one is implausible for "when the event occurred".
 *
 * @since 0.1.0
 */
export const maxFutureSkewMillis = 300_000

/**
 * The spec's lower_snake_case: a lowercase letter, then lowercase letters and digits, segments
 * joined by single underscores.
 *
 * @since 0.1.0
 */
export const lowerSnakePattern: RegExp = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/

/**
 * A lower_snake_case code of 1 to `max` characters (`semantic_type`, `event_kind`, rollup keys).
 *
 * @since 0.1.0
 */
export const isLowerSnake = (value: unknown, max = 64): value is string =>
  typeof value === "string" && value.length >= 1 && value.length <= max && lowerSnakePattern.test(value)

/**
 * Parses "ISO 8601 UTC": an RFC 3339 timestamp whose offset is `Z` or `+00:00`. Epoch
 * milliseconds, or `undefined`.
 *
 * @since 0.1.0
 */
export const parseUtcTimestamp = (value: unknown): number | undefined =>
  typeof value === "string" && /(?:[Zz]|\+00:00)$/.test(value) ? parseTimestamp(value) : undefined

/**
 * What a UTC timestamp should look like, for issue messages.
 *
 * @since 0.1.0
 */
export const utcTimestampExpectation = "an ISO 8601 UTC timestamp such as 2026-11-22T10:15:30.000Z (ending in Z or +00:00)"

const digit = /[0-9]/

/**
 * Whether one `_`-separated segment of an event name is an embedded identifier rather than a word:
 * all digits, or at least 8 characters containing a digit (hex, UUID, ULID or database ids).
 *
 * @since 0.1.0
 */
export const isIdentifierSegment = (segment: string): boolean =>
  /^[0-9]+$/.test(segment) || (segment.length >= 8 && digit.test(segment))

/**
 * Why `name` is not a valid `event_name`, or `undefined` when it is.
 *
 * @since 0.1.0
 */
export const eventNameProblem = (name: string): string | undefined => {
  if (name.length < 1 || name.length > 64 || !lowerSnakePattern.test(name)) {
    return "must be a static lower_snake_case name of 1 to 64 characters, such as checkout_completed"
  }
  if (name.split("_").some(isIdentifierSegment)) {
    return "must be a static name without embedded identifiers (a segment that is all digits, or 8+ characters " +
      "with digits); put identifiers in event_id or properties"
  }
  return undefined
}

const noControl = /^[^\u0000-\u001f\u007f]*$/
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/

const string = (expectation: string, check: (s: string) => boolean) =>
  Schema.String.annotations({ message: () => `must be ${expectation}` }).pipe(
    Schema.filter((s) => check(s) || `must be ${expectation}`)
  )

const finite = (expectation: string, check: (n: number) => boolean) =>
  Schema.Number.annotations({ message: () => `must be ${expectation}` }).pipe(
    Schema.filter((n) => (Number.isFinite(n) && check(n)) || `must be ${expectation}`)
  )

/** An opaque id: 1–256 characters, no control characters, no surrounding whitespace. */
const opaqueId = (s: string): boolean => s.length >= 1 && s.length <= 256 && noControl.test(s) && s.trim() === s

const required = <S extends Schema.Schema.All>(schema: S, missing: string) =>
  Schema.propertySignature(schema).annotations({ missingMessage: () => missing })

const optional = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**
 * `event_name`: static lower_snake_case, no embedded identifiers.
 *
 * @since 0.1.0
 */
export const EventName: Schema.Schema<string> = Schema.String.annotations({
  message: () => "must be a static lower_snake_case name such as checkout_completed"
}).pipe(Schema.filter((s) => eventNameProblem(s) ?? true))

/**
 * `user`: "object with `name` and `email` strings for the user in `user_id`". Both optional:
 * sending a field updates it, leaving it out keeps the stored value.
 *
 * @since 0.1.0
 */
export const User = Schema.Struct({
  name: optional(string("a name of 1 to 200 characters", (s) => s.length >= 1 && s.length <= 200 && noControl.test(s))),
  email: optional(string("an e-mail address of at most 254 characters", (s) => s.length <= 254 && emailPattern.test(s)))
}).annotations({ message: () => "must be an object with optional name and email", parseOptions: exactParseOptions })

/**
 * `properties`: a JSON object; its bounds and contents are screened by `Safety.screenProperties`.
 *
 * @since 0.1.0
 */
export const Properties: Schema.Record$<typeof Schema.String, typeof Schema.Unknown> = Schema.Record({
  key: Schema.String,
  value: Schema.Unknown
}).annotations({
  message: () => "must be a JSON object"
})

/**
 * `sentiment`: "positive, neutral, negative, unknown".
 *
 * @since 0.1.0
 */
export const Sentiment: Schema.Literal<["positive", "neutral", "negative", "unknown"]> = Schema.Literal(
  "positive",
  "neutral",
  "negative",
  "unknown"
).annotations({ message: () => "must be one of positive, neutral, negative, unknown" })

/**
 * @since 0.1.0
 */
export type Sentiment = typeof Sentiment.Type

/**
 * `sentiment_source`: "explicit, inferred, ai, integration, unknown".
 *
 * @since 0.1.0
 */
export const SentimentSource: Schema.Literal<["explicit", "inferred", "ai", "integration", "unknown"]> = Schema
  .Literal("explicit", "inferred", "ai", "integration", "unknown")
  .annotations({ message: () => "must be one of explicit, inferred, ai, integration, unknown" })

/**
 * @since 0.1.0
 */
export type SentimentSource = typeof SentimentSource.Type

const accountIdMissing = "account_id is required: events attach to customer accounts by account_id, the stable id " +
  "of the customer, account, workspace, tenant, company or organization"

/**
 * The event as the spec's table lists it. Unknown fields are errors, top level and in `user`.
 *
 * @since 0.1.0
 */
export const Event = Schema.Struct({
  event_name: required(EventName, "event_name is required: a static lower_snake_case name such as checkout_completed"),
  account_id: required(string("a string of 1 to 256 characters without surrounding whitespace", opaqueId), accountIdMissing),
  timestamp: required(
    string(utcTimestampExpectation, (s) => parseUtcTimestamp(s) !== undefined),
    `timestamp is required: ${utcTimestampExpectation} of when the event occurred`
  ),
  event_id: optional(string("1 to 256 visible ASCII characters", (s) => /^[\x21-\x7e]{1,256}$/.test(s))),
  user_id: optional(string("a string of 1 to 256 characters without surrounding whitespace", opaqueId)),
  user: optional(User),
  semantic_type: optional(string("a lower_snake_case code of 1 to 64 characters", (s) => isLowerSnake(s))),
  event_kind: optional(string("a lower_snake_case code of 1 to 64 characters", (s) => isLowerSnake(s))),
  value: optional(finite("a finite number", () => true)),
  properties: optional(Properties),
  sentiment: optional(Sentiment),
  sentiment_score: optional(finite("a number from -1 to 1", (n) => n >= -1 && n <= 1)),
  sentiment_confidence: optional(finite("a number from 0 to 1", (n) => n >= 0 && n <= 1)),
  sentiment_source: optional(SentimentSource)
}).annotations({ parseOptions: exactParseOptions })

/**
 * A decoded event: exactly the fields sent, each within its rule.
 *
 * @since 0.1.0
 */
export type Event = typeof Event.Type

/**
 * An event that passed {@link validateEvent}, including the checks that need the receiving clock.
 *
 * @since 0.1.0
 */
export type ValidEvent = Event

/**
 * When a validated event occurred, in epoch milliseconds.
 *
 * @since 0.1.0
 */
export const occurredAt = (event: Pick<Event, "timestamp">): number => parseUtcTimestamp(event.timestamp) ?? Number.NaN

/**
 * "Each request carries one small JSON event, not raw logs or large arrays": an array body is a
 * batch, which the endpoint refuses (high-volume usage belongs in `usage_rollup_recorded` events).
 *
 * @since 0.1.0
 */
export const isBatch = (raw: unknown): raw is ReadonlyArray<unknown> => Array.isArray(raw)

const batchMessage = "the body must be one event object, not an array: send one request per event, and aggregate " +
  "high-volume usage into usage_rollup_recorded events (one per account, product, metric and closed time bucket)"

const unexpectedMessage = (path: ReadonlyArray<PropertyKey>): string =>
  path.length > 1 && path[0] === "user"
    ? "is not a field of user, which has only name and email"
    : "is not a field of the event; put custom data in properties"

/**
 * Schema issues as field issues. Unknown-field messages are rewritten (the default lists every
 * expected key), and a default message that could echo the value is replaced by a generic one.
 */
const issuesOf = (error: ParseResult.ParseError): Array<FieldIssue> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue._tag === "Unexpected"
      ? unexpectedMessage(issue.path)
      : issue.message.startsWith("Expected ") || issue.message.includes(", actual ")
      ? "has the wrong type"
      : issue.message
  }))

const decode = Schema.decodeUnknownEither(Event, exactParseOptions)

/**
 * Paths of own `__proto__` keys in `value`, a few levels deep. `JSON.parse` makes them ordinary
 * keys, but copying one into a fresh object (as decoding a record does) would set that object's
 * prototype instead, hiding the data from every later check.
 */
const prototypeKeys = (value: unknown, path: string, depth: number): Array<string> => {
  if (depth > 8 || typeof value !== "object" || value === null) return []
  return Object.keys(value).flatMap((key) =>
    key === "__proto__"
      ? [`${path}.${key}`]
      : prototypeKeys((value as Readonly<Record<string, unknown>>)[key], `${path}.${key}`, depth + 1)
  )
}

/** Checks spanning several fields or needing the clock; they read the raw object so they run alongside decoding. */
const crossFieldIssues = (raw: Readonly<Record<string, unknown>>, now: number): Array<FieldIssue> => {
  const issues: Array<FieldIssue> = prototypeKeys(raw.properties, "properties", 0).map((path) => ({
    path,
    message: "__proto__ is not allowed as a property name"
  }))
  const at = parseUtcTimestamp(raw.timestamp)
  if (at !== undefined && at - now > maxFutureSkewMillis) {
    issues.push({
      path: "timestamp",
      message: `is implausibly far in the future: at most ${maxFutureSkewMillis / 60_000} minutes after the time the service ` +
        "received it; send when the event occurred, in UTC"
    })
  }
  if (raw.user !== undefined && raw.user_id === undefined) {
    issues.push({
      path: "user",
      message: "requires user_id: the service keeps the latest name and email per user_id"
    })
  }
  if (raw.sentiment === undefined) {
    for (const field of ["sentiment_score", "sentiment_confidence", "sentiment_source"] as const) {
      if (raw[field] !== undefined) issues.push({ path: field, message: "requires sentiment (the label it qualifies)" })
    }
  }
  return issues
}

/**
 * Decodes one inbound event at `now` (the receiving clock, epoch milliseconds). Every failing field
 * is reported; an array or non-object body gets one issue at path `""`.
 *
 * @since 0.1.0
 */
export const validateEvent = (raw: unknown, now: number): Either.Either<ValidEvent, ReadonlyArray<FieldIssue>> => {
  if (isBatch(raw)) return Either.left([{ path: "", message: batchMessage }])
  if (typeof raw !== "object" || raw === null) {
    return Either.left([{ path: "", message: "the body must be one JSON event object" }])
  }
  const decoded = decode(raw)
  const issues = [
    ...(Either.isLeft(decoded) ? issuesOf(decoded.left) : []),
    ...crossFieldIssues(raw as Readonly<Record<string, unknown>>, now)
  ]
  return issues.length > 0 || Either.isLeft(decoded) ? Either.left(issues) : Either.right(decoded.right)
}
