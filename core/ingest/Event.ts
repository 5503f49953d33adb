/**
 * The inbound Direct API event (spec `direct-api-ingestion.md`, "Resources and their fields",
 * Event): one JSON object per request, snake_case field names exactly as the spec's table.
 *
 * `validateEvent` decodes an untrusted body once (parse, don't validate) and reports every failing
 * field at once as `{ path, message }` issues. Messages say what was expected and never echo what
 * was received (no raw values in errors). The decoder is written out by hand, one pass
 * over the fields, rather than built with `effect/Schema`: it runs on every ingest request, and the
 * generic decoder cost more than all the other ingestion rules together.
 *
 * Rules the spec leaves loose, fixed here:
 * - `event_name`: "static lower_snake_case string", 1–64 characters; a segment that looks like an
 *   identifier ({@link isIdentifierSegment}) is refused (`checkout_completed_12345`,
 *   `user_5f3a9c2e_login`, `user_deadbeefcafe_login`, `order_a1b2c3_paid`).
 * - `timestamp`: "ISO 8601 UTC": an RFC 3339 timestamp ending in `Z` or `+00:00`, not before
 *   {@link minEventTimestamp} and at most {@link maxFutureSkewMillis} after the receiving clock.
 * - `user` requires `user_id` ("object with `name` and `email` strings for the user in `user_id`").
 * - `sentiment_score`, `sentiment_confidence` and `sentiment_source` require `sentiment`.
 */
import * as Either from "effect/Either"
import { parseTimestamp } from "../protocol/Timestamp.ts"
import { isSafeIdentifier } from "../protocol/Identifier.ts"
import type { FieldIssue } from "../protocol/Json.ts"
import { remembering } from "./Memo.ts"
import { pathSegment } from "./Safety.ts"

/**
 * How far after the receiving clock an event's `timestamp` may be: five minutes, the same clock
 * skew the connector accepts (docs/decisions.md, "Timestamp freshness"). A later one is implausible
 * for "when the event occurred".
 */
export const maxFutureSkewMillis = 300_000

/**
 * The earliest accepted event `timestamp`: 2000-01-01T00:00:00Z. Backfills of real history fit
 * after it; what falls before it is a sender's zero or default date (Go's and .NET's
 * `0001-01-01`, the Unix epoch), not when the event occurred.
 */
export const minEventTimestamp = 946_684_800_000

/**
 * The spec's lower_snake_case: a lowercase letter, then lowercase letters and digits, segments
 * joined by single underscores.
 */
export const lowerSnakePattern: RegExp = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/

/**
 * A lower_snake_case code of 1 to `max` characters (`semantic_type`, `event_kind`, rollup keys).
 */
export const isLowerSnake = (value: unknown, max = 64): value is string =>
  typeof value === "string" && value.length >= 1 && value.length <= max && lowerSnakePattern.test(value)

/**
 * Parses "ISO 8601 UTC": an RFC 3339 timestamp whose offset is `Z` or `+00:00`. Epoch
 * milliseconds, or `undefined`.
 */
export const parseUtcTimestamp = (value: unknown): number | undefined =>
  typeof value === "string" && /(?:[Zz]|\+00:00)$/.test(value) ? parseTimestamp(value) : undefined

/**
 * What a UTC timestamp should look like, for issue messages.
 */
export const utcTimestampExpectation =
  "an ISO 8601 UTC timestamp such as 2026-11-22T10:15:30.000Z (ending in Z or +00:00)"

/** Lower-case vowels, `y` included (`rhythm`, `sync` are words). */
const isVowel = (code: number): boolean =>
  code === 97 || code === 101 || code === 105 || code === 111 || code === 117 || code === 121

/**
 * Whether one `_`-separated segment of an event name is an embedded identifier rather than a word:
 * all digits; 8+ characters containing a digit (hex, UUID, ULID or database ids); 8+ letters that
 * are all hex digits (`deadbeefcafe`); letters and digits alternating 4+ times (`a1b2c3`); or 6+
 * letters without a vowel (random lowercase ids). Words with a version or a digit in them stay
 * names: `oauth2`, `s3`, `v2`, `e2e`, `k8s`. Reads a segment of lower_snake_case (`[a-z0-9]`).
 */
export const isIdentifierSegment = (segment: string): boolean => {
  let digits = 0
  let switches = 0
  let hexLetters = true
  let vowels = false
  let previousDigit = false
  for (let i = 0; i < segment.length; i++) {
    const code = segment.charCodeAt(i)
    const isDigit = code >= 48 && code <= 57
    if (isDigit) digits++
    else {
      if (code < 97 || code > 102) hexLetters = false
      if (isVowel(code)) vowels = true
    }
    if (i > 0 && isDigit !== previousDigit) switches++
    previousDigit = isDigit
  }
  const length = segment.length
  return (
    (length > 0 && digits === length) ||
    (length >= 8 && digits > 0) ||
    switches >= 4 ||
    (digits === 0 && ((length >= 8 && hexLetters) || (length >= 6 && !vowels)))
  )
}

/**
 * Why `name` is not a valid `event_name`, or `undefined` when it is. Remembered per valid-looking
 * name (senders repeat a few).
 */
export const eventNameProblem: (name: string) => string | undefined = remembering(
  (name: string) => {
    if (name.length < 1 || name.length > 64 || !lowerSnakePattern.test(name)) {
      return "must be a static lower_snake_case name of 1 to 64 characters, such as checkout_completed"
    }
    if (name.split("_").some(isIdentifierSegment)) {
      return (
        "must be a static name without embedded identifiers (a segment of digits, hex, mixed letters and " +
        "digits, or letters without vowels); put identifiers in event_id or properties"
      )
    }
    return undefined
  },
  { keep: (name) => name.length <= 64 && lowerSnakePattern.test(name) }
)

const noControl = /^[^\u0000-\u001f\u007f]*$/
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/
const visibleAscii = /^[\x21-\x7e]{1,256}$/

/**
 * `sentiment`: "positive, neutral, negative, unknown".
 */
export const sentiments = ["positive", "neutral", "negative", "unknown"] as const

/** An event's sentiment: `positive`, `neutral`, `negative` or `unknown`. */
export type Sentiment = (typeof sentiments)[number]

/**
 * `sentiment_source`: "explicit, inferred, ai, integration, unknown".
 */
export const sentimentSources = ["explicit", "inferred", "ai", "integration", "unknown"] as const

/**
 * Where an event's sentiment came from: sent explicitly, inferred, from an AI model or an
 * integration, or unknown.
 */
export type SentimentSource = (typeof sentimentSources)[number]

/**
 * `user`: "object with `name` and `email` strings for the user in `user_id`". Both optional:
 * sending a field updates it, leaving it out keeps the stored value.
 */
export interface User {
  readonly name?: string
  readonly email?: string
}

/**
 * The event as the spec's table lists it: exactly the fields sent, each within its rule.
 * `properties` is a JSON object whose bounds and contents `Safety.screenProperties` screens.
 */
export interface Event {
  readonly event_name: string
  readonly account_id: string
  readonly timestamp: string
  readonly event_id?: string
  readonly user_id?: string
  readonly user?: User
  readonly semantic_type?: string
  readonly event_kind?: string
  readonly value?: number
  readonly properties?: { readonly [key: string]: unknown }
  readonly sentiment?: Sentiment
  readonly sentiment_score?: number
  readonly sentiment_confidence?: number
  readonly sentiment_source?: SentimentSource
}

/**
 * An event that passed {@link validateEvent}, including the checks that need the receiving clock.
 */
export type ValidEvent = Event

/**
 * When a validated event occurred, in epoch milliseconds.
 */
export const occurredAt = (event: Pick<Event, "timestamp">): number => parseUtcTimestamp(event.timestamp) ?? Number.NaN

/**
 * "Each request carries one small JSON event, not raw logs or large arrays": an array body is a
 * batch, which the endpoint refuses (high-volume usage belongs in `usage_rollup_recorded` events).
 */
export const isBatch = (raw: unknown): raw is ReadonlyArray<unknown> => Array.isArray(raw)

const batchMessage =
  "the body must be one event object, not an array: send one request per event, and aggregate " +
  "high-volume usage into usage_rollup_recorded events (one per account, product, metric and closed time bucket)"

const accountIdMissing =
  "account_id is required: events attach to customer accounts by account_id, the stable id " +
  "of the customer, account, workspace, tenant, company or organization"

const isString = (value: unknown): value is string => typeof value === "string"

/** A JSON object: not `null`, not an array. */
const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * An opaque id: 1–256 characters, no surrounding whitespace, and the one identifier rule
 * (`Identifier.isSafeIdentifier`: no control, bidi, zero-width or unpaired surrogate character).
 */
const isOpaqueId = (value: unknown): boolean =>
  isString(value) && value.length >= 1 && value.length <= 256 && isSafeIdentifier(value) && value.trim() === value

const isLowerSnakeCode = (value: unknown): boolean => isLowerSnake(value)

const isFiniteIn =
  (min: number, max: number) =>
  (value: unknown): boolean =>
    typeof value === "number" && Number.isFinite(value) && value >= min && value <= max

const isOneOf =
  (values: ReadonlyArray<string>) =>
  (value: unknown): boolean =>
    isString(value) && values.includes(value)

/**
 * One field of the event: its name, the problem with a present value (`undefined` when it is
 * valid; issues with their own paths for an object field), and for a required field the message
 * when it is missing.
 */
interface FieldRule {
  readonly name: keyof Event
  readonly problem: (value: unknown, now: number) => string | ReadonlyArray<FieldIssue> | undefined
  readonly missing?: string
}

const expect =
  (check: (value: unknown) => boolean, expectation: string) =>
  (value: unknown): string | undefined =>
    check(value) ? undefined : `must be ${expectation}`

const timestampProblem = (value: unknown, now: number): string | undefined => {
  const at = parseUtcTimestamp(value)
  if (at === undefined) return `must be ${utcTimestampExpectation}`
  if (at < minEventTimestamp) {
    return (
      "is implausibly old: events before 2000-01-01T00:00:00Z are refused (a zero or default date such as " +
      "0001-01-01 or 1970-01-01 is a bug in the sender); send when the event occurred, in UTC"
    )
  }
  if (at - now > maxFutureSkewMillis) {
    return (
      `is implausibly far in the future: at most ${maxFutureSkewMillis / 60_000} minutes after the time the ` +
      "service received it; send when the event occurred, in UTC"
    )
  }
  return undefined
}

const userFields: ReadonlyArray<readonly [keyof User, (value: unknown) => string | undefined]> = [
  [
    "name",
    expect((v) => isString(v) && v.length >= 1 && v.length <= 200 && noControl.test(v), "a name of 1 to 200 characters")
  ],
  [
    "email",
    expect((v) => isString(v) && v.length <= 254 && emailPattern.test(v), "an e-mail address of at most 254 characters")
  ]
]

/** Issues of a present `user`, at `user.<key>` (`undefined` when there are none). */
const userProblem = (value: unknown): string | ReadonlyArray<FieldIssue> | undefined => {
  if (!isObject(value)) return "must be an object with optional name and email"
  const issues: Array<FieldIssue> = []
  for (const key of Object.keys(value)) {
    if (key !== "name" && key !== "email") {
      issues.push({
        path: `user.${pathSegment(key)}`,
        message: "is not a field of user, which has only name and email"
      })
    }
  }
  for (const [name, problem] of userFields) {
    const message = hasOwn(value, name) ? problem(value[name]) : undefined
    if (message !== undefined) issues.push({ path: `user.${name}`, message })
  }
  return issues.length > 0 ? issues : undefined
}

const opaqueIdExpectation =
  "a string of 1 to 256 characters without surrounding whitespace, control, bidi, zero-width or unpaired surrogate characters"
const codeExpectation = "a lower_snake_case code of 1 to 64 characters"

/** The fields in the spec's order. */
const fieldRules: ReadonlyArray<FieldRule> = [
  {
    name: "event_name",
    problem: (value) =>
      isString(value) ? eventNameProblem(value) : "must be a static lower_snake_case name such as checkout_completed",
    missing: "event_name is required: a static lower_snake_case name such as checkout_completed"
  },
  { name: "account_id", problem: expect(isOpaqueId, opaqueIdExpectation), missing: accountIdMissing },
  {
    name: "timestamp",
    problem: timestampProblem,
    missing: `timestamp is required: ${utcTimestampExpectation} of when the event occurred`
  },
  {
    name: "event_id",
    problem: expect((v) => isString(v) && visibleAscii.test(v), "1 to 256 visible ASCII characters")
  },
  { name: "user_id", problem: expect(isOpaqueId, opaqueIdExpectation) },
  { name: "user", problem: userProblem },
  { name: "semantic_type", problem: expect(isLowerSnakeCode, codeExpectation) },
  { name: "event_kind", problem: expect(isLowerSnakeCode, codeExpectation) },
  { name: "value", problem: expect(isFiniteIn(-Infinity, Infinity), "a finite number") },
  { name: "properties", problem: (value) => (isObject(value) ? undefined : "must be a JSON object") },
  { name: "sentiment", problem: expect(isOneOf(sentiments), `one of ${sentiments.join(", ")}`) },
  { name: "sentiment_score", problem: expect(isFiniteIn(-1, 1), "a number from -1 to 1") },
  { name: "sentiment_confidence", problem: expect(isFiniteIn(0, 1), "a number from 0 to 1") },
  { name: "sentiment_source", problem: expect(isOneOf(sentimentSources), `one of ${sentimentSources.join(", ")}`) }
]

const fieldNames: ReadonlySet<string> = new Set(fieldRules.map((rule) => rule.name))

const hasOwn = (object: object, key: string): boolean => Object.hasOwn(object, key)

/**
 * A decoded body: the fields that passed their own rules (all of them when `issues` is empty, and
 * then exactly the body sent) and every issue, in field order after unknown fields.
 */
export interface DecodedEvent {
  readonly fields: Partial<Event>
  readonly issues: ReadonlyArray<FieldIssue>
}

/**
 * Decodes one inbound body at `now` (the receiving clock, epoch milliseconds), field by field.
 * An array or non-object body gets one issue at path `""` and no fields.
 */
export const decodeEvent = (raw: unknown, now: number): DecodedEvent => {
  if (isBatch(raw)) return { fields: {}, issues: [{ path: "", message: batchMessage }] }
  if (!isObject(raw)) return { fields: {}, issues: [{ path: "", message: "the body must be one JSON event object" }] }
  const issues: Array<FieldIssue> = []
  for (const key of Object.keys(raw)) {
    if (!fieldNames.has(key))
      issues.push({ path: pathSegment(key), message: "is not a field of the event; put custom data in properties" })
  }
  // bit i set: field i is present and broken (14 fields)
  let broken = 0
  for (let i = 0; i < fieldRules.length; i++) {
    const { missing, name, problem } = fieldRules[i]!
    if (!hasOwn(raw, name)) {
      if (missing !== undefined) issues.push({ path: name, message: missing })
      continue
    }
    const found = problem(raw[name], now)
    if (found === undefined) continue
    if (typeof found === "string") issues.push({ path: name, message: found })
    else issues.push(...found)
    broken |= 1 << i
  }
  if (raw.user !== undefined && raw.user_id === undefined) {
    issues.push({ path: "user", message: "requires user_id: the service keeps the latest name and email per user_id" })
  }
  if (raw.sentiment === undefined) {
    for (const field of ["sentiment_score", "sentiment_confidence", "sentiment_source"] as const) {
      if (raw[field] !== undefined) issues.push({ path: field, message: "requires sentiment (the label it qualifies)" })
    }
  }
  // valid: exactly the fields sent, so the body itself is the event (no copy)
  if (issues.length === 0) return { fields: raw as Partial<Event>, issues }
  const fields: Record<string, unknown> = {}
  fieldRules.forEach(({ name }, i) => {
    if (hasOwn(raw, name) && (broken & (1 << i)) === 0) fields[name] = raw[name]
  })
  return { fields: fields as Partial<Event>, issues }
}

/**
 * Decodes one inbound event at `now` (the receiving clock, epoch milliseconds). Every failing field
 * is reported; an array or non-object body gets one issue at path `""`.
 */
export const validateEvent = (raw: unknown, now: number): Either.Either<ValidEvent, ReadonlyArray<FieldIssue>> => {
  const { fields, issues } = decodeEvent(raw, now)
  return issues.length > 0 ? Either.left(issues) : Either.right(fields as ValidEvent)
}
