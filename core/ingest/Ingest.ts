/**
 * The ingestion rules in order, for the `POST /api/events/ingest` route: one pure function from an
 * untrusted JSON body to either the rows to write or the reason it is refused (spec "Errors" 1:
 * "rejected payloads explain a missing `account_id`, an authentication failure or missing revenue
 * relevance"). Authentication, storage and HTTP status mapping are the route's.
 *
 * 1. An array body is a batch: {@link BatchNotAccepted} ("one small JSON event, not raw logs or
 *    large arrays").
 * 2. The event contract (`Event.validateEvent`), then property bounds, usage rollup rules and
 *    profile-fact forms: {@link InvalidEvent} with every failing field.
 * 3. Data that must never be sent: {@link UnsafeEvent}.
 * 4. Revenue relevance: {@link NotRevenueRelevant}.
 * 5. Normalization (`Normalize.normalizeEvent`).
 *
 * Suggested statuses (DESIGN D8): 400 for a batch, 422 for the other three. The unit-stability
 * check of a usage rollup needs the meter's stored unit, so the route runs
 * `UsageRollup.checkStableMeaning` itself.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Crypto } from "../Crypto.ts"
import { sha256Hex } from "../Digest.ts"
import type { StoredEvent } from "../EventStore.ts"
import { FieldIssue } from "../Verification.ts"
import { isBatch, validateEvent, type ValidEvent } from "./Event.ts"
import { type NormalizedEvent, normalizeEvent } from "./Normalize.ts"
import { profileFactIssues } from "./Profile.ts"
import { checkRevenueRelevance } from "./Relevance.ts"
import { screenProperties } from "./Safety.ts"
import { suggestedEventId, validateRollup } from "./UsageRollup.ts"

/**
 * The body is an array: one event per request.
 *
 * @since 0.1.0
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
 *
 * @since 0.1.0
 */
export class InvalidEvent extends Schema.TaggedError<InvalidEvent>()("InvalidEvent", {
  issues: Schema.Array(FieldIssue)
}) {
  /** The problem-details `code`. */
  get code(): "invalid_event" {
    return "invalid_event"
  }
  override get message(): string {
    return "the event is invalid: " + this.issues.map((issue) => `${issue.path || "(body)"}: ${issue.message}`).join("; ")
  }
}

/**
 * The properties hold data that must never be sent (paths and reasons only).
 *
 * @since 0.1.0
 */
export class UnsafeEvent extends Schema.TaggedError<UnsafeEvent>()("UnsafeEvent", {
  issues: Schema.Array(FieldIssue)
}) {
  /** The problem-details `code`. */
  get code(): "unsafe_property" {
    return "unsafe_property"
  }
  override get message(): string {
    return "the event carries data that must never be sent: " +
      this.issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
  }
}

/**
 * The event is noise the Direct API refuses (page views, modal opens, hovers, toggles, debug logs).
 *
 * @since 0.1.0
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
 * @since 0.1.0
 */
export type IngestRejection = BatchNotAccepted | InvalidEvent | UnsafeEvent | NotRevenueRelevant

/**
 * An accepted event, ready to store.
 *
 * @since 0.1.0
 */
export interface PreparedEvent extends NormalizedEvent {
  readonly event: ValidEvent
  /** For a usage rollup sent without `event_id`: the deterministic id it should carry (a hint to echo). */
  readonly suggestedEventId: Option.Option<string>
}

/**
 * What preparing needs besides the body: Accord's id for the row, the ingest key's workspace, and
 * the receiving clock (epoch ms), which is also the row's `receivedAt`.
 *
 * @since 0.1.0
 */
export interface IngestContext {
  readonly id: string
  readonly workspaceId: string
  readonly now: number
}

/**
 * Applies every ingestion rule to one parsed JSON body (see the module comment for the order).
 *
 * @since 0.1.0
 */
export const prepareEvent = (raw: unknown, context: IngestContext): Either.Either<PreparedEvent, IngestRejection> => {
  if (isBatch(raw)) return Either.left(new BatchNotAccepted())
  const validated = validateEvent(raw, context.now)
  if (Either.isLeft(validated)) return Either.left(new InvalidEvent({ issues: validated.left }))
  const event = validated.right
  const screened = screenProperties(event.properties ?? {})
  const invalid: Array<FieldIssue> = [
    ...screened.filter((issue) => issue.code === "property_bounds").map(({ path, reason }) => ({ path, message: reason })),
    ...validateRollup(event, context.now),
    ...profileFactIssues(event)
  ]
  if (invalid.length > 0) return Either.left(new InvalidEvent({ issues: invalid }))
  const unsafe = screened.filter((issue) => issue.code === "unsafe_property")
  if (unsafe.length > 0) {
    return Either.left(new UnsafeEvent({ issues: unsafe.map(({ path, reason }) => ({ path, message: reason })) }))
  }
  const refusal = checkRevenueRelevance(event)
  if (Option.isSome(refusal)) return Either.left(new NotRevenueRelevant({ reason: refusal.value.reason }))
  const normalized = normalizeEvent(event, { id: context.id, workspaceId: context.workspaceId, receivedAt: context.now })
  return Either.right({
    ...normalized,
    event,
    suggestedEventId: event.event_id === undefined ? suggestedEventId(event) : Option.none()
  })
}

/**
 * The row to append: the normalized row with `payloadHash`, lowercase hex SHA-256 of the canonical
 * payload (DESIGN D3).
 *
 * @since 0.1.0
 */
export const withPayloadHash = (normalized: NormalizedEvent): Effect.Effect<StoredEvent, never, Crypto> =>
  Effect.map(sha256Hex(normalized.payloadHashInput), (payloadHash) => ({ ...normalized.stored, payloadHash }))
