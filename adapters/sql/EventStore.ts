/**
 * `EventStore` on SQL. `accord_events` is partitioned by month (`EventPartitions.ts`), so its
 * unique keys hold `occurred_at` and cannot make `event_id` unique by themselves: a client's
 * `event_id` (and a usage rollup's bucket) is claimed in `accord_event_keys`, the narrow
 * unpartitioned table whose primary key `(workspace_id, kind, key)` decides duplicates, in the same
 * statement that inserts the event, and only an event whose key was won is inserted
 * (`claimAndInsert`). So two requests with the same `event_id` store one event whatever their
 * timestamps (and so partitions) are. A batch is that one statement (atomic by itself, so no
 * transaction of its own; callers may wrap it in theirs); the events whose keys were taken are
 * read back through their keys and compared by payload hash (duplicate or conflict). A usage
 * rollup's bucket already stored with another payload is replaced in place (callers run it in
 * their transaction).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import {
  type AppendResult,
  type EventQuery,
  EventStore,
  type EventStoreService,
  type Retention,
  type StoredEvent
} from "../../core/ports/EventStore.ts"
import * as EventPartitions from "./EventPartitions.ts"
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

/** The conditions of a query, for `list` (a page) and `listAll`. */
const where = (sql: SqlClient.SqlClient, q: Omit<EventQuery, "limit">) => [
  sql`workspace_id = ${q.workspaceId}`,
  ...(q.accountId === undefined ? [] : [sql`account_id = ${q.accountId}`]),
  ...(q.eventName === undefined ? [] : [sql`event_name = ${q.eventName}`]),
  ...(q.from === undefined ? [] : [sql`occurred_at >= ${q.from}`]),
  ...(q.to === undefined ? [] : [sql`occurred_at < ${q.to}`]),
  ...(q.after === undefined ? [] : [sql`(occurred_at, id) < (${q.after.occurredAt}, ${q.after.id})`])
]

/** A span of `occurred_at`, `[from, to)`; an absent bound is open. */
interface Window {
  readonly from?: number
  readonly to?: number
}

/** Months a page reads before its first window's start, and its second window's length. */
const windowMonths = [1, 6] as const

/**
 * The time windows a page of events reads, newest first, until it has its rows: the month holding
 * the newest time it may return (its cursor's, its `to`, or now) with the month before it; the six
 * months before those; then everything older. Each window is one statement whose time bounds let
 * PostgreSQL plan only the partitions inside it (the default partition only where the window
 * reaches past the prepared months): a page planned over every month's partition spent more on
 * planning than on reading. Together the windows cover every time the query allows, once.
 */
export const windowsOf = (q: Omit<EventQuery, "limit">, now: number): ReadonlyArray<Window> => {
  const upper = Math.min(
    q.to ?? Number.POSITIVE_INFINITY,
    q.after === undefined ? Number.POSITIVE_INFINITY : q.after.occurredAt + 1
  )
  const anchor = new Date(Number.isFinite(upper) ? upper - 1 : now)
  const first = Date.UTC(anchor.getUTCFullYear(), anchor.getUTCMonth() - windowMonths[0], 1)
  const second = Date.UTC(anchor.getUTCFullYear(), anchor.getUTCMonth() - windowMonths[0] - windowMonths[1], 1)
  const lower = q.from ?? Number.NEGATIVE_INFINITY
  const windows: Array<Window> = []
  const add = (from: number, to: number) => {
    if (from >= to) return
    windows.push({
      ...(Number.isFinite(from) ? { from } : {}),
      ...(Number.isFinite(to) ? { to } : {})
    })
  }
  add(Math.max(lower, first), upper)
  add(Math.max(lower, second), Math.min(upper, first))
  add(lower, Math.min(upper, second))
  return windows
}

/**
 * A stored event as a row of `accord_events` (the body as a value).
 */
const eventRow = (e: StoredEvent) => ({
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

/** The columns of a batch's event rows (`eventRow` and its index `i` in the batch). */
const batchColumns = `i int4, id text, workspace_id text, event_id text, account_id text, event_name text,
  occurred_at int8, received_at int8, payload_hash text, body jsonb, bucket_key text`

/** A batch's event rows as one JSON parameter: the `eventRow`s with their index `i`. */
export const eventsJson = (batch: ReadonlyArray<StoredEvent>): string =>
  json(batch.map((e, i) => ({ i, ...eventRow(e) })))

/** A batch's event rows read from one JSON parameter (`eventsJson`). */
export const jsonRows = (sql: SqlClient.SqlClient, events: string): Statement.Fragment =>
  sql`SELECT * FROM jsonb_to_recordset(${events}::jsonb) AS v(${sql.literal(batchColumns)})`

/**
 * Whether the event rows of this fiber's writes travel by `COPY`: set by the SQL `IngestWriter`
 * around a bulk import's batch, which runs in its caller's transaction (`batchRows` needs one).
 */
export const copiedRows = FiberRef.unsafeMake(false)

const copyEscapes: Readonly<Record<string, string>> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" }

/** One field of `COPY`'s text format: `\N` for null, else the text with its four specials escaped. */
const copyField = (value: string | number | null): string =>
  value === null
    ? "\\N"
    : typeof value === "number"
      ? String(value)
      : value.replace(/[\\\n\r\t]/g, (c) => copyEscapes[c]!)

/** The batch as `COPY`'s text format, one line per event, in `batchColumns` order. */
const copyText = (batch: ReadonlyArray<StoredEvent>): string => {
  let text = ""
  batch.forEach((e, i) => {
    text += `${i}\t${copyField(e.id)}\t${copyField(e.workspaceId)}\t${copyField(e.eventId)}\t${copyField(e.accountId)}\t${copyField(e.eventName)}\t${e.occurredAt}\t${e.receivedAt}\t${copyField(e.payloadHash)}\t${copyField(json(e.body))}\t${copyField(e.bucketKey ?? null)}\n`
  })
  return text
}

/**
 * The event rows of a batch as the statement that writes it reads them: one JSON parameter; or,
 * under `copiedRows`, first sent with `COPY` into a temporary table of the transaction, which the
 * writing statement empties as it reads it (so a later batch of the same transaction finds it
 * empty). `COPY` parses each row straight into its columns, the body once into `jsonb`, where the
 * JSON parameter is parsed whole and then taken apart.
 */
export const batchRows = (
  sql: SqlClient.SqlClient,
  batch: ReadonlyArray<StoredEvent>
): Effect.Effect<Statement.Fragment, SqlError> =>
  Effect.flatMap(FiberRef.get(copiedRows), (copied) =>
    copied
      ? Effect.as(
          Effect.zipRight(
            sql`CREATE TEMP TABLE IF NOT EXISTS accord_copied_events (${sql.literal(batchColumns)}) ON COMMIT DROP`,
            sql.unsafe("COPY pg_temp.accord_copied_events FROM STDIN", [copyText(batch)])
          ),
          sql`DELETE FROM pg_temp.accord_copied_events RETURNING *`
        )
      : Effect.succeed(jsonRows(sql, eventsJson(batch)))
  )

/**
 * The common table expressions that write a batch (`rows`: its event rows, `batchRows`):
 * `claimed`, the keys the batch won in `accord_event_keys`, and `inserted`, the ids of the events
 * stored: every event without a key, and every event whose key it won. Keys are claimed in key
 * order (batch order within a key, so the first one wins), so concurrent statements lock
 * conflicting keys in the same order; byte order (COLLATE "C"), like the JavaScript order the other
 * writers use.
 */
export const claimAndInsert = (sql: SqlClient.SqlClient, rows: Statement.Fragment) =>
  sql`v AS (${rows}), claimed AS (
      INSERT INTO accord_event_keys (workspace_id, kind, key, event_row_id, occurred_at)
      SELECT workspace_id, CASE WHEN event_id IS NOT NULL THEN 'event_id' ELSE 'bucket' END,
        COALESCE(event_id, bucket_key), id, occurred_at
      FROM v WHERE event_id IS NOT NULL OR bucket_key IS NOT NULL
      ORDER BY workspace_id COLLATE "C", event_id IS NULL, COALESCE(event_id, bucket_key) COLLATE "C", i
      ON CONFLICT DO NOTHING RETURNING event_row_id
    ), inserted AS (
      INSERT INTO accord_events (id, workspace_id, event_id, account_id, event_name, occurred_at, received_at,
        payload_hash, body, bucket_key)
      SELECT id, workspace_id, event_id, account_id, event_name, occurred_at, received_at, payload_hash, body, bucket_key
      FROM v WHERE (event_id IS NULL AND bucket_key IS NULL) OR id IN (SELECT event_row_id FROM claimed)
      ON CONFLICT DO NOTHING RETURNING id
    )`

/** The key an event claims in `accord_event_keys`, if any: its `event_id`, else its bucket. */
const keyOf = (e: StoredEvent): string | undefined =>
  e.eventId !== null
    ? `${e.workspaceId}\u0000event_id\u0000${e.eventId}`
    : e.bucketKey !== undefined
      ? `${e.workspaceId}\u0000bucket\u0000${e.bucketKey}`
      : undefined

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
    const others = batch.filter((e) => !stored.has(e.id) && keyOf(e) !== undefined)
    // Each taken key with the event holding it; `null` when that event is gone (expired by
    // retention, the key not swept yet).
    const holders = new Map<string, StoredEvent | null>()
    if (others.length > 0) {
      const rows = yield* sql<Row & { readonly key_workspace_id: string; readonly kind: string; readonly key: string }>`
        SELECT k.workspace_id AS key_workspace_id, k.kind, k.key, e.*
        FROM accord_event_keys k LEFT JOIN accord_events e
          ON e.workspace_id = k.workspace_id AND e.id = k.event_row_id AND e.occurred_at = k.occurred_at
        WHERE k.workspace_id IN ${sql.in(others.map((e) => e.workspaceId))}
          AND k.key IN ${sql.in(others.map((e) => e.eventId ?? e.bucketKey!))}`
      for (const row of rows)
        holders.set(`${row.key_workspace_id}\u0000${row.kind}\u0000${row.key}`, row.id === null ? null : toEvent(row))
    }
    const results: Array<AppendResult> = []
    for (const event of batch) {
      const key = keyOf(event)
      if (stored.has(event.id)) {
        if (key !== undefined) holders.set(key, event)
        results.push({ _tag: "Stored", event })
        continue
      }
      const prior = key === undefined ? undefined : holders.get(key)
      if (prior === undefined) {
        results.push({ _tag: "Conflict", event }) // an id collision; cannot happen with fresh ids
        continue
      }
      // Retention removed the event holding the key: the retry is of an expired event, which is
      // not stored again (docs/decisions.md, "Event retention").
      if (prior === null) results.push({ _tag: "Duplicate", event })
      else if (prior.payloadHash === event.payloadHash) results.push({ _tag: "Duplicate", event: prior })
      else if (event.eventId !== null) results.push({ _tag: "Conflict", event: prior })
      else {
        // A resend of the bucket with another value: the value now is the new one (never a sum).
        const replaced = yield* replaceBucket(sql, event)
        if (replaced === undefined) results.push({ _tag: "Duplicate", event })
        else {
          holders.set(key!, replaced)
          results.push({ _tag: "Stored", event: replaced })
        }
      }
    }
    return results
  })

/**
 * Replaces the stored event of `event`'s bucket by `event` (keeping the row's id), its key locked
 * first so concurrent resends of one bucket apply one after the other; answers the row as it now
 * is, or none when the bucket's event is gone.
 */
const replaceBucket = (
  sql: SqlClient.SqlClient,
  event: StoredEvent
): Effect.Effect<StoredEvent | undefined, SqlError> =>
  Effect.gen(function* () {
    const [held] = yield* sql<{ readonly event_row_id: string; readonly occurred_at: unknown }>`
      SELECT event_row_id, occurred_at FROM accord_event_keys
      WHERE workspace_id = ${event.workspaceId} AND kind = 'bucket' AND key = ${event.bucketKey!} FOR UPDATE`
    if (held === undefined) return undefined
    const updated = yield* sql`UPDATE accord_events SET occurred_at = ${event.occurredAt},
        received_at = ${event.receivedAt}, payload_hash = ${event.payloadHash}, body = ${json(event.body)}::jsonb
      WHERE workspace_id = ${event.workspaceId} AND id = ${held.event_row_id} AND occurred_at = ${num(held.occurred_at)}
      RETURNING id`
    if (updated.length === 0) return undefined
    yield* sql`UPDATE accord_event_keys SET occurred_at = ${event.occurredAt}
      WHERE workspace_id = ${event.workspaceId} AND kind = 'bucket' AND key = ${event.bucketKey!}`
    return { ...event, id: held.event_row_id }
  })

export const make: Effect.Effect<EventStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    append: (batch) =>
      batch.length === 0
        ? Effect.succeed([])
        : Effect.gen(function* () {
            const rows = yield* batchRows(sql, batch)
            const inserted = yield* sql<{ id: string }>`WITH ${claimAndInsert(sql, rows)} SELECT id FROM inserted`
            return yield* resolveAppend(
              sql,
              batch,
              inserted.map((r) => r.id)
            )
          }).pipe(orStorageError("event.append")),
    // Window by window (`windowsOf`), newest first: each window's events are all newer than the
    // next one's, so the page is the first rows in window order.
    list: (q) =>
      Effect.gen(function* () {
        const page: Array<StoredEvent> = []
        for (const window of windowsOf(q, yield* Clock.currentTimeMillis)) {
          const rows = yield* sql<Row>`SELECT * FROM accord_events WHERE ${sql.and([
            ...where(sql, q),
            ...(window.from === undefined ? [] : [sql`occurred_at >= ${window.from}`]),
            ...(window.to === undefined ? [] : [sql`occurred_at < ${window.to}`])
          ])} ORDER BY occurred_at DESC, id DESC LIMIT ${q.limit - page.length}`
          for (const row of rows) page.push(toEvent(row))
          if (page.length >= q.limit) break
        }
        return page
      }).pipe(orStorageError("event.list")),
    listAll: (q) =>
      sql<Row>`SELECT * FROM accord_events WHERE ${sql.and(where(sql, q))} ORDER BY occurred_at DESC, id DESC`.pipe(
        Effect.map((rows) => rows.map(toEvent)),
        orStorageError("event.listAll")
      ),
    // Where the hints say first: with the times in the statement, PostgreSQL plans only their
    // months' partitions (every partition's key probed cost 1 ms of planning at 17 months). An id
    // not there is looked for everywhere, so a row whose time moved is still found.
    getByIds: (workspaceId, refs) =>
      Effect.gen(function* () {
        const ids = [...new Set(refs.map((ref) => ref.id))]
        if (ids.length === 0) return []
        const hinted = yield* sql<Row>`SELECT * FROM accord_events
          WHERE workspace_id = ${workspaceId} AND id IN ${sql.in(ids)}
            AND occurred_at IN ${sql.in([...new Set(refs.map((ref) => ref.occurredAt))])}`
        const found = new Set(hinted.map((row) => row.id))
        const elsewhere = ids.filter((id) => !found.has(id))
        const moved =
          elsewhere.length === 0
            ? []
            : yield* sql<Row>`SELECT * FROM accord_events
              WHERE workspace_id = ${workspaceId} AND id IN ${sql.in(elsewhere)}`
        return [...hinted, ...moved].map(toEvent)
      }).pipe(orStorageError("event.getByIds")),
    findByEventId: (workspaceId, eventId) =>
      sql<Row>`SELECT e.* FROM accord_event_keys k JOIN accord_events e
          ON e.workspace_id = k.workspace_id AND e.id = k.event_row_id AND e.occurred_at = k.occurred_at
          WHERE k.workspace_id = ${workspaceId} AND k.kind = 'event_id' AND k.key = ${eventId}`.pipe(
        Effect.map(firstRow(toEvent)),
        orStorageError("event.findByEventId")
      ),
    // An account's events are found by `accord_events_account`; a user's by scanning the
    // workspace's events (no index on the body's `user_id`: erasing a user is rare, and an index
    // would be paid by every ingested event). Their keys go in the same statement.
    eraseSubject: (workspaceId, subject) =>
      sql<{ readonly id: string; readonly user_id: string | null }>`WITH gone AS (
          DELETE FROM accord_events
          WHERE workspace_id = ${workspaceId} AND ${
            subject.kind === "account" ? sql`account_id = ${subject.id}` : sql`body->>'user_id' = ${subject.id}`
          }
          RETURNING id, event_id, bucket_key, body->>'user_id' AS user_id
        ), keys AS (
          DELETE FROM accord_event_keys k USING gone
          WHERE k.workspace_id = ${workspaceId} AND k.event_row_id = gone.id
            AND k.kind = CASE WHEN gone.event_id IS NOT NULL THEN 'event_id' ELSE 'bucket' END
            AND k.key = COALESCE(gone.event_id, gone.bucket_key)
        )
        SELECT id, user_id FROM gone`.pipe(
        Effect.map((rows) => rows.map((row) => ({ id: row.id, userId: row.user_id }))),
        orStorageError("event.eraseSubject")
      ),
    retention: (workspaceId) =>
      sql<{ readonly days: number | null }>`SELECT days FROM accord_event_retention
          WHERE workspace_id = ${workspaceId}`.pipe(
        Effect.map(firstRow((row): Retention => (row.days === null ? "forever" : Number(row.days)))),
        orStorageError("event.retention")
      ),
    setRetention: (workspaceId, retention, at) =>
      sql`INSERT INTO accord_event_retention (workspace_id, days, updated_at)
          VALUES (${workspaceId}, ${retention === "forever" ? null : retention}, ${at})
          ON CONFLICT (workspace_id) DO UPDATE SET days = EXCLUDED.days, updated_at = EXCLUDED.updated_at`.pipe(
        Effect.asVoid,
        orStorageError("event.setRetention")
      ),
    sweep: (policy) => EventPartitions.sweep(sql, policy).pipe(orStorageError("event.sweep"))
  })
)

export const layer: Layer.Layer<EventStore, never, SqlClient.SqlClient> = Layer.effect(EventStore, make)
