/**
 * `ApprovalStore` on SQL: one row per approval, and every change is ONE conditional
 * `UPDATE … WHERE state … AND revision … RETURNING` (a compare-and-set). Concurrent prepares and
 * resolves of one approval serialise on its row lock; each re-checks its condition against the row
 * the previous one committed, so of any number of claims racing at one revision exactly one succeeds.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  type ApprovalRecord,
  type ApprovalRequester,
  type ApprovalState,
  ApprovalStore,
  type ApprovalStoreService,
  type CappedCreate,
  type PendingScope,
  type PreparedReview
} from "../../core/ports/ApprovalStore.ts"
import { firstRow, json, num, numOrNull, orStorageError } from "./SqlSupport.ts"
import { sqlTransaction } from "./Transactor.ts"

interface Row {
  readonly approval_id: string
  readonly workspace_id: string
  readonly account_id: string
  readonly token_hash: string
  /** The `jsonb` columns are read as JSON text (`::text`), whatever the driver does with `jsonb`. */
  readonly requester: string
  readonly request: string
  readonly state: string
  readonly revision: unknown
  readonly expires_at: unknown
  readonly created_at: unknown
  readonly prepared: string | null
  readonly claimed_at: unknown
  readonly resolved_by: string | null
  readonly resolved_at: unknown
  readonly action_request_id: string | null
}

const toRecord = (row: Row): ApprovalRecord => ({
  approvalId: row.approval_id,
  workspaceId: row.workspace_id,
  accountId: row.account_id,
  tokenHash: row.token_hash,
  requester: JSON.parse(row.requester) as ApprovalRequester,
  request: JSON.parse(row.request),
  state: row.state as ApprovalState,
  revision: num(row.revision),
  expiresAt: num(row.expires_at),
  createdAt: num(row.created_at),
  prepared: row.prepared === null ? null : (JSON.parse(row.prepared) as PreparedReview),
  claimedAt: numOrNull(row.claimed_at),
  resolvedBy: row.resolved_by,
  resolvedAt: numOrNull(row.resolved_at),
  actionRequestId: row.action_request_id
})

const columns = `approval_id, workspace_id, account_id, token_hash, requester::text AS requester, request::text AS request,
  state, revision, expires_at, created_at, prepared::text AS prepared, claimed_at, resolved_by, resolved_at, action_request_id`

/** The open approvals of one account, per cap scope: how many, and the earliest expiry among them. */
interface OpenRow {
  readonly account_n: unknown
  readonly account_next: unknown
  readonly action_n: unknown
  readonly action_next: unknown
  readonly subject_n: unknown
  readonly subject_next: unknown
}

export const make: Effect.Effect<ApprovalStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => {
    const insert = (r: ApprovalRecord, actionKey: string | null) =>
      sql`INSERT INTO accord_approvals (approval_id, workspace_id, account_id, token_hash, requester, request, state, revision,
            expires_at, created_at, prepared, claimed_at, resolved_by, resolved_at, action_request_id, action_key)
          VALUES (${r.approvalId}, ${r.workspaceId}, ${r.accountId}, ${r.tokenHash}, ${json(r.requester)}::jsonb,
            ${json(r.request)}::jsonb, ${r.state}, ${r.revision}, ${r.expiresAt}, ${r.createdAt},
            ${r.prepared === null ? null : json(r.prepared)}::jsonb, ${r.claimedAt}, ${r.resolvedBy}, ${r.resolvedAt},
            ${r.actionRequestId}, ${actionKey})
          ON CONFLICT (workspace_id, approval_id) DO NOTHING RETURNING approval_id`.pipe(
        Effect.map((rows) => rows.length === 1)
      )
    return {
      create: (r) => insert(r, null).pipe(orStorageError("approval.create")),
      get: (approvalId) =>
        sql<Row>`SELECT ${sql.literal(columns)} FROM accord_approvals WHERE approval_id = ${approvalId}`.pipe(
          Effect.map(firstRow(toRecord)),
          orStorageError("approval.get")
        ),
      prepare: ({ approvalId, review, revision }) =>
        sql<Row>`UPDATE accord_approvals SET revision = ${revision + 1},
            prepared = ${json({ ...review, revision: revision + 1 })}::jsonb
          WHERE approval_id = ${approvalId} AND state = 'pending' AND revision = ${revision}
          RETURNING ${sql.literal(columns)}`.pipe(Effect.map(firstRow(toRecord)), orStorageError("approval.prepare")),
      claim: ({ approvalId, now, revision, sessionId, staleBefore }) =>
        sql`UPDATE accord_approvals SET state = 'approving', claimed_at = ${now}, resolved_by = ${sessionId}
          WHERE approval_id = ${approvalId} AND revision = ${revision}
            AND (state = 'pending' OR (state = 'approving' AND resolved_by = ${sessionId} AND claimed_at IS NOT NULL AND claimed_at < ${staleBefore}))
          RETURNING approval_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          orStorageError("approval.claim")
        ),
      complete: ({ actionRequestId, approvalId, now, sessionId }) =>
        sql`UPDATE accord_approvals SET state = 'approved', action_request_id = ${actionRequestId}, resolved_at = ${now}
          WHERE approval_id = ${approvalId} AND state = 'approving' AND resolved_by = ${sessionId}
          RETURNING approval_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          orStorageError("approval.complete")
        ),
      release: ({ approvalId, sessionId }) =>
        sql`UPDATE accord_approvals SET state = 'pending', revision = revision + 1, prepared = NULL, claimed_at = NULL,
            resolved_by = NULL
          WHERE approval_id = ${approvalId} AND state = 'approving' AND resolved_by = ${sessionId}
          RETURNING approval_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          orStorageError("approval.release")
        ),
      deny: ({ approvalId, now, sessionId }) =>
        sql`UPDATE accord_approvals SET state = 'denied', resolved_by = ${sessionId}, resolved_at = ${now}
          WHERE approval_id = ${approvalId} AND state = 'pending'
          RETURNING approval_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          orStorageError("approval.deny")
        ),
      // The account's open approvals are counted and the approval inserted under a transaction-scoped
      // advisory lock on the account, so creates racing for its last place serialise.
      createWithinCaps: ({ actionKey, caps, now, record: r }) =>
        sqlTransaction(
          sql,
          Effect.gen(function* () {
            yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${json(["approvals", r.workspaceId, r.accountId])}, 0))`
            const [open] = yield* sql<OpenRow>`SELECT count(*) AS account_n, min(expires_at) AS account_next,
                count(*) FILTER (WHERE action_key = ${actionKey}) AS action_n,
                min(expires_at) FILTER (WHERE action_key = ${actionKey}) AS action_next,
                count(*) FILTER (WHERE requester->>'subject' = ${r.requester.subject}) AS subject_n,
                min(expires_at) FILTER (WHERE requester->>'subject' = ${r.requester.subject}) AS subject_next
              FROM accord_approvals
              WHERE workspace_id = ${r.workspaceId} AND account_id = ${r.accountId}
                AND state IN ('pending', 'approving') AND expires_at > ${now}`
            for (const scope of ["account", "action", "subject"] as const satisfies ReadonlyArray<PendingScope>) {
              if (num(open?.[`${scope}_n`] ?? 0) >= caps[scope]) {
                const next = numOrNull(open?.[`${scope}_next`])
                return { _tag: "Full", scope, freesAt: next ?? now } satisfies CappedCreate
              }
            }
            return (yield* insert(r, actionKey)) ? { _tag: "Created" as const } : { _tag: "Exists" as const }
          })
        ).pipe(orStorageError("approval.createWithinCaps")),
      getUnlocked: ({ approvalId, maxWrongTokens }) =>
        sql<Row>`SELECT ${sql.literal(columns)} FROM accord_approvals
          WHERE approval_id = ${approvalId} AND wrong_tokens < ${maxWrongTokens}`.pipe(
          Effect.map(firstRow(toRecord)),
          orStorageError("approval.getUnlocked")
        ),
      recordWrongToken: ({ approvalId, workspaceId }) =>
        sql`UPDATE accord_approvals SET wrong_tokens = wrong_tokens + 1
          WHERE approval_id = ${approvalId} AND workspace_id = ${workspaceId}`.pipe(
          Effect.asVoid,
          orStorageError("approval.recordWrongToken")
        ),
      cancelForRequester: ({ now, sessionId, workspaceId }) =>
        sql`UPDATE accord_approvals SET state = 'cancelled', resolved_at = ${now}
          WHERE workspace_id = ${workspaceId} AND state = 'pending' AND requester->>'sessionId' = ${sessionId}
          RETURNING approval_id`.pipe(
          Effect.map((rows) => rows.length),
          orStorageError("approval.cancelForRequester")
        ),
      eraseSubject: (workspaceId, subject) =>
        sql`DELETE FROM accord_approvals WHERE workspace_id = ${workspaceId} AND ${
          subject.kind === "account" ? sql`account_id = ${subject.id}` : sql`requester->>'subject' = ${subject.id}`
        } RETURNING approval_id`.pipe(
          Effect.map((rows) => rows.length),
          orStorageError("approval.eraseSubject")
        ),
      // ids compared byte-wise (COLLATE "C"), as the memory store does; the order is that of
      // `accord_approvals_recent` (migration 0024)
      list: ({ after, expiry, limit, state, workspaceId }) =>
        sql<Row>`SELECT ${sql.literal(columns)} FROM accord_approvals WHERE ${sql.and([
          sql`workspace_id = ${workspaceId}`,
          ...(state === undefined ? [] : [sql`state = ${state}`]),
          ...(expiry === undefined
            ? []
            : [expiry.passed ? sql`expires_at <= ${expiry.now}` : sql`expires_at > ${expiry.now}`]),
          ...(after === undefined
            ? []
            : [sql`(created_at, approval_id COLLATE "C") < (${after.createdAt}, ${after.id})`])
        ])} ORDER BY created_at DESC, approval_id COLLATE "C" DESC LIMIT ${limit}`.pipe(
          Effect.map((rows) => rows.map(toRecord)),
          orStorageError("approval.list")
        )
    }
  }
)

export const layer: Layer.Layer<ApprovalStore, never, SqlClient.SqlClient> = Layer.effect(ApprovalStore, make)
