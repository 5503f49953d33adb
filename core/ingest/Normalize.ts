/**
 * Normalization of a validated event into what is stored (spec "What the service does" 3: "the
 * service normalizes them and builds a small account profile from properties").
 *
 * - The stored body is the event in the spec's snake_case fields with the `timestamp` in the
 *   sending form (UTC, milliseconds), `properties` always present, and sentiment resolved.
 * - "The service keeps the latest name and email per `user_id` and leaves them out of event
 *   properties": the `user` object is removed from the body and returned as a user update.
 *   "Sending a field again updates it. Leaving it out keeps the stored value."
 * - Sentiment: "Missing sentiment is stored as `unknown`, not `neutral`"; "explicit payload
 *   sentiment takes precedence over mapped sentiment" (source `explicit` unless one is sent);
 *   otherwise "the service may infer a reviewable default from the event name, semantic type,
 *   event kind and bounded property keys", stored with `sentiment_source` `inferred` and
 *   `sentiment_inferred: true`. Inference yields only `positive` or `negative`: "`neutral` is used
 *   only when the signal is explicitly neutral".
 * - The payload hash covers the event as sent (after decoding; `user` included, inferred fields
 *   excluded) in canonical JSON, with the timestamp in the sending form: a retry with keys in another
 *   order or the same instant written differently is a duplicate, and a change to the inference
 *   rules never turns a retry into a conflict.
 */
import * as Option from "effect/Option"
import type { LoginActivity, ProfileFact, UserField } from "../ports/AccountProfileStore.ts"
import type { StoredEvent } from "../ports/EventStore.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import { occurredAt, type Sentiment, type SentimentSource, type ValidEvent } from "./Event.ts"
import { canonicalObject } from "../protocol/Json.ts"
import { remembering } from "./Memo.ts"
import { extractProfileFacts, loginActivityOf } from "./Profile.ts"

// ---------------------------------------------------------------------------------------------
// sentiment
// ---------------------------------------------------------------------------------------------

/**
 * The sentiment fields of a stored event.
 */
export interface SentimentFields {
  readonly sentiment: Sentiment
  readonly sentiment_source: SentimentSource
  /** `true` when the service mapped the label (a reviewable default), not the sender. */
  readonly sentiment_inferred: boolean
  readonly sentiment_score?: number
  readonly sentiment_confidence?: number
}

const words = (s: string): ReadonlyArray<string> => s.split("_")
const set = (s: string): ReadonlySet<string> => new Set(s.split(" "))

/** Name words that mark friction, failure, limits or lost revenue. */
const negativeWords = set(
  "failed failure failures blocked abandoned declined rejected cancel canceled cancelled cancellation downgrade " +
    "downgraded churn churned paused overage refunded disputed chargeback expired errored exceeded needed"
)
/** Name endings that mark activation, success or expansion. */
const positiveEndings = set(
  "completed succeeded activated upgraded connected added paid adopted active invited configured"
)
/** Property keys that only friction carries (keys, never values). */
const negativeKeys: ReadonlyArray<string> = "error_code failure_code decline_code failure_reason error_type".split(" ")

const hasOwn = (object: object, key: string): boolean => Object.hasOwn(object, key)

/**
 * The reviewable default for an event without `sentiment`, from its name, `semantic_type`,
 * `event_kind` and property keys: `negative` for limit friction, failures, cancellations and
 * downgrades; `positive` for activation, completions, successful payments, upgrades and added
 * seats; `None` (stored as `unknown`) otherwise, e.g. `usage_rollup_recorded` or `user_logged_in`.
 */
export const inferSentiment = (
  event: Pick<ValidEvent, "event_name" | "semantic_type" | "event_kind" | "properties">
): Option.Option<"positive" | "negative"> => {
  const byName = nameSentiment(event.event_name)
  const properties = event.properties
  if (
    event.semantic_type === "limit_friction" ||
    event.event_kind === "friction_event" ||
    byName === "negative" ||
    (properties !== undefined && negativeKeys.some((key) => hasOwn(properties, key)))
  )
    return Option.some("negative")
  if (event.semantic_type === "activation" || byName === "positive") return Option.some("positive")
  return Option.none()
}

/** What the name alone says, remembered per name: its words first (`negative`), then its ending. */
const nameSentiment = remembering((eventName: string): "positive" | "negative" | undefined => {
  const name = words(eventName)
  if (name.some((word) => negativeWords.has(word)) || eventName.endsWith("limit_hit")) return "negative"
  return positiveEndings.has(name[name.length - 1]!) ? "positive" : undefined
})

/**
 * The stored sentiment: explicit first, then an inferred default, else `unknown`.
 */
export const resolveSentiment = (event: ValidEvent): SentimentFields => {
  if (event.sentiment !== undefined) {
    return {
      sentiment: event.sentiment,
      sentiment_source: event.sentiment_source ?? "explicit",
      sentiment_inferred: false,
      ...(event.sentiment_score === undefined ? {} : { sentiment_score: event.sentiment_score }),
      ...(event.sentiment_confidence === undefined ? {} : { sentiment_confidence: event.sentiment_confidence })
    }
  }
  const inferred = inferSentiment(event)
  return Option.isSome(inferred)
    ? { sentiment: inferred.value, sentiment_source: "inferred", sentiment_inferred: true }
    : { sentiment: "unknown", sentiment_source: "unknown", sentiment_inferred: false }
}

// ---------------------------------------------------------------------------------------------
// the normalized event
// ---------------------------------------------------------------------------------------------

/**
 * The stored `body`: the event without `user`, with resolved sentiment.
 */
export interface NormalizedBody extends SentimentFields {
  readonly event_name: string
  readonly account_id: string
  readonly timestamp: string
  readonly event_id?: string
  readonly user_id?: string
  readonly semantic_type?: string
  readonly event_kind?: string
  readonly value?: number
  readonly properties: { readonly [key: string]: unknown }
}

/**
 * The user update an event carries, in `AccountProfileStore.upsertUser`'s shape.
 */
export interface UserUpdate {
  readonly workspaceId: string
  readonly userId: string
  readonly name?: UserField
  readonly email?: UserField
}

/**
 * What normalizing needs besides the event: Accord's id for the row, the workspace of the ingest
 * key, and the receiving time.
 */
export interface NormalizeContext {
  readonly id: string
  readonly workspaceId: string
  readonly receivedAt: number
}

/**
 * A normalized event: the row to append (its `payloadHash` is the caller's SHA-256 of
 * `payloadHashInput`, see `Ingest.withPayloadHash`), the user update, the profile facts and the
 * login it records.
 */
export interface NormalizedEvent {
  readonly stored: Omit<StoredEvent, "payloadHash"> & { readonly body: NormalizedBody }
  readonly payloadHashInput: string
  readonly userUpdate: Option.Option<UserUpdate>
  readonly profileFacts: ReadonlyArray<ProfileFact>
  /** The user's login, for `AccountProfileStore.recordLogins` (login activity with a `user_id`). */
  readonly login: Option.Option<LoginActivity>
}

/**
 * The canonical JSON the payload hash is computed over (see the module comment).
 */
export const payloadHashInput = (event: ValidEvent): string =>
  canonicalObject(event, sendingForm(event.timestamp, occurredAt(event)))

/**
 * A timestamp in the sending form (UTC, milliseconds). Most senders already use it
 * (`toISOString()`): a valid UTC timestamp of 24 characters with an upper-case `T` and `Z` is one,
 * and is kept without formatting it again.
 */
const sendingForm = (timestamp: string, at: number): string =>
  timestamp.length === 24 && timestamp.charCodeAt(10) === 84 && timestamp.charCodeAt(23) === 90
    ? timestamp
    : formatTimestamp(at)

const userUpdateOf = (event: ValidEvent, context: NormalizeContext, at: number): Option.Option<UserUpdate> => {
  const user = event.user
  if (event.user_id === undefined || user === undefined || (user.name === undefined && user.email === undefined)) {
    return Option.none()
  }
  const field = (value: string): UserField => ({ value, observedAt: at, sourceEventId: context.id })
  return Option.some({
    workspaceId: context.workspaceId,
    userId: event.user_id,
    ...(user.name === undefined ? {} : { name: field(user.name) }),
    ...(user.email === undefined ? {} : { email: field(user.email) })
  })
}

/**
 * Normalizes a validated (and screened) event.
 */
export const normalizeEvent = (valid: ValidEvent, context: NormalizeContext): NormalizedEvent => {
  const at = occurredAt(valid)
  const timestamp = sendingForm(valid.timestamp, at)
  const body: Mutable<NormalizedBody> = {
    event_name: valid.event_name,
    account_id: valid.account_id,
    timestamp,
    properties: valid.properties ?? {},
    ...resolveSentiment(valid)
  }
  if (valid.event_id !== undefined) body.event_id = valid.event_id
  if (valid.user_id !== undefined) body.user_id = valid.user_id
  if (valid.semantic_type !== undefined) body.semantic_type = valid.semantic_type
  if (valid.event_kind !== undefined) body.event_kind = valid.event_kind
  if (valid.value !== undefined) body.value = valid.value
  return {
    stored: {
      id: context.id,
      workspaceId: context.workspaceId,
      eventId: valid.event_id ?? null,
      accountId: valid.account_id,
      eventName: valid.event_name,
      occurredAt: at,
      receivedAt: context.receivedAt,
      body
    },
    payloadHashInput: canonicalObject(valid, timestamp),
    userUpdate: userUpdateOf(valid, context, at),
    profileFacts: extractProfileFacts(valid, context.id, at),
    login: loginActivityOf(valid, { workspaceId: context.workspaceId, sourceEventId: context.id })
  }
}

type Mutable<A> = { -readonly [K in keyof A]: A[K] }
