/**
 * `ActionLedger` on SQL. Each port operation is one transaction: creating an action inserts it, its
 * first history entry and its outbox item; a transition claims the completion id (primary key),
 * updates the action where `version` still matches, appends history and enqueues work. Any step
 * that finds a conflict rolls the whole transaction back, so nothing partial is ever committed.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  ActionLedger,
  type ActionLedgerService,
  type ActionRecord,
  type CompletionClaim,
  type HistoryEntry,
  type TransitionResult
} from "../../core/ActionLedger.ts"
import { insertItem } from "./Outbox.ts"
import { json, num, orStorageError } from "./SqlSupport.ts"

interface ActionRow {
  readonly action_request_id: string
  readonly workspace_id: string
  readonly account_id: string
  readonly connection_id: string
  readonly revision: number
  readonly provider_idempotency_key: string
  readonly state: string
  readonly request: unknown
  readonly acknowledgement: unknown
  readonly sealed_continuation: string | null
  readonly created_at: unknown
  readonly updated_at: unknown
  readonly version: number
}

interface HistoryRow {
  readonly seq: number
  readonly at: unknown
  readonly trigger: string
  readonly from_state: string | null
  readonly to_state: string
  readonly detail: unknown
}

interface CompletionRow {
  readonly completion_id: string
  readonly action_request_id: string
  readonly body_hash: string
  readonly received_at: unknown
}

const toRecord = (row: ActionRow): ActionRecord => ({
  actionRequestId: row.action_request_id,
  workspaceId: row.workspace_id,
  accountId: row.account_id,
  connectionId: row.connection_id,
  revision: num(row.revision),
  providerIdempotencyKey: row.provider_idempotency_key,
  state: row.state,
  request: row.request,
  acknowledgement: row.acknowledgement,
  sealedContinuation: row.sealed_continuation,
  createdAt: num(row.created_at),
  updatedAt: num(row.updated_at),
  version: num(row.version)
})

const toClaim = (row: CompletionRow): CompletionClaim => ({
  completionId: row.completion_id,
  actionRequestId: row.action_request_id,
  bodyHash: row.body_hash,
  receivedAt: num(row.received_at)
})

/** Aborts the surrounding transaction with an outcome that is not an error to the caller. */
class Rollback<A> extends Data.TaggedError("Rollback")<{ readonly outcome: A }> {}

const committedOrRolledBack = <A, R>(
  effect: Effect.Effect<A, SqlError | Rollback<A>, R>
): Effect.Effect<A, SqlError, R> =>
  Effect.catchIf(effect, (e): e is Rollback<A> => e._tag === "Rollback", (e) => Effect.succeed(e.outcome))

/**
 * @since 0.1.0
 */
export const make: Effect.Effect<ActionLedgerService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    create: ({ history, outbox, record: r }) =>
      committedOrRolledBack(sql.withTransaction(Effect.gen(function*() {
        const inserted = yield* sql`
          INSERT INTO accord_actions (action_request_id, workspace_id, account_id, connection_id, revision,
            provider_idempotency_key, state, request, acknowledgement, sealed_continuation, created_at, updated_at, version)
          VALUES (${r.actionRequestId}, ${r.workspaceId}, ${r.accountId}, ${r.connectionId}, ${r.revision},
            ${r.providerIdempotencyKey}, ${r.state}, ${json(r.request)}::jsonb, ${json(r.acknowledgement)}::jsonb,
            ${r.sealedContinuation}, ${r.createdAt}, ${r.createdAt}, 1)
          ON CONFLICT DO NOTHING RETURNING action_request_id`
        if (inserted.length === 0) return yield* new Rollback({ outcome: "duplicate" as const })
        yield* sql`INSERT INTO accord_action_history (action_request_id, seq, at, trigger, from_state, to_state, detail)
                   VALUES (${r.actionRequestId}, 1, ${history.at}, ${history.trigger}, NULL, ${r.state}, ${json(history.detail)}::jsonb)`
        if (outbox !== undefined && !(yield* insertItem(sql, outbox))) {
          return yield* new Rollback({ outcome: "duplicate" as const })
        }
        return "created" as const
      }))).pipe(orStorageError("action.create")),
    get: (id) =>
      sql<ActionRow>`SELECT * FROM accord_actions WHERE action_request_id = ${id}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toRecord)),
        orStorageError("action.get")
      ),
    getByIdempotencyKey: (key) =>
      sql<ActionRow>`SELECT * FROM accord_actions WHERE provider_idempotency_key = ${key}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toRecord)),
        orStorageError("action.getByIdempotencyKey")
      ),
    transition: (o) =>
      committedOrRolledBack<TransitionResult, never>(sql.withTransaction(Effect.gen(function*() {
        if (o.completion !== undefined) {
          const c = o.completion
          const claimed = yield* sql`INSERT INTO accord_completions (completion_id, action_request_id, body_hash, received_at)
              VALUES (${c.completionId}, ${c.actionRequestId}, ${c.bodyHash}, ${c.receivedAt})
              ON CONFLICT (completion_id) DO NOTHING RETURNING completion_id`
          if (claimed.length === 0) {
            const [existing] = yield* sql<CompletionRow>`SELECT * FROM accord_completions WHERE completion_id = ${c.completionId}`
            const claim = toClaim(existing!)
            return yield* new Rollback<TransitionResult>({
              outcome: claim.bodyHash === c.bodyHash && claim.actionRequestId === c.actionRequestId
                ? { _tag: "DuplicateCompletion", claim }
                : { _tag: "ConflictingCompletion", claim }
            })
          }
        }
        const [current] = yield* sql<{ state: string }>`
            SELECT state FROM accord_actions
            WHERE action_request_id = ${o.actionRequestId} AND version = ${o.expectedVersion} FOR UPDATE`
        if (current === undefined) return yield* new Rollback<TransitionResult>({ outcome: { _tag: "Stale" } })
        const previous = current.state
        const [updated] = yield* sql<ActionRow>`UPDATE accord_actions SET
              state = ${o.toState}, updated_at = ${o.at}, version = version + 1,
              acknowledgement = ${o.acknowledgement === undefined ? sql.literal("acknowledgement") : sql`${json(o.acknowledgement)}::jsonb`},
              sealed_continuation = ${o.sealedContinuation === undefined ? sql.literal("sealed_continuation") : o.sealedContinuation}
            WHERE action_request_id = ${o.actionRequestId}
            RETURNING *`
        yield* sql`INSERT INTO accord_action_history (action_request_id, seq, at, trigger, from_state, to_state, detail)
            SELECT ${o.actionRequestId}, COALESCE(MAX(seq), 0) + 1, ${o.history.at}, ${o.history.trigger}, ${previous},
              ${o.toState}, ${json(o.history.detail)}::jsonb
            FROM accord_action_history WHERE action_request_id = ${o.actionRequestId}`
        if (o.outbox !== undefined && !(yield* insertItem(sql, o.outbox))) {
          return yield* new Rollback<TransitionResult>({ outcome: { _tag: "Stale" } })
        }
        return { _tag: "Applied", record: toRecord(updated!) } as TransitionResult
      }))).pipe(orStorageError("action.transition")),
    history: (id) =>
      sql<HistoryRow>`SELECT * FROM accord_action_history WHERE action_request_id = ${id} ORDER BY seq`.pipe(
        Effect.map((rows) =>
          rows.map((row): HistoryEntry => ({
            seq: num(row.seq),
            at: num(row.at),
            trigger: row.trigger,
            fromState: row.from_state,
            toState: row.to_state,
            detail: row.detail
          }))
        ),
        orStorageError("action.history")
      ),
    findCompletion: (completionId) =>
      sql<CompletionRow>`SELECT * FROM accord_completions WHERE completion_id = ${completionId}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toClaim)),
        orStorageError("action.findCompletion")
      ),
    lastActivityOnRevision: (connectionId, revision) =>
      sql<{ latest: unknown }>`SELECT MAX(updated_at) AS latest FROM accord_actions
          WHERE connection_id = ${connectionId} AND revision = ${revision}`.pipe(
        Effect.map((rows) => (rows[0]?.latest == null ? Option.none() : Option.some(num(rows[0].latest)))),
        orStorageError("action.lastActivityOnRevision")
      )
  })
)

/**
 * @since 0.1.0
 */
export const layer: Layer.Layer<ActionLedger, never, SqlClient.SqlClient> = Layer.effect(ActionLedger, make)
