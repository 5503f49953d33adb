/**
 * `accord_events` is partitioned by RANGE on `occurred_at` (epoch milliseconds), one partition per
 * UTC calendar month (`accord_events_YYYYMM`), plus a DEFAULT partition (`accord_events_default`)
 * that takes any event outside them, so ingest never fails and never runs DDL for a backfilled or
 * otherwise unprepared month (docs/decisions.md, "Event partitions").
 *
 * The retention sweep:
 * 1. prepares the current month and the next `monthsAhead` (an event that arrives there was, until
 *    then, in the default partition: it is moved into the new partition in the same transaction),
 *    and up to `backfilledMonthsPerSweep` earlier months whose events wait in the default partition
 *    (a backfill) and some workspace still keeps, each moved out the same way, so they too expire
 *    by one `DROP`;
 * 2. drops, with one `DROP TABLE`, each monthly partition in which no workspace has an event inside
 *    its retention, the check and the drop under one lock on `accord_events`, so no event can
 *    arrive in between;
 * 3. deletes what is left, per workspace, in batches of at most `batchSize` rows (the rest of
 *    partitions other workspaces still keep, and the default partition);
 * 4. deletes the idempotency keys (`accord_event_keys`) of expired events the same way.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type { Retention, RetentionPolicy, RetentionSweep } from "../../core/ports/EventStore.ts"
import { expiredBefore } from "../../core/ingest/Retention.ts"
import { unboundedTransaction } from "./SqlSupport.ts"
import { sqlTransaction } from "./Transactor.ts"

/**
 * Months prepared ahead of the current one. One is enough: the sweep runs every hour, so the next
 * month exists a month before its first event can arrive. Each more is one more partition that
 * every page of `GET /events` reaching to now plans (its first window has no upper bound).
 */
export const monthsAhead = 1

/**
 * Earlier months a sweep moves out of the default partition at most: each is one transaction that
 * moves its rows, so a years-long backfill is split over several sweeps.
 */
export const backfilledMonthsPerSweep = 12

/** Rows one delete statement of the sweep removes at most. */
export const sweepBatchSize = 5_000

/** The partition holding events outside every monthly partition. */
export const defaultPartition = "accord_events_default"

/** A monthly partition: its name and its bounds `[start, end)` in epoch milliseconds. */
export interface MonthPartition {
  readonly name: string
  readonly start: number
  readonly end: number
}

/** The UTC month holding `at`, as a partition: name and bounds. */
export const monthOf = (at: number): MonthPartition => {
  const date = new Date(at)
  const year = date.getUTCFullYear()
  const month = date.getUTCMonth()
  return {
    name: `accord_events_${String(year).padStart(4, "0")}${String(month + 1).padStart(2, "0")}`,
    start: Date.UTC(year, month, 1),
    end: Date.UTC(year, month + 1, 1)
  }
}

/** The month holding `at` and the `monthsAhead` after it. */
export const monthsFrom = (at: number): ReadonlyArray<MonthPartition> => {
  const months = [monthOf(at)]
  for (let i = 0; i < monthsAhead; i++) months.push(monthOf(months[i]!.end))
  return months
}

/** The statement creating `month` as a partition of the (empty) `parent`. */
export const createMonth = (sql: SqlClient.SqlClient, parent: string, month: MonthPartition) =>
  sql.unsafe(`CREATE TABLE ${month.name} PARTITION OF ${parent} FOR VALUES FROM (${month.start}) TO (${month.end})`)

const bounds = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/

/** The monthly partitions of `accord_events` as they are now (the default partition left out). */
export const monthlyPartitions = (sql: SqlClient.SqlClient): Effect.Effect<ReadonlyArray<MonthPartition>, SqlError> =>
  Effect.map(
    sql<{ readonly name: string; readonly bound: string }>`SELECT c.relname AS name,
        pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'accord_events'::regclass`,
    (rows) =>
      rows.flatMap((row) => {
        const found = bounds.exec(row.bound)
        return found === null ? [] : [{ name: row.name, start: Number(found[1]), end: Number(found[2]) }]
      })
  )

// Partitions are created and dropped by one process at a time: the sweeps of every process
// sharing the database take this transaction-scoped advisory lock first.
const partitionLock = 0x4163_0029

/**
 * Creates the partitions of `months` that do not exist yet; answers their names. Each is created
 * empty, filled with its month's events from the default partition, then attached, in a
 * transaction of its own.
 */
export const preparePartitions = (
  sql: SqlClient.SqlClient,
  months: ReadonlyArray<MonthPartition>
): Effect.Effect<ReadonlyArray<string>, SqlError> =>
  Effect.gen(function* () {
    const existing = new Set((yield* monthlyPartitions(sql)).map((p) => p.start))
    const missing = months.filter((month) => !existing.has(month.start))
    const created: Array<string> = []
    for (const month of missing) {
      const made = yield* sqlTransaction(
        sql,
        Effect.gen(function* () {
          // A backfilled month may hold millions of rows: moving them is background work that may
          // take longer than a request's storage bound.
          yield* sql.unsafe(unboundedTransaction)
          yield* sql`SELECT pg_advisory_xact_lock(${partitionLock})`
          if ((yield* monthlyPartitions(sql)).some((p) => p.start === month.start)) return false
          // No row may enter the default partition between the move and the attach (the attach
          // would then find a row of the month there and fail): writes to it wait until the month
          // is attached, reads go on. A write that waited for a row of the month is then refused by
          // PostgreSQL, and ingest writes it again, into the new partition.
          yield* sql.unsafe(`LOCK TABLE ${defaultPartition} IN SHARE ROW EXCLUSIVE MODE`)
          yield* sql.unsafe(`CREATE TABLE ${month.name} (LIKE accord_events INCLUDING DEFAULTS)`)
          yield* sql.unsafe(
            `WITH moved AS (DELETE FROM ${defaultPartition} WHERE occurred_at >= ${month.start} AND occurred_at < ${month.end} RETURNING *)
             INSERT INTO ${month.name} SELECT * FROM moved`
          )
          yield* sql.unsafe(
            `ALTER TABLE accord_events ATTACH PARTITION ${month.name} FOR VALUES FROM (${month.start}) TO (${month.end})`
          )
          return true
        })
      )
      if (made) created.push(month.name)
    }
    return created
  })

/**
 * The months, oldest first, in which `workspaceId` has events waiting in the default partition:
 * one index probe per month (the first event at or after the previous month's end).
 */
const defaultMonthsOf = (
  sql: SqlClient.SqlClient,
  workspaceId: string
): Effect.Effect<ReadonlyArray<MonthPartition>, SqlError> =>
  Effect.gen(function* () {
    const months: Array<MonthPartition> = []
    let from: number | undefined
    for (;;) {
      const [row] = yield* sql<{ readonly at: string | number | null }>`SELECT min(occurred_at) AS at
        FROM ${sql(defaultPartition)} WHERE workspace_id = ${workspaceId}
        AND occurred_at >= ${from ?? Number.MIN_SAFE_INTEGER}`
      if (row?.at === null || row?.at === undefined) return months
      const month = monthOf(Number(row.at))
      months.push(month)
      from = month.end
    }
  })

/**
 * The earlier months (before `before`) whose events wait in the default partition and that some
 * workspace with events there still keeps (`keptFrom`), oldest first, at most `limit`.
 */
const backfilledMonths = (
  sql: SqlClient.SqlClient,
  before: number,
  keptFrom: (workspaceId: string) => number | undefined,
  limit: number
): Effect.Effect<ReadonlyArray<MonthPartition>, SqlError> =>
  Effect.gen(function* () {
    const wanted = new Map<number, MonthPartition>()
    for (const workspaceId of yield* workspacesIn(sql, defaultPartition)) {
      const from = keptFrom(workspaceId)
      for (const month of yield* defaultMonthsOf(sql, workspaceId)) {
        if (month.start < before && (from === undefined || from < month.end)) wanted.set(month.start, month)
      }
    }
    return [...wanted.values()].sort((a, b) => a.start - b.start).slice(0, limit)
  })

/**
 * The workspaces with a row in `table`, by a skip scan of its index leading with `workspace_id`:
 * one index probe per workspace, whatever the row count.
 */
const workspacesIn = (sql: SqlClient.SqlClient, table: string): Effect.Effect<ReadonlyArray<string>, SqlError> =>
  Effect.map(
    sql<{ readonly w: string }>`WITH RECURSIVE ws AS (
        SELECT min(workspace_id) AS w FROM ${sql(table)}
        UNION ALL
        SELECT (SELECT min(workspace_id) FROM ${sql(table)} WHERE workspace_id > ws.w) FROM ws WHERE ws.w IS NOT NULL
      ) SELECT w FROM ws WHERE w IS NOT NULL`,
    (rows) => rows.map((row) => row.w)
  )

/**
 * Whether no workspace has an event in `partition` inside its retention (`keptFrom`: the occurrence
 * time from which a workspace's events are kept; none when it keeps them forever).
 */
const expiredWhole = (
  sql: SqlClient.SqlClient,
  partition: MonthPartition,
  keptFrom: (workspaceId: string) => number | undefined
): Effect.Effect<boolean, SqlError> =>
  Effect.gen(function* () {
    for (const workspaceId of yield* workspacesIn(sql, partition.name)) {
      const from = keptFrom(workspaceId)
      if (from === undefined) return false
      if (from < partition.end) {
        const kept = yield* sql`SELECT 1 FROM ${sql(partition.name)}
          WHERE workspace_id = ${workspaceId} AND occurred_at >= ${from} LIMIT 1`
        if (kept.length > 0) return false
      }
    }
    return true
  })

/**
 * Drops `partition` when `expiredWhole`; answers whether it dropped it. Checked first without a
 * lock, so a partition some workspace still keeps never blocks ingest; then again under the lock
 * that the drop takes anyway, so no event can arrive between the check and the drop.
 */
const dropIfExpired = (
  sql: SqlClient.SqlClient,
  partition: MonthPartition,
  keptFrom: (workspaceId: string) => number | undefined
): Effect.Effect<boolean, SqlError> =>
  Effect.flatMap(expiredWhole(sql, partition, keptFrom), (expired) =>
    expired
      ? sqlTransaction(
          sql,
          Effect.gen(function* () {
            yield* sql`SELECT pg_advisory_xact_lock(${partitionLock})`
            yield* sql`LOCK TABLE accord_events IN ACCESS EXCLUSIVE MODE`
            // Gone already: another process's sweep dropped it.
            if (!(yield* monthlyPartitions(sql)).some((p) => p.name === partition.name)) return false
            if (!(yield* expiredWhole(sql, partition, keptFrom))) return false
            yield* sql.unsafe(`DROP TABLE ${partition.name}`)
            return true
          })
        )
      : Effect.succeed(false)
  )

/**
 * Deletes, in batches of at most `batchSize`, the rows of `table` of the workspace that occurred
 * before `before`; answers how many.
 */
const deleteExpired = (
  sql: SqlClient.SqlClient,
  table: "accord_events" | "accord_event_keys",
  workspaceId: string,
  before: number,
  batchSize: number
): Effect.Effect<number, SqlError> =>
  Effect.gen(function* () {
    let total = 0
    for (;;) {
      const deleted =
        table === "accord_events"
          ? yield* sql`WITH doomed AS (
                SELECT workspace_id, id, occurred_at FROM accord_events
                WHERE workspace_id = ${workspaceId} AND occurred_at < ${before} LIMIT ${batchSize})
              DELETE FROM accord_events e USING doomed d
              WHERE e.workspace_id = d.workspace_id AND e.id = d.id AND e.occurred_at = d.occurred_at
              RETURNING 1`
          : yield* sql`WITH doomed AS (
                SELECT workspace_id, kind, key FROM accord_event_keys
                WHERE workspace_id = ${workspaceId} AND occurred_at < ${before} LIMIT ${batchSize})
              DELETE FROM accord_event_keys k USING doomed d
              WHERE k.workspace_id = d.workspace_id AND k.kind = d.kind AND k.key = d.key
              RETURNING 1`
      total += deleted.length
      if (deleted.length < batchSize) return total
    }
  })

/** The retention settings of the workspaces that set their own. */
const settings = (sql: SqlClient.SqlClient): Effect.Effect<ReadonlyMap<string, Retention>, SqlError> =>
  Effect.map(
    sql<{ readonly workspace_id: string; readonly days: number | null }>`SELECT workspace_id, days
      FROM accord_event_retention`,
    (rows) => new Map(rows.map((row) => [row.workspace_id, row.days === null ? "forever" : Number(row.days)]))
  )

/** One retention sweep of `accord_events` (see the module comment). */
export const sweep = (sql: SqlClient.SqlClient, policy: RetentionPolicy): Effect.Effect<RetentionSweep, SqlError> =>
  Effect.gen(function* () {
    const batchSize = policy.batchSize ?? sweepBatchSize
    const own = yield* settings(sql)
    const keptFrom = (workspaceId: string) => expiredBefore(own.get(workspaceId) ?? policy.defaultRetention, policy.now)
    const ahead = monthsFrom(policy.now)
    const earlier = yield* backfilledMonths(sql, ahead[0]!.start, keptFrom, backfilledMonthsPerSweep)
    const createdPartitions = yield* preparePartitions(sql, [...earlier, ...ahead])
    // The latest time before which some workspace's events expire: no partition ending after it
    // can be dropped.
    const cutoffs = [policy.defaultRetention, ...own.values()].flatMap((r) => {
      const before = expiredBefore(r, policy.now)
      return before === undefined ? [] : [before]
    })
    const latest = cutoffs.length === 0 ? undefined : Math.max(...cutoffs)
    const droppedPartitions: Array<string> = []
    if (latest !== undefined) {
      for (const partition of yield* monthlyPartitions(sql)) {
        if (partition.end > latest) continue
        if (yield* dropIfExpired(sql, partition, keptFrom)) droppedPartitions.push(partition.name)
      }
    }
    let deletedEvents = 0
    let deletedKeys = 0
    if (latest !== undefined) {
      for (const workspaceId of yield* workspacesIn(sql, "accord_events")) {
        const before = keptFrom(workspaceId)
        if (before !== undefined)
          deletedEvents += yield* deleteExpired(sql, "accord_events", workspaceId, before, batchSize)
      }
      for (const workspaceId of yield* workspacesIn(sql, "accord_event_keys")) {
        const before = keptFrom(workspaceId)
        if (before !== undefined)
          deletedKeys += yield* deleteExpired(sql, "accord_event_keys", workspaceId, before, batchSize)
      }
    }
    return { createdPartitions, droppedPartitions, deletedEvents, deletedKeys }
  })
