/**
 * `Outbox` on SQL. Leasing is one `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)`, so any
 * number of workers in any number of processes sharing PostgreSQL never lease the same item at once
 * and the service scales past one machine without double execution.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import {
  type LeaseRequest,
  type NewOutboxItem,
  Outbox,
  type OutboxItem,
  type OutboxService
} from "../../core/ports/Outbox.ts"
import { inRounds, makeBatcher } from "./Batch.ts"
import { firstRow, json, num, numOrNull, orStorageError } from "./SqlSupport.ts"

export interface OutboxRow {
  readonly id: string
  readonly kind: string
  readonly dedupe_key: string
  readonly payload: unknown
  readonly attempts: number
  readonly next_attempt_at: unknown
  readonly lease_owner: string | null
  readonly lease_expires_at: unknown
  readonly created_at: unknown
  readonly completed_at: unknown
  readonly last_error: string | null
}

export const toItem = (row: OutboxRow): OutboxItem => ({
  id: row.id,
  kind: row.kind,
  dedupeKey: row.dedupe_key,
  payload: row.payload,
  attempts: num(row.attempts),
  nextAttemptAt: num(row.next_attempt_at),
  leaseOwner: row.lease_owner,
  leaseExpiresAt: numOrNull(row.lease_expires_at),
  createdAt: num(row.created_at),
  completedAt: numOrNull(row.completed_at),
  lastError: row.last_error
})

/**
 * Inserts an item unless its id or `(kind, dedupeKey)` exists; `true` when inserted. Shared with the
 * action ledger, which enqueues inside its own transactions.
 */
export const insertItem = (sql: SqlClient.SqlClient, item: NewOutboxItem): Effect.Effect<boolean, SqlError> =>
  sql`INSERT INTO accord_outbox (id, kind, dedupe_key, payload, next_attempt_at, created_at)
      VALUES (${item.id}, ${item.kind}, ${item.dedupeKey}, ${json(item.payload)}::jsonb, ${item.nextAttemptAt}, ${item.createdAt})
      ON CONFLICT DO NOTHING RETURNING id`.pipe(Effect.map((rows) => rows.length === 1))

/**
 * The lease statement (`UPDATE … RETURNING *` of the leased rows), to run alone or inside a larger
 * statement.
 */
export const leaseReturning = (sql: SqlClient.SqlClient, { kinds, leaseMillis, limit, now, owner }: LeaseRequest) => {
  const due = [
    sql`completed_at IS NULL`,
    sql`next_attempt_at <= ${now}`,
    sql`(lease_expires_at IS NULL OR lease_expires_at <= ${now})`,
    ...(kinds === undefined ? [] : [sql.in("kind", kinds)])
  ]
  return sql`UPDATE accord_outbox SET lease_owner = ${owner}, lease_expires_at = ${now + leaseMillis}
      WHERE id IN (
        SELECT id FROM accord_outbox WHERE ${sql.and(due)}
        ORDER BY next_attempt_at, created_at LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)
      RETURNING *`
}

/**
 * Oldest due first.
 */
export const dueFirst = (a: OutboxItem, b: OutboxItem): number =>
  a.nextAttemptAt - b.nextAttemptAt || a.createdAt - b.createdAt

export const make: Effect.Effect<OutboxService, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  type Completion = Parameters<OutboxService["complete"]>[0]
  // Completions of concurrent deliveries share one statement (`Batch`); an id is completed once.
  // `ANY(ids)` keeps the lookup on the primary key whatever the planner estimates for the rows.
  const complete = yield* makeBatcher((items: ReadonlyArray<Completion>) =>
    inRounds(
      items,
      (c) => [c.id],
      (round) =>
        Effect.map(
          sql<{
            id: string
          }>`WITH v AS (SELECT * FROM jsonb_to_recordset(${json(round)}::jsonb) AS v(id text, owner text, now int8))
          UPDATE accord_outbox o SET completed_at = v.now, lease_owner = NULL, lease_expires_at = NULL
          FROM v
          WHERE o.id = v.id AND o.id = ANY(ARRAY(SELECT id FROM v)) AND o.lease_owner = v.owner AND o.completed_at IS NULL
          RETURNING o.id`,
          (rows) => {
            const done = new Set(rows.map((r) => r.id))
            return round.map((c) => done.has(c.id))
          }
        )
    )
  )
  return {
    enqueue: (item) => insertItem(sql, item).pipe(orStorageError("outbox.enqueue")),
    lease: (request) =>
      sql<OutboxRow>`${leaseReturning(sql, request)}`.pipe(
        Effect.map((rows) => rows.map(toItem).sort(dueFirst)),
        orStorageError("outbox.lease")
      ),
    complete: (completion) => complete(completion).pipe(orStorageError("outbox.complete")),
    reschedule: ({ error, id, nextAttemptAt, owner }) =>
      sql`UPDATE accord_outbox SET attempts = attempts + 1, next_attempt_at = ${nextAttemptAt}, last_error = ${error},
            lease_owner = NULL, lease_expires_at = NULL
          WHERE id = ${id} AND lease_owner = ${owner} AND completed_at IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("outbox.reschedule")
      ),
    // A row another statement holds (a batch completing it, a transition) is skipped, not waited
    // for: waiting, with rows of its own already updated, the renewal deadlocked against batched
    // completions that lock the same rows in another order (docs/decisions.md, "Renewal never
    // waits"). A skipped item is either being completed or is renewed by the next beat.
    renew: ({ ids, leaseMillis, now, owner }) =>
      ids.length === 0
        ? Effect.succeed([])
        : sql<{ id: string }>`UPDATE accord_outbox SET lease_expires_at = ${now + leaseMillis}
          WHERE id IN (
            SELECT id FROM accord_outbox WHERE ${sql.in("id", ids)} AND lease_owner = ${owner} AND completed_at IS NULL
            FOR UPDATE SKIP LOCKED
          ) RETURNING id`.pipe(
            Effect.map((rows) => rows.map((r) => r.id)),
            orStorageError("outbox.renew")
          ),
    get: (id) =>
      sql<OutboxRow>`SELECT * FROM accord_outbox WHERE id = ${id}`.pipe(
        Effect.map(firstRow(toItem)),
        orStorageError("outbox.get")
      ),
    findByKey: (kind, dedupeKey) =>
      sql<OutboxRow>`SELECT * FROM accord_outbox WHERE kind = ${kind} AND dedupe_key = ${dedupeKey}`.pipe(
        Effect.map(firstRow(toItem)),
        orStorageError("outbox.findByKey")
      )
  }
})

export const layer: Layer.Layer<Outbox, never, SqlClient.SqlClient> = Layer.scoped(Outbox, make)
