/**
 * `EventStore` on SQL. A batch is one multi-row `INSERT … ON CONFLICT DO NOTHING` (atomic by
 * itself, so no transaction of its own; callers may wrap it in theirs): the unique
 * `(workspace_id, event_id)` decides duplicates, and rows that were not inserted are read back and
 * compared by payload hash (duplicate or conflict). A usage rollup's bucket (`bucket_key`, unique
 * per workspace) that is already stored with another payload is replaced in place by an `UPDATE`
 * in the same statement sequence (callers run it in their transaction).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  type AppendResult,
  type EventQuery,
  EventStore,
  type EventStoreService,
  type StoredEvent
} from "../../core/ports/EventStore.ts"
import { firstRow, json, num, orStorageError } from "./SqlSupport.ts"

interface Row {
  readonly id: string
  readonly workspace_id: string
  readonly event_id: string | null
  readonly account_id: string
  readonly event_name: string
  readonly occurred_at: unknown
  readonly received_at: unknown
  readonly payload_hash: string
  readonly body: unknown
  readonly bucket_key?: string | null
}

const toEvent = (row: Row): StoredEvent => ({
  id: row.id,
  workspaceId: row.workspace_id,
  eventId: row.event_id,
  accountId: row.account_id,
  eventName: row.event_name,
  occurredAt: num(row.occurred_at),
  receivedAt: num(row.received_at),
  payloadHash: row.payload_hash,
  body: row.body,
  ...(row.bucket_key === null || row.bucket_key === undefined ? {} : { bucketKey: row.bucket_key })
})

/** Batch order by unique key; events sharing a key keep their batch order, so the first one wins. */
const inKeyOrder = (batch: ReadonlyArray<StoredEvent>): ReadonlyArray<StoredEvent> =>
  batch
    .map((event, index) => ({
      event,
      key: `${event.workspaceId}\u0000${event.eventId ?? event.bucketKey ?? ""}`,
      index
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index))
    .map(({ event }) => event)

/** The conditions of a query, for `list` (a page) and `listAll`. */
const where = (sql: SqlClient.SqlClient, q: Omit<EventQuery, "limit">) => [
  sql`workspace_id = ${q.workspaceId}`,
  ...(q.accountId === undefined ? [] : [sql`account_id = ${q.accountId}`]),
  ...(q.eventName === undefined ? [] : [sql`event_name = ${q.eventName}`]),
  ...(q.from === undefined ? [] : [sql`occurred_at >= ${q.from}`]),
  ...(q.to === undefined ? [] : [sql`occurred_at < ${q.to}`]),
  ...(q.after === undefined ? [] : [sql`(occurred_at, id) < (${q.after.occurredAt}, ${q.after.id})`])
]

/**
 * A stored event as a row of `accord_events` (the body as a value).
 */
export const eventRow = (e: StoredEvent) => ({
  id: e.id,
  workspace_id: e.workspaceId,
  event_id: e.eventId,
  account_id: e.accountId,
  event_name: e.eventName,
  occurred_at: e.occurredAt,
  received_at: e.receivedAt,
  payload_hash: e.payloadHash,
  body: e.body,
  bucket_key: e.bucketKey ?? null
})

/**
 * The result of each event of a batch, given the ids of the rows the batch's insert wrote: those
 * are `Stored`; any other is compared by payload hash with the row already holding its `event_id`,
 * read in a new statement (its snapshot sees a concurrent inserter that committed meanwhile).
 */
export const resolveAppend = (
  sql: SqlClient.SqlClient,
  batch: ReadonlyArray<StoredEvent>,
  insertedIds: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<AppendResult>, SqlError> =>
  insertedIds.length === batch.length ? Effect.succeed(allStored(batch)) : resolveSome(sql, batch, insertedIds)

/**
 * What `resolveAppend` answers when every row of the batch was inserted (the usual batch; row ids
 * are unique): each is `Stored`, nothing to read back.
 */
export const allStored = (batch: ReadonlyArray<StoredEvent>): ReadonlyArray<AppendResult> =>
  batch.map((event): AppendResult => ({ _tag: "Stored", event }))

const resolveSome = (
  sql: SqlClient.SqlClient,
  batch: ReadonlyArray<StoredEvent>,
  insertedIds: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<AppendResult>, SqlError> =>
  Effect.gen(function* () {
    const stored = new Set(insertedIds)
    const others = batch.filter((e) => !stored.has(e.id) && e.eventId !== null)
    const existing =
      others.length === 0
        ? []
        : yield* sql<Row>`SELECT * FROM accord_events WHERE workspace_id IN ${sql.in(others.map((e) => e.workspaceId))}
          AND event_id IN ${sql.in(others.map((e) => e.eventId))}`
    const byKey = new Map(existing.map((row) => [row.workspace_id + "\u0000" + row.event_id, toEvent(row)]))
    const buckets = batch.filter((e) => !stored.has(e.id) && e.eventId === null && e.bucketKey !== undefined)
    const bucketRows =
      buckets.length === 0
        ? []
        : yield* sql<Row>`SELECT * FROM accord_events WHERE workspace_id IN ${sql.in(buckets.map((e) => e.workspaceId))}
          AND bucket_key IN ${sql.in(buckets.map((e) => e.bucketKey!))}`
    const byBucket = new Map(bucketRows.map((row) => [row.workspace_id + "\u0000" + row.bucket_key, toEvent(row)]))
    const results: Array<AppendResult> = []
    for (const event of batch) {
      if (stored.has(event.id)) {
        if (event.bucketKey !== undefined) byBucket.set(event.workspaceId + "\u0000" + event.bucketKey, event)
        results.push({ _tag: "Stored", event })
        continue
      }
      if (event.eventId === null && event.bucketKey !== undefined) {
        const key = event.workspaceId + "\u0000" + event.bucketKey
        const prior = byBucket.get(key)
        if (prior === undefined)
          results.push({ _tag: "Conflict", event }) // an id collision; cannot happen with fresh ids
        else if (prior.payloadHash === event.payloadHash) results.push({ _tag: "Duplicate", event: prior })
        else {
          // A resend of the bucket with another value: the value now is the new one (never a sum).
          yield* sql`UPDATE accord_events SET occurred_at = ${event.occurredAt}, received_at = ${event.receivedAt},
              payload_hash = ${event.payloadHash}, body = ${json(event.body)}
              WHERE workspace_id = ${event.workspaceId} AND bucket_key = ${event.bucketKey}`
          const replaced: StoredEvent = { ...event, id: prior.id }
          byBucket.set(key, replaced)
          results.push({ _tag: "Stored", event: replaced })
        }
        continue
      }
      const prior = byKey.get(event.workspaceId + "\u0000" + event.eventId)
      if (prior === undefined) {
        results.push({ _tag: "Conflict", event })
        continue
      } // an id collision; cannot happen with fresh ids
      results.push(
        prior.payloadHash === event.payloadHash
          ? { _tag: "Duplicate", event: prior }
          : { _tag: "Conflict", event: prior }
      )
    }
    return results
  })

export const make: Effect.Effect<EventStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    append: (batch) =>
      batch.length === 0
        ? Effect.succeed([])
        : Effect.gen(function* () {
            const inserted = yield* sql<{ id: string }>`INSERT INTO accord_events ${
              // Rows in key order, so concurrent batches lock conflicting keys in the same order.
              sql.insert(inKeyOrder(batch).map((e) => ({ ...eventRow(e), body: json(e.body) })))
            } ON CONFLICT DO NOTHING RETURNING id`
            return yield* resolveAppend(
              sql,
              batch,
              inserted.map((r) => r.id)
            )
          }).pipe(orStorageError("event.append")),
    list: (q) =>
      sql<Row>`SELECT * FROM accord_events WHERE ${sql.and(where(sql, q))}
          ORDER BY occurred_at DESC, id DESC LIMIT ${q.limit}`.pipe(
        Effect.map((rows) => rows.map(toEvent)),
        orStorageError("event.list")
      ),
    listAll: (q) =>
      sql<Row>`SELECT * FROM accord_events WHERE ${sql.and(where(sql, q))} ORDER BY occurred_at DESC, id DESC`.pipe(
        Effect.map((rows) => rows.map(toEvent)),
        orStorageError("event.listAll")
      ),
    getByIds: (workspaceId, ids) =>
      ids.length === 0
        ? Effect.succeed([])
        : sql<Row>`SELECT * FROM accord_events
          WHERE workspace_id = ${workspaceId} AND id IN ${sql.in(ids)}`.pipe(
            Effect.map((rows) => rows.map(toEvent)),
            orStorageError("event.getByIds")
          ),
    findByEventId: (workspaceId, eventId) =>
      sql<Row>`SELECT * FROM accord_events WHERE workspace_id = ${workspaceId} AND event_id = ${eventId}`.pipe(
        Effect.map(firstRow(toEvent)),
        orStorageError("event.findByEventId")
      ),
    // An account's events are found by `accord_events_account`; a user's by scanning the
    // workspace's events (no index on the body's `user_id`: erasing a user is rare, and an index
    // would be paid by every ingested event). Plain `DELETE` on the table, partitioned or not.
    eraseSubject: (workspaceId, subject) =>
      sql<{ readonly id: string; readonly user_id: string | null }>`DELETE FROM accord_events
          WHERE workspace_id = ${workspaceId} AND ${
            subject.kind === "account" ? sql`account_id = ${subject.id}` : sql`body->>'user_id' = ${subject.id}`
          }
          RETURNING id, body->>'user_id' AS user_id`.pipe(
        Effect.map((rows) => rows.map((row) => ({ id: row.id, userId: row.user_id }))),
        orStorageError("event.eraseSubject")
      )
  })
)

export const layer: Layer.Layer<EventStore, never, SqlClient.SqlClient> = Layer.effect(EventStore, make)
