/**
 * The ingestion rules for the `POST /api/events/ingest` route: one pure function from an untrusted
 * JSON body to either the rows to write or the reason it is refused (spec "Errors" 1: "rejected
 * payloads explain a missing `account_id`, an authentication failure or missing revenue
 * relevance"). Authentication and HTTP status mapping are the route's, storage the commit's.
 *
 * An array body is a batch: {@link BatchNotAccepted} ("one small JSON event, not raw logs or large
 * arrays"). Any other body goes through every rule, and every issue is collected, so a client
 * learns all it must change from one answer:
 * - data that must never be sent, in `properties` and in the identifiers `account_id`, `user_id`
 *   and `event_id` (`Safety`);
 * - the event contract (`Event.decodeEvent`), property bounds, usage rollup rules and profile-fact
 *   forms;
 * - revenue relevance (`Relevance`).
 *
 * The refusal is chosen by precedence:
 * 1. anything unsafe: {@link UnsafeEvent}, listing the unsafe paths first and then every other
 *    issue, each with its code. The data must not be sent again however the rest is fixed, and a
 *    leaked secret may need rotating, so this outranks everything;
 * 2. not revenue-relevant: {@link NotRevenueRelevant}. The event should not be sent at all, so
 *    fixing its fields would only lead to this refusal;
 * 3. the contract: {@link InvalidEvent} with every issue.
 * Then normalization (`Normalize.normalizeEvent`).
 *
 * The unit-stability check of a usage rollup needs the meter's stored unit, so it is settled at
 * commit (`IngestWriter`); `Accept` runs these rules and the commit in one call.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Crypto, type CryptoService } from "../ports/Crypto.ts"
import { sha256HexWith } from "../protocol/Digest.ts"
import type { StoredEvent } from "../ports/EventStore.ts"
import { decodeEvent, isBatch, type ValidEvent } from "./Event.ts"
import { type NormalizedEvent, normalizeEvent } from "./Normalize.ts"
import { profileFactIssues } from "./Profile.ts"
import { checkRevenueRelevance } from "./Relevance.ts"
import { type SafetyIssue, screenEnvelope, screenProperties } from "./Safety.ts"
import { unstorableTextIssues } from "../protocol/Text.ts"
import { rollupBucketKey, suggestedEventId, validateRollup } from "./UsageRollup.ts"

/**
 * The kinds of issue an event can have, as problem codes.
 */
export const EventIssueCode: Schema.Literal<["unsafe_property", "invalid_event", "not_revenue_relevant"]> =
  Schema.Literal("unsafe_property", "invalid_event", "not_revenue_relevant")

/**
 * One issue of an event: where, what was expected (never the received value), and its kind.
 */
export const EventIssue = Schema.Struct({ path: Schema.String, message: Schema.String, code: EventIssueCode })

export type EventIssue = typeof EventIssue.Type

/**
 * The body is an array: one event per request.
 */
export class BatchNotAccepted extends Schema.TaggedError<BatchNotAccepted>()("BatchNotAccepted", {}) {
  /** The problem-details `code`. */
  get code(): "batch_not_accepted" {
    return "batch_not_accepted"
  }
  override get message(): string {
    return "the body must be one event object, not an array; aggregate high-volume usage into usage_rollup_recorded events"
  }
}

/**
 * The body breaks the event contract: every failing field, without the received values.
 */
export class InvalidEvent extends Schema.TaggedError<InvalidEvent>()("InvalidEvent", {
  issues: Schema.Array(EventIssue)
}) {
  /** The problem-details `code`. */
  get code(): "invalid_event" {
    return "invalid_event"
  }
  override get message(): string {
    return (
      "the event is invalid: " + this.issues.map((issue) => `${issue.path || "(body)"}: ${issue.message}`).join("; ")
    )
  }
}

/**
 * The event holds data that must never be sent: the unsafe paths first, then the event's other
 * issues (paths and reasons only, each with its code).
 */
export class UnsafeEvent extends Schema.TaggedError<UnsafeEvent>()("UnsafeEvent", {
  issues: Schema.Array(EventIssue)
}) {
  /** The problem-details `code`. */
  get code(): "unsafe_property" {
    return "unsafe_property"
  }
  override get message(): string {
    return (
      "the event carries data that must never be sent: " +
      this.issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
    )
  }
}

/**
 * The event is noise the Direct API refuses (page views, modal opens, hovers, toggles, debug logs).
 */
export class NotRevenueRelevant extends Schema.TaggedError<NotRevenueRelevant>()("NotRevenueRelevant", {
  reason: Schema.String
}) {
  /** The problem-details `code`. */
  get code(): "not_revenue_relevant" {
    return "not_revenue_relevant"
  }
  override get message(): string {
    return this.reason
  }
}

/**
 * Every reason an event is refused: an array body, an invalid or unsafe event, or one not
 * revenue-relevant.
 */
export type IngestRejection = BatchNotAccepted | InvalidEvent | UnsafeEvent | NotRevenueRelevant

/**
 * An accepted event, ready to store.
 */
export interface PreparedEvent extends NormalizedEvent {
  readonly event: ValidEvent
  /** For a usage rollup sent without `event_id`: the deterministic id it should carry (a hint to echo). */
  readonly suggestedEventId: Option.Option<string>
}

/**
 * What preparing needs besides the body: Accord's id for the row, the ingest key's workspace, and
 * the receiving clock (epoch ms), which is also the row's `receivedAt`.
 */
export interface IngestContext {
  readonly id: string
  readonly workspaceId: string
  readonly now: number
}

const issue =
  (code: EventIssue["code"]) =>
  ({ path, reason }: SafetyIssue): EventIssue => ({ path, message: reason, code })
const unsafeIssue = issue("unsafe_property")
const boundsIssue = issue("invalid_event")

/**
 * Applies every ingestion rule to one parsed JSON body (see the module comment for the precedence).
 */
export const prepareEvent = (raw: unknown, context: IngestContext): Either.Either<PreparedEvent, IngestRejection> => {
  if (isBatch(raw)) return Either.left(new BatchNotAccepted())
  const { fields, issues } = decodeEvent(raw, context.now)
  const unsafe: Array<EventIssue> = []
  const invalid: Array<EventIssue> = []
  for (const { message, path } of issues) invalid.push({ path, message, code: "invalid_event" })
  for (const { message, path } of unstorableTextIssues(raw)) invalid.push({ path, message, code: "invalid_event" })
  if (typeof raw === "object" && raw !== null) {
    for (const found of screenEnvelope(raw as Readonly<Record<string, unknown>>)) unsafe.push(unsafeIssue(found))
  }
  if (fields.properties !== undefined) {
    for (const found of screenProperties(fields.properties)) {
      if (found.code === "unsafe_property") unsafe.push(unsafeIssue(found))
      else invalid.push(boundsIssue(found))
    }
  }
  for (const { message, path } of validateRollup(fields, context.now))
    invalid.push({ path, message, code: "invalid_event" })
  for (const { message, path } of profileFactIssues(fields)) invalid.push({ path, message, code: "invalid_event" })
  const refusal =
    fields.event_name === undefined
      ? Option.none()
      : checkRevenueRelevance({ event_name: fields.event_name, event_kind: fields.event_kind })
  if (unsafe.length > 0) {
    if (Option.isSome(refusal)) {
      invalid.push({ path: refusal.value.path, message: refusal.value.reason, code: "not_revenue_relevant" })
    }
    return Either.left(new UnsafeEvent({ issues: [...unsafe, ...invalid] }))
  }
  if (Option.isSome(refusal)) return Either.left(new NotRevenueRelevant({ reason: refusal.value.reason }))
  if (invalid.length > 0) return Either.left(new InvalidEvent({ issues: invalid }))
  const event = fields as ValidEvent
  const normalized = normalizeEvent(event, {
    id: context.id,
    workspaceId: context.workspaceId,
    receivedAt: context.now
  })
  const bucketKey = rollupBucketKey(event)
  return Either.right({
    ...normalized,
    ...(Option.isSome(bucketKey) ? { stored: { ...normalized.stored, bucketKey: bucketKey.value } } : {}),
    event,
    suggestedEventId: event.event_id === undefined ? suggestedEventId(event) : Option.none()
  })
}

/**
 * The row to append: the normalized row with `payloadHash`, lowercase hex SHA-256 of the canonical
 * payload (docs/decisions.md, "Hex digests").
 */
export const withPayloadHash = (normalized: NormalizedEvent): Effect.Effect<StoredEvent, never, Crypto> =>
  Effect.flatMap(Crypto, (crypto) => withPayloadHashWith(crypto, normalized))

/**
 * The same with a `Crypto` already in hand.
 */
export const withPayloadHashWith = (crypto: CryptoService, normalized: NormalizedEvent): Effect.Effect<StoredEvent> =>
  Effect.map(sha256HexWith(crypto, normalized.payloadHashInput), (payloadHash) => ({
    ...normalized.stored,
    payloadHash
  }))
