/**
 * `ActionLedger` on SQL. Each port operation is one transaction: creating an action inserts it, its
 * first history entry and its outbox item; a transition claims the completion id (primary key),
 * updates the action where `version` still matches, appends history and enqueues work. Any step
 * that finds a conflict rolls the whole transaction back, so nothing partial is ever committed.
 * Creating an action under a caller's intake key first claims the key (`accord_intake_keys`,
 * primary key per workspace) in the same transaction: a concurrent intake under that key waits on
 * the key's row and, once the first commits, finds it taken.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import {
  ActionLedger,
  type ActionLedgerService,
  claimRefused,
  erasedField,
  type ActionRecord,
  type CompletionClaim,
  type CreateResult,
  type HistoryEntry,
  type IntakeKeyClaim,
  type NewIntakeKey,
  notCountedForFrequency,
  type TransitionResult
} from "../../core/ports/ActionLedger.ts"
import { completionIdentity } from "../../core/connector/CompletionIdentity.ts"
import type { NonceClaim } from "../../core/ports/NonceStore.ts"
import { dueFirst, leaseReturning, type OutboxRow, toItem } from "./Outbox.ts"
import * as Batcher from "../../core/ports/Batcher.ts"
import { inRounds, isDeadlock, isUniqueViolation, makeBatcher } from "./Batch.ts"
import { claimNonces, earliestClaimTime, sweepNonces } from "./NonceStore.ts"
import { anyOf, firstRow, json, num, orStorageError } from "./SqlSupport.ts"
import { sqlTransaction } from "./Transactor.ts"

type TransitionOptions = Parameters<ActionLedgerService["transition"]>[0]

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

interface IntakeKeyRow {
  readonly workspace_id: string
  readonly idempotency_key: string
  readonly body_hash: string
  readonly action_request_id: string
  readonly created_at: unknown
}

const toIntakeKey = (row: IntakeKeyRow): IntakeKeyClaim => ({
  workspaceId: row.workspace_id,
  idempotencyKey: row.idempotency_key,
  bodyHash: row.body_hash,
  actionRequestId: row.action_request_id,
  createdAt: num(row.created_at)
})

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
  Effect.catchIf(
    effect,
    (e): e is Rollback<A> => e._tag === "Rollback",
    (e) => Effect.succeed(e.outcome)
  )

type CreateOptions = Parameters<ActionLedgerService["create"]>[0]

/**
 * What the transition statement returns per item it answers: the action as updated, or for an
 * item whose completion id was already claimed, the claim (`c_*`) with the action's columns null.
 */
interface TransitionRow extends ActionRow {
  /** The item's index in the batch. */
  readonly item: number
  readonly c_id: string | null
  readonly c_action: string | null
  readonly c_body_hash: string | null
  readonly c_received_at: unknown
}

/** A transition refused by the claim its completion id already has: a duplicate or a conflict. */
const refusedClaim = (incoming: CompletionClaim, row: TransitionRow): TransitionResult => {
  const claim: CompletionClaim = {
    completionId: row.c_id!,
    actionRequestId: row.c_action!,
    bodyHash: row.c_body_hash!,
    receivedAt: num(row.c_received_at)
  }
  // The claim exists, so the identity is never "new" here.
  return claimRefused(completionIdentity(claim, incoming) === "duplicate" ? "duplicate" : "conflict", claim)
}

/**
 * The retention sweep of callers' intake keys: deletes up to `limit` keys created before
 * `liveSince` (past their 24 hour retention, `core/connector/IntakeKey.ts`); the number deleted.
 * The outer condition is checked again on the row it deletes, so a key that a concurrent intake has
 * just claimed anew (its `created_at` moved forward) is never deleted.
 */
export const sweepIntakeKeys = (
  sql: SqlClient.SqlClient,
  liveSince: number,
  limit = sweepLimit
): Effect.Effect<number, SqlError> =>
  sql`DELETE FROM accord_intake_keys
      WHERE created_at < ${liveSince} AND (workspace_id, idempotency_key) IN (
        SELECT workspace_id, idempotency_key FROM accord_intake_keys WHERE created_at < ${liveSince} LIMIT ${limit})
      RETURNING 1`.pipe(Effect.map((rows) => rows.length))

/**
 * Rows one sweep deletes at most (a sweep stays a short statement however far behind it is).
 */
export const sweepLimit = 1_000

/**
 * Creating an action, a transition without a completion claim or outbox item, and reading an
 * action are batched across concurrent callers (`Batch`): one statement for many. Each is atomic
 * per action on its own (a single statement), so batching changes only the round trips.
 */
export const make: Effect.Effect<ActionLedgerService, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(
  function* () {
    const sql = yield* SqlClient.SqlClient
    // Expired intake keys are swept on every 256th keyed intake of this process, after it committed:
    // the table holds at most a day of keys plus what arrived since the last sweep.
    let keyedIntakes = 0
    const sweepKeys = (liveSince: number) =>
      (++keyedIntakes & 255) === 0
        ? Effect.catchAll(sweepIntakeKeys(sql, liveSince), (error) =>
            Effect.logWarning("intake key sweep failed", error.message)
          )
        : Effect.void

    /**
     * Inserts each action (a conflict on its id or idempotency key inserts nothing, and then nothing
     * else is inserted for it), its first history entry and its outbox item, in one statement. An
     * outbox conflict is a unique violation that aborts the statement; the batcher then creates the
     * items one at a time, where that conflict means `duplicate` for that item alone. An idle worker
     * woken by an item waits for the host's next turn (`Batcher.gatherNextTurn`), so the creates that
     * arrive together (a kit's claims, intake's actions) share a statement. An item with an
     * `outboxLease` is inserted already leased. A create with a `nonce` claims it with the nonce
     * store's statement (`claimNonces`) inside the same statement, and inserts the action only when
     * that claim returned it, i.e. the nonce was fresh: a replay writes nothing.
     */
    const createAll = (items: ReadonlyArray<CreateOptions>) => {
      return sql<{ action_request_id: string | null; n_scope: string | null; n_nonce: string | null }>`
      WITH v AS (
        SELECT * FROM jsonb_to_recordset(${json(
          items.map(({ history: h, nonce: n, outbox: o, outboxLease: l, record: r }) => ({
            action_request_id: r.actionRequestId,
            workspace_id: r.workspaceId,
            account_id: r.accountId,
            connection_id: r.connectionId,
            revision: r.revision,
            provider_idempotency_key: r.providerIdempotencyKey,
            state: r.state,
            request: r.request,
            acknowledgement: r.acknowledgement,
            sealed_continuation: r.sealedContinuation,
            created_at: r.createdAt,
            h_at: h.at,
            h_trigger: h.trigger,
            h_detail: h.detail,
            ...(o === undefined
              ? {}
              : {
                  o_id: o.id,
                  o_kind: o.kind,
                  o_dedupe_key: o.dedupeKey,
                  o_payload: o.payload,
                  o_next_attempt_at: o.nextAttemptAt,
                  o_created_at: o.createdAt,
                  ...(l === undefined ? {} : { o_lease_owner: l.owner, o_lease_expires_at: l.expiresAt })
                }),
            ...(n === undefined ? {} : { n_scope: n.scope, n_nonce: n.nonce, n_expires_at: n.expiresAt })
          }))
        )}::jsonb) AS v(action_request_id text, workspace_id text, account_id text, connection_id text, revision int4,
          provider_idempotency_key text, state text, request jsonb, acknowledgement jsonb, sealed_continuation text,
          created_at int8, h_at int8, h_trigger text, h_detail jsonb,
          o_id text, o_kind text, o_dedupe_key text, o_payload jsonb, o_next_attempt_at int8, o_created_at int8,
          o_lease_owner text, o_lease_expires_at int8, n_scope text, n_nonce text, n_expires_at int8)
      ), nonce AS (${claimNonces(
        sql,
        sql`SELECT n_scope, n_nonce, n_expires_at FROM v WHERE n_nonce IS NOT NULL`,
        earliestClaimTime(items.map((i) => i.nonce))
      )}), action AS (
        INSERT INTO accord_actions (action_request_id, workspace_id, account_id, connection_id, revision,
          provider_idempotency_key, state, request, acknowledgement, sealed_continuation, created_at, updated_at, version)
        SELECT action_request_id, workspace_id, account_id, connection_id, revision, provider_idempotency_key, state,
          COALESCE(request, 'null'::jsonb), acknowledgement, sealed_continuation, created_at, created_at, 1
        FROM v
        WHERE v.n_nonce IS NULL OR EXISTS (SELECT 1 FROM nonce WHERE nonce.scope = v.n_scope AND nonce.nonce = v.n_nonce)
        ON CONFLICT DO NOTHING RETURNING action_request_id
      ), history AS (
        INSERT INTO accord_action_history (workspace_id, action_request_id, seq, at, trigger, from_state, to_state, detail)
        SELECT v.workspace_id, v.action_request_id, 1, v.h_at, v.h_trigger, NULL, v.state, COALESCE(v.h_detail, 'null'::jsonb)
        FROM v JOIN action USING (action_request_id)
      ), queued AS (
        INSERT INTO accord_outbox (id, kind, dedupe_key, payload, next_attempt_at, created_at, lease_owner, lease_expires_at)
        SELECT v.o_id, v.o_kind, v.o_dedupe_key, COALESCE(v.o_payload, 'null'::jsonb), v.o_next_attempt_at, v.o_created_at,
          v.o_lease_owner, v.o_lease_expires_at
        FROM v JOIN action USING (action_request_id)
        WHERE v.o_id IS NOT NULL
      )
      SELECT action_request_id, NULL AS n_scope, NULL AS n_nonce FROM action
      UNION ALL SELECT NULL, scope, nonce FROM nonce`.pipe(
        Effect.map((rows) => {
          const created = new Set<string>()
          const nonces = new Set<string>()
          for (const row of rows) {
            if (row.action_request_id !== null) created.add(row.action_request_id)
            else nonces.add(`${row.n_scope}\u0000${row.n_nonce}`)
          }
          return items.map((i): "created" | "duplicate" | "replayed_nonce" =>
            i.nonce !== undefined && !nonces.has(`${i.nonce.scope}\u0000${i.nonce.nonce}`)
              ? "replayed_nonce"
              : created.has(i.record.actionRequestId)
                ? "created"
                : "duplicate"
          )
        })
      )
    }
    // Nonces recorded by creates are swept as `NonceStore` sweeps its own: after every 256th of this process.
    let noncesRecorded = 0
    const sweepRecordedNonces = (now: number) =>
      (++noncesRecorded & 255) === 0
        ? Effect.catchAll(sweepNonces(sql, now), (error) => Effect.logWarning("nonce sweep failed", error.message))
        : Effect.void
    const claimNonceAlone = (n: NonceClaim) =>
      Effect.map(claimNonces(sql, sql`VALUES (${n.scope}, ${n.nonce}, ${n.expiresAt})`, n.now), (rows) =>
        rows.length === 1 ? ("duplicate" as const) : ("replayed_nonce" as const)
      )
    const create = yield* makeBatcher(
      (items: ReadonlyArray<CreateOptions>) =>
        inRounds(
          items,
          (i) => [
            `id:${i.record.actionRequestId}`,
            `key:${i.record.providerIdempotencyKey}`,
            ...(i.nonce === undefined ? [] : [`nonce:${i.nonce.scope}\u0000${i.nonce.nonce}`])
          ],
          createAll
        ),
      {
        one: (item) =>
          Effect.map(createAll([item]), (r) => r[0]!).pipe(
            // The statement was rolled back, its nonce with it: recorded alone, as the answer still says.
            Effect.catchIf(isUniqueViolation, () =>
              item.nonce === undefined ? Effect.succeed("duplicate" as const) : claimNonceAlone(item.nonce)
            )
          ),
        splitOn: (error) => isDeadlock(error) || isUniqueViolation(error),
        gather: Batcher.gatherNextTurn
      }
    )

    /**
     * Every transition, in one statement for a whole batch: each update applies where the version
     * still matches (a self-join returns the state it had) and its completion id is not claimed yet,
     * with its history entry, its completion claim, its outbox item and the outbox item it
     * completes. A concurrent transition holds the row only for its own statement; once it
     * commits, the version no longer matches and nothing is written for that item (`Stale`). The
     * history sequence continues from the snapshot, which is current whenever the version matched.
     *
     * One statement, because a transaction of several would hold the action's row lock across the
     * host's turns between them: under load every other delivery for the action waits on it with a
     * pooled connection of its own, idle in transaction, until the pool and the host are both
     * starved. A claim or outbox item that a concurrent statement has just written aborts the
     * statement with a unique violation; the batch then runs one item at a time (`transitionOne`).
     */
    const transitionAll = (items: ReadonlyArray<TransitionOptions>) =>
      sql<TransitionRow>`
      WITH v AS (
        SELECT * FROM jsonb_to_recordset(${json(
          items.map((o, input) => ({
            input,
            id: o.actionRequestId,
            expected: o.expectedVersion,
            to_state: o.toState,
            at: o.at,
            set_ack: o.acknowledgement !== undefined,
            ack: o.acknowledgement,
            set_sealed: o.sealedContinuation !== undefined,
            sealed: o.sealedContinuation,
            h_at: o.history.at,
            h_trigger: o.history.trigger,
            h_detail: o.history.detail,
            complete_id: o.completeOutboxItem?.id,
            complete_owner: o.completeOutboxItem?.owner,
            c_id: o.completion?.completionId,
            c_body_hash: o.completion?.bodyHash,
            c_received_at: o.completion?.receivedAt,
            o_id: o.outbox?.id,
            o_kind: o.outbox?.kind,
            o_dedupe_key: o.outbox?.dedupeKey,
            o_payload: o.outbox?.payload,
            o_next_attempt_at: o.outbox?.nextAttemptAt,
            o_created_at: o.outbox?.createdAt
          }))
        )}::jsonb) AS v(input int4, id text, expected int4, to_state text, at int8, set_ack bool, ack jsonb,
          set_sealed bool, sealed text, h_at int8, h_trigger text, h_detail jsonb, complete_id text, complete_owner text,
          c_id text, c_body_hash text, c_received_at int8, o_id text, o_kind text, o_dedupe_key text, o_payload jsonb,
          o_next_attempt_at int8, o_created_at int8)
      ), claimed AS (
        -- One primary-key probe per transition (LIMIT 1 keeps the subquery from being flattened into
        -- a join): joined to v (estimated at 100 rows whatever it holds), a plan made while the table
        -- was small scanned every completion ever received, and a prepared statement kept that plan.
        SELECT v.input, c.completion_id AS c_id, c.action_request_id AS c_action, c.body_hash AS c_body_hash,
          c.received_at AS c_received_at
        FROM v CROSS JOIN LATERAL (
          SELECT completion_id, action_request_id, body_hash, received_at FROM accord_completions
          WHERE completion_id = v.c_id LIMIT 1) c
      ), queued_before AS (
        SELECT v.input FROM v
        WHERE v.o_id IS NOT NULL AND EXISTS (
          SELECT 1 FROM accord_outbox o WHERE o.id = v.o_id OR (o.kind = v.o_kind AND o.dedupe_key = v.o_dedupe_key))
      ), updated AS (
        UPDATE accord_actions a SET
          state = v.to_state, updated_at = v.at, version = a.version + 1,
          acknowledgement = CASE WHEN v.set_ack THEN v.ack ELSE a.acknowledgement END,
          sealed_continuation = CASE WHEN v.set_sealed THEN v.sealed ELSE a.sealed_continuation END
        FROM v, accord_actions previous
        WHERE a.action_request_id = v.id AND a.version = v.expected AND previous.action_request_id = v.id
          AND a.action_request_id = ANY(ARRAY(SELECT id FROM v)) AND previous.action_request_id = ANY(ARRAY(SELECT id FROM v))
          AND v.input NOT IN (SELECT input FROM claimed) AND v.input NOT IN (SELECT input FROM queued_before)
        RETURNING a.*, v.input, previous.state AS previous_state, v.h_at, v.h_trigger, v.h_detail, v.complete_id, v.complete_owner
      ), done AS (
        UPDATE accord_outbox o SET completed_at = u.updated_at, lease_owner = NULL, lease_expires_at = NULL
        FROM updated u
        WHERE o.id = u.complete_id AND o.lease_owner = u.complete_owner AND o.completed_at IS NULL
      ), history AS (
        INSERT INTO accord_action_history (workspace_id, action_request_id, seq, at, trigger, from_state, to_state, detail)
        SELECT u.workspace_id, u.action_request_id,
          COALESCE((SELECT MAX(seq) FROM accord_action_history h
                    WHERE h.workspace_id = u.workspace_id AND h.action_request_id = u.action_request_id), 0) + 1,
          u.h_at, u.h_trigger, u.previous_state, u.state, COALESCE(u.h_detail, 'null'::jsonb)
        FROM updated u
      ), claim AS (
        INSERT INTO accord_completions (completion_id, action_request_id, body_hash, received_at)
        SELECT v.c_id, v.id, v.c_body_hash, v.c_received_at FROM updated u JOIN v ON v.input = u.input
        WHERE v.c_id IS NOT NULL
      ), queued AS (
        INSERT INTO accord_outbox (id, kind, dedupe_key, payload, next_attempt_at, created_at)
        SELECT v.o_id, v.o_kind, v.o_dedupe_key, COALESCE(v.o_payload, 'null'::jsonb), v.o_next_attempt_at, v.o_created_at
        FROM updated u JOIN v ON v.input = u.input
        WHERE v.o_id IS NOT NULL
      )
      SELECT u.*, v.input AS item, c.c_id, c.c_action, c.c_body_hash, c.c_received_at
      FROM v LEFT JOIN updated u ON u.input = v.input LEFT JOIN claimed c ON c.input = v.input
      WHERE u.input IS NOT NULL OR c.input IS NOT NULL`.pipe(
        Effect.map((rows) => {
          const applied = new Map<number, TransitionRow>()
          const claims = new Map<number, TransitionRow>()
          for (const row of rows) (row.c_id === null ? applied : claims).set(num(row.item), row)
          return items.map((item, i): TransitionResult => {
            const claim = claims.get(i)
            if (claim !== undefined) return refusedClaim(item.completion!, claim)
            const row = applied.get(i)
            return row === undefined ? { _tag: "Stale" } : { _tag: "Applied", record: toRecord(row) }
          })
        })
      )

    /**
     * One transition alone, after its batch's statement failed with a unique violation: the
     * completion id or outbox item another statement wrote after this one's snapshot. The same
     * statement again sees it, so it answers the claim's identity (duplicate or conflict) or
     * `Stale`, as a transition that lost the race to that write.
     */
    const transitionOne = (o: TransitionOptions) =>
      Effect.map(transitionAll([o]), (results) => results[0]!).pipe(
        Effect.catchIf(isUniqueViolation, () =>
          Effect.map(transitionAll([o]), (results) => results[0]!).pipe(
            Effect.catchIf(isUniqueViolation, () => Effect.succeed<TransitionResult>({ _tag: "Stale" }))
          )
        )
      )

    // Gathered like `create`: the transitions of one turn share a statement. A completion id or
    // outbox item repeated within a batch goes into a later round, where it is found claimed.
    const transition = yield* makeBatcher(
      (items: ReadonlyArray<TransitionOptions>) =>
        inRounds(
          items,
          (o) => [
            o.actionRequestId,
            ...(o.completion === undefined ? [] : [`completion:${o.completion.completionId}`]),
            ...(o.outbox === undefined
              ? []
              : [`outbox:${o.outbox.id}`, `outbox:${o.outbox.kind}\u0000${o.outbox.dedupeKey}`])
          ],
          transitionAll
        ),
      {
        one: transitionOne,
        splitOn: (error) => isDeadlock(error) || isUniqueViolation(error),
        gather: Batcher.gatherNextTurn
      }
    )

    const findIntakeKey = (options: {
      readonly workspaceId: string
      readonly idempotencyKey: string
      readonly liveSince: number
    }) =>
      sql<IntakeKeyRow>`SELECT * FROM accord_intake_keys
        WHERE workspace_id = ${options.workspaceId} AND idempotency_key = ${options.idempotencyKey}
          AND created_at >= ${options.liveSince}`.pipe(Effect.map(firstRow(toIntakeKey)))

    /**
     * Claims the key (replacing an expired claim), then creates the action, in one transaction; a
     * live claim, or an action that is a duplicate, rolls it back. Not batched: the key's row lock
     * is what serialises concurrent intakes under one key.
     */
    const createKeyed = (options: CreateOptions, key: NewIntakeKey) =>
      options.nonce !== undefined
        ? Effect.die("a create's nonce is not combined with an intake key")
        : committedOrRolledBack<CreateResult, never>(
            sqlTransaction(
              sql,
              Effect.gen(function* () {
                const c = key.claim
                const claimed =
                  yield* sql`INSERT INTO accord_intake_keys (workspace_id, idempotency_key, body_hash, action_request_id, created_at)
          VALUES (${c.workspaceId}, ${c.idempotencyKey}, ${c.bodyHash}, ${c.actionRequestId}, ${c.createdAt})
          ON CONFLICT (workspace_id, idempotency_key) DO UPDATE SET
            body_hash = EXCLUDED.body_hash, action_request_id = EXCLUDED.action_request_id, created_at = EXCLUDED.created_at
          WHERE accord_intake_keys.created_at < ${key.liveSince}
          RETURNING action_request_id`
                if (claimed.length === 0) {
                  const existing = yield* findIntakeKey({
                    workspaceId: c.workspaceId,
                    idempotencyKey: c.idempotencyKey,
                    liveSince: key.liveSince
                  })
                  // Held by a live claim: the row exists and is live, since it did not expire for the insert.
                  return yield* new Rollback<CreateResult>({
                    outcome: Option.match(existing, {
                      onNone: () => "duplicate" as const,
                      onSome: (claim) => ({ _tag: "IntakeKeyTaken" as const, claim })
                    })
                  })
                }
                const [created] = yield* createAll([options])
                if (created !== "created") return yield* new Rollback<CreateResult>({ outcome: "duplicate" })
                return created as CreateResult
              })
            )
          ).pipe(Effect.catchIf(isUniqueViolation, () => Effect.succeed("duplicate" as const)))

    const get = yield* makeBatcher((ids: ReadonlyArray<string>) =>
      Effect.map(
        sql<ActionRow>`SELECT * FROM accord_actions WHERE action_request_id = ANY(${anyOf(sql, ids)})`,
        (rows) => {
          const byId = new Map(rows.map((row) => [row.action_request_id, row]))
          return ids.map((id) => Option.map(Option.fromNullable(byId.get(id)), toRecord))
        }
      )
    )

    return {
      create: (options) =>
        (options.intakeKey === undefined
          ? options.nonce === undefined
            ? create(options)
            : Effect.tap(create(options), () => sweepRecordedNonces(options.nonce!.now))
          : Effect.tap(createKeyed(options, options.intakeKey), () => sweepKeys(options.intakeKey!.liveSince))
        ).pipe(orStorageError("action.create")),
      findIntakeKey: (options) => findIntakeKey(options).pipe(orStorageError("action.findIntakeKey")),
      get: (id) => get(id).pipe(orStorageError("action.get")),
      getByIdempotencyKey: (key) =>
        sql<ActionRow>`SELECT * FROM accord_actions WHERE provider_idempotency_key = ${key}`.pipe(
          Effect.map(firstRow(toRecord)),
          orStorageError("action.getByIdempotencyKey")
        ),
      transition: (o) => transition(o).pipe(orStorageError("action.transition")),
      leaseWithActions: (request) =>
        sql<OutboxRow & { readonly action: ActionRow | null }>`
        WITH leased AS (${leaseReturning(sql, request)})
        SELECT leased.*, to_jsonb(a) AS action
        FROM leased LEFT JOIN accord_actions a ON a.action_request_id = leased.payload->>'actionRequestId'`.pipe(
          Effect.map((rows) =>
            rows
              .map((row) => ({ item: toItem(row), action: Option.map(Option.fromNullable(row.action), toRecord) }))
              .sort((a, b) => dueFirst(a.item, b.item))
          ),
          orStorageError("action.leaseWithActions")
        ),
      expediteRetries: ({ connectionId, errors, kinds, limit, now, revision }) =>
        sql`UPDATE accord_outbox SET next_attempt_at = ${now}
          WHERE id IN (
            SELECT o.id FROM accord_outbox o JOIN accord_actions a ON a.action_request_id = o.payload->>'actionRequestId'
            WHERE ${sql.in("o.kind", kinds)} AND o.completed_at IS NULL AND o.next_attempt_at > ${now}
              AND ${sql.in("o.last_error", errors)} AND (o.lease_expires_at IS NULL OR o.lease_expires_at <= ${now})
              AND a.connection_id = ${connectionId} AND a.revision = ${revision}
            ORDER BY o.next_attempt_at, o.created_at ${limit === undefined ? sql`` : sql`LIMIT ${limit}`}
            FOR UPDATE OF o SKIP LOCKED)
          RETURNING id`.pipe(
          Effect.map((rows) => rows.length),
          orStorageError("action.expediteRetries")
        ),
      history: (id) =>
        // Through the action's row: its workspace then leads the history's key, so the history
        // needs no index of its own on the action id (migration 0028).
        sql<HistoryRow>`SELECT h.* FROM accord_actions a
          JOIN accord_action_history h ON h.workspace_id = a.workspace_id AND h.action_request_id = a.action_request_id
          WHERE a.action_request_id = ${id} ORDER BY h.seq`.pipe(
          Effect.map((rows) =>
            rows.map(
              (row): HistoryEntry => ({
                seq: num(row.seq),
                at: num(row.at),
                trigger: row.trigger,
                fromState: row.from_state,
                toState: row.to_state,
                detail: row.detail
              })
            )
          ),
          orStorageError("action.history")
        ),
      findCompletion: (completionId) =>
        sql<CompletionRow>`SELECT * FROM accord_completions WHERE completion_id = ${completionId}`.pipe(
          Effect.map(firstRow(toClaim)),
          orStorageError("action.findCompletion")
        ),
      lastActivityOnRevision: (connectionId, revision) =>
        sql<{ latest: unknown }>`SELECT MAX(updated_at) AS latest FROM accord_actions
          WHERE connection_id = ${connectionId} AND revision = ${revision}`.pipe(
          Effect.map((rows) => (rows[0]?.latest == null ? Option.none() : Option.some(num(rows[0].latest)))),
          orStorageError("action.lastActivityOnRevision")
        ),
      unfinishedOnRevision: ({ connectionId, revision, work }) =>
        sql<{ n: unknown }>`SELECT count(DISTINCT a.action_request_id) AS n
          FROM accord_actions a
          JOIN accord_outbox o ON o.payload->>'actionRequestId' = a.action_request_id AND o.completed_at IS NULL
          JOIN jsonb_to_recordset(${json(work.map((w) => ({ kind: w.kind, while_in: w.whileIn ?? null })))}::jsonb)
            AS w(kind text, while_in jsonb) ON o.kind = w.kind AND (w.while_in IS NULL OR w.while_in @> to_jsonb(a.state))
          WHERE a.connection_id = ${connectionId} AND a.revision = ${revision}`.pipe(
          Effect.map((rows) => num(rows[0]?.n ?? 0)),
          orStorageError("action.unfinishedOnRevision")
        ),
      countForFrequency: ({ accountId, actionId, before, since, workspaceId }) =>
        sql<{ n: unknown }>`SELECT count(*) AS n FROM accord_actions
          WHERE workspace_id = ${workspaceId} AND account_id = ${accountId} AND created_at >= ${since}
            AND request->'action'->>'id' = ${actionId}
            AND state NOT IN ${sql.in(notCountedForFrequency)}
            ${
              before === undefined
                ? sql``
                : sql`AND (created_at < ${before.createdAt} OR (created_at = ${before.createdAt} AND action_request_id < ${before.actionRequestId}))`
            }`.pipe(
          Effect.map((rows) => num(rows[0]?.n ?? 0)),
          orStorageError("action.countForFrequency")
        ),
      // ids compared byte-wise (COLLATE "C"), as the memory ledger does, whatever the database's
      // collation; the order is that of `accord_actions_recent` (migration 0019)
      list: ({ accountId, after, limit, state, workspaceId }) =>
        sql<ActionRow>`SELECT * FROM accord_actions WHERE ${sql.and([
          sql`workspace_id = ${workspaceId}`,
          ...(state === undefined ? [] : [sql`state = ${state}`]),
          ...(accountId === undefined ? [] : [sql`account_id = ${accountId}`]),
          ...(after === undefined
            ? []
            : [sql`(created_at, action_request_id COLLATE "C") < (${after.createdAt}, ${after.actionRequestId})`])
        ])} ORDER BY created_at DESC, action_request_id COLLATE "C" DESC LIMIT ${limit}`.pipe(
          Effect.map((rows) => rows.map(toRecord)),
          orStorageError("action.list")
        ),
      // Checked and redacted in one transaction, the subject's rows locked first, so an action
      // cannot leave or enter an open state between the check and the redaction.
      redactSubject: ({ openStates, pseudonym, subject, workspaceId }) =>
        sqlTransaction(
          sql,
          Effect.gen(function* () {
            const mine =
              subject.kind === "account"
                ? sql`workspace_id = ${workspaceId} AND account_id = ${subject.id}`
                : sql`workspace_id = ${workspaceId} AND request->'actor'->>'subjectId' = ${subject.id}`
            const rows = yield* sql<{ readonly state: string }>`SELECT state FROM accord_actions WHERE ${mine}
              ORDER BY action_request_id FOR UPDATE`
            const open = rows.filter((row) => openStates.includes(row.state)).length
            if (open > 0) return { _tag: "Open", count: open } as const
            if (rows.length === 0) return { _tag: "Redacted", count: 0 } as const
            // The same edits as `redactedRequest`, in SQL.
            if (subject.kind === "user") {
              yield* sql`UPDATE accord_actions
                SET request = jsonb_set(request, '{actor,subjectId}', to_jsonb(${pseudonym}::text))
                WHERE ${mine}`
            } else {
              yield* sql`DELETE FROM accord_intake_keys WHERE workspace_id = ${workspaceId} AND action_request_id IN
                (SELECT action_request_id FROM accord_actions WHERE ${mine})`
              yield* sql`UPDATE accord_actions SET
                account_id = ${pseudonym},
                sealed_continuation = NULL,
                request = request || jsonb_build_object('accountId', ${pseudonym}::text)
                  || CASE WHEN request ? 'actor'
                    THEN jsonb_build_object('actor', (request->'actor') || jsonb_build_object('subjectId', ${erasedField}::text))
                    ELSE '{}'::jsonb END
                  || CASE WHEN request->'action' ? 'operation'
                    THEN jsonb_build_object('action', (request->'action') || jsonb_build_object('operation',
                      jsonb_build_object('family', request->'action'->'operation'->'family')))
                    ELSE '{}'::jsonb END
                WHERE ${mine}`
            }
            return { _tag: "Redacted", count: rows.length } as const
          })
        ).pipe(orStorageError("action.redactSubject"))
    }
  }
)

export const layer: Layer.Layer<ActionLedger, never, SqlClient.SqlClient> = Layer.scoped(ActionLedger, make)
