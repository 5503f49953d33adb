/**
 * The `EventStore` port: ingested Direct API events (spec `direct-api-ingestion.md`).
 *
 * An event is stored with a few indexed columns (workspace, client `event_id`, account, name,
 * occurrence and receipt times) and its normalized body as JSON. The client `event_id` is unique per
 * workspace: the same id with the same payload is a duplicate (nothing stored twice), with a different
 * payload a conflict. `append` takes a batch so an adapter can commit concurrent requests' events in
 * one transaction.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"
import type { Subject } from "./SuppressionStore.ts"

/**
 * A Direct API event as stored: Accord's id, the event's own fields, its payload hash and when it
 * was received.
 */
export interface StoredEvent {
  /** Accord's own id for the row. */
  readonly id: string
  readonly workspaceId: string
  /** The client's idempotency id (`event_id`), when sent. */
  readonly eventId: string | null
  readonly accountId: string
  readonly eventName: string
  readonly occurredAt: number
  readonly receivedAt: number
  /** Lowercase hex SHA-256 of the canonical payload, to tell a retry from a different event. */
  readonly payloadHash: string
  /** The normalized event as JSON. */
  readonly body: unknown
  /**
   * For a usage rollup sent without `event_id`: its bucket (`UsageRollup.rollupBucketKey`), unique
   * per workspace. Appending an event whose bucket is already stored replaces that row's payload
   * (same payload: a duplicate), so a bucket's value is always the last one sent, never a sum.
   */
  readonly bucketKey?: string
}

/**
 * What appending an event did: stored, a duplicate of the same payload, or a conflict (same id,
 * other payload).
 */
export type AppendResult =
  | { readonly _tag: "Stored"; readonly event: StoredEvent }
  | { readonly _tag: "Duplicate"; readonly event: StoredEvent }
  | { readonly _tag: "Conflict"; readonly event: StoredEvent }

/** One page of a workspace's events, optionally filtered by account and event name. */
export interface EventQuery {
  readonly workspaceId: string
  readonly accountId?: string
  readonly eventName?: string
  /** Inclusive lower bound on `occurredAt`. */
  readonly from?: number
  /** Exclusive upper bound on `occurredAt`. */
  readonly to?: number
  /** Continue after this position (newest first: strictly older than it). */
  readonly after?: { readonly occurredAt: number; readonly id: string }
  readonly limit: number
}

/** An event by Accord's id, with when it is expected to have occurred (see `getByIds`). */
export interface EventRef {
  readonly id: string
  readonly occurredAt: number
}

/** An event removed by an erasure: Accord's id for the row and the `user_id` it carried, if any. */
export interface ErasedEvent {
  readonly id: string
  readonly userId: string | null
}

/**
 * How long a workspace keeps its raw events: a number of days (a positive integer), or `"forever"`.
 * Profiles, logins and rollups are kept whatever it is: only raw events expire.
 */
export type Retention = number | "forever"

/** What one retention sweep is told: the time now and the retention of a workspace without its own. */
export interface RetentionPolicy {
  readonly now: number
  readonly defaultRetention: Retention
  /** Rows one delete statement removes at most (an adapter's own bound when absent). */
  readonly batchSize?: number
}

/**
 * What one retention sweep did: the storage it prepared ahead and dropped whole (an adapter
 * without partitions answers none), and the rows it deleted one bounded batch at a time.
 */
export interface RetentionSweep {
  readonly createdPartitions: ReadonlyArray<string>
  readonly droppedPartitions: ReadonlyArray<string>
  /** Expired events removed by bounded deletes (not counting those of dropped partitions). */
  readonly deletedEvents: number
  /** Idempotency keys (`event_id`, usage rollup buckets) of expired events removed. */
  readonly deletedKeys: number
}

/** The event port: append events idempotently by `event_id`, read and page them. */
export interface EventStoreService {
  /**
   * One result per event, in order. Events with the same `eventId` in one batch: the first wins.
   * An event with a `bucketKey` already stored (in the store or earlier in the batch) with another
   * payload replaces that row's `occurredAt`, `receivedAt`, `payloadHash` and `body` (the row keeps
   * its `id`) and is `Stored` as the row now is; with the same payload it is a `Duplicate`.
   */
  readonly append: (events: ReadonlyArray<StoredEvent>) => Effect.Effect<ReadonlyArray<AppendResult>, StorageError>
  /** Newest first by `occurredAt`, then by `id` descending. */
  readonly list: (query: EventQuery) => Effect.Effect<ReadonlyArray<StoredEvent>, StorageError>
  /**
   * Every matching event, in `list`'s order: a complete search, not a page. For narrow queries
   * only, such as one account's events of one name (the feature-gate evidence).
   */
  readonly listAll: (
    query: Omit<EventQuery, "limit" | "after">
  ) => Effect.Effect<ReadonlyArray<StoredEvent>, StorageError>
  /**
   * The workspace's events with these ids (Accord's), in no particular order; unknown ids are left
   * out. Each id comes with when its event is expected to have occurred (a profile fact's
   * `observedAt`): a hint that lets a store read only where such events are kept. An event that
   * occurred at another time (a rollup bucket's row takes the time of the last resend) is still
   * found.
   */
  readonly getByIds: (
    workspaceId: string,
    refs: ReadonlyArray<EventRef>
  ) => Effect.Effect<ReadonlyArray<StoredEvent>, StorageError>
  /** The stored event with this `event_id` in the workspace, if any. */
  readonly findByEventId: (
    workspaceId: string,
    eventId: string
  ) => Effect.Effect<Option.Option<StoredEvent>, StorageError>
  /**
   * Removes every event of the subject in the workspace: an account's events (`account_id`), or
   * every event a user caused (`user_id`, in any account). Answers what it removed.
   */
  readonly eraseSubject: (
    workspaceId: string,
    subject: Subject
  ) => Effect.Effect<ReadonlyArray<ErasedEvent>, StorageError>
  /** The workspace's own retention, when one was set; none means the server's default applies. */
  readonly retention: (workspaceId: string) => Effect.Effect<Option.Option<Retention>, StorageError>
  /** Sets the workspace's own retention (`at`: when it was set). */
  readonly setRetention: (workspaceId: string, retention: Retention, at: number) => Effect.Effect<void, StorageError>
  /**
   * Removes every event older than its workspace's retention (`Retention.expiredBefore`), with its
   * idempotency key, and prepares storage for the events about to arrive. An event inside its
   * workspace's retention is never removed, and every other read keeps working during a sweep.
   */
  readonly sweep: (policy: RetentionPolicy) => Effect.Effect<RetentionSweep, StorageError>
}

/** The service tag of the event store. */
export class EventStore extends Context.Tag("@accord/core/EventStore")<EventStore, EventStoreService>() {}

/**
 * The newest-first order every adapter uses.
 */
export const newestFirst = (a: StoredEvent, b: StoredEvent): number =>
  b.occurredAt - a.occurredAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
