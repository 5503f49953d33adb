/**
 * The `ApprovalStore` port (spec "Approval flow rules"): durable approval requests and
 * their reviews. Every change is a compare-and-set on the approval's `state` and `revision`, so
 * concurrent prepares and resolves of one approval serialise on its row: of any number of resolves
 * racing, exactly one claims it.
 *
 * States: `pending` (requested, maybe prepared) → `approving` (one resolve claimed it and is
 * authorizing the action) → `approved` (the action request exists), or `pending` → `denied`. A
 * claim whose intake refused goes back to `pending` with the revision bumped (its review is void).
 * Revoking the requester's session moves its `pending` approvals to `cancelled`.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"
import type { Subject } from "./SuppressionStore.ts"

/** Where an approval stands: open (`pending`, `approving` while a resolve holds it) or ended. */
export type ApprovalState = "pending" | "approving" | "approved" | "denied" | "cancelled"

/**
 * The requester session, kept as immutable provenance only (rule 6).
 */
export interface ApprovalRequester {
  readonly sessionId: string
  readonly subject: string
  readonly role: string
}

/**
 * The review a prepare produced, for the revision it created.
 */
export interface PreparedReview {
  readonly revision: number
  /** The `reviewProjection` as sent (JSON). */
  readonly projection: unknown
  readonly projectionHash: string
  readonly reviewValidUntil: number
  readonly preparedBy: string
  readonly preparedAt: number
}

/**
 * An approval as stored: who asked, for which catalog action and binding, its token hash, expiry
 * and state.
 */
export interface ApprovalRecord {
  readonly approvalId: string
  readonly workspaceId: string
  readonly accountId: string
  /** Lowercase hex SHA-256 of the private approval token. */
  readonly tokenHash: string
  readonly requester: ApprovalRequester
  /** The action to authorize, bound at request time (JSON; decoded by `core/approval`). */
  readonly request: unknown
  readonly state: ApprovalState
  readonly revision: number
  readonly expiresAt: number
  readonly createdAt: number
  readonly prepared: PreparedReview | null
  /** When the current `approving` claim was taken. */
  readonly claimedAt: number | null
  /** The billing-owner session that resolved (or is resolving) it. */
  readonly resolvedBy: string | null
  readonly resolvedAt: number | null
  readonly actionRequestId: string | null
}

/**
 * The approval port: create within caps, prepare, claim for a resolve, end, cancel and read
 * approvals.
 */
export interface ApprovalStoreService {
  /**
   * Inserts an approval; `false` when one with the same id exists in the workspace (nothing
   * changes). Unique per workspace; an adapter may also refuse another workspace's.
   */
  readonly create: (record: ApprovalRecord) => Effect.Effect<boolean, StorageError>
  /** The approval with this id, if any. */
  readonly get: (approvalId: string) => Effect.Effect<Option.Option<ApprovalRecord>, StorageError>
  /**
   * Records a review of a `pending` approval at `revision`: the revision becomes `revision + 1`
   * (the review's), and the review replaces any earlier one. `None` when the approval is not
   * `pending` at `revision` any more.
   */
  readonly prepare: (input: {
    readonly approvalId: string
    readonly revision: number
    readonly review: Omit<PreparedReview, "revision">
  }) => Effect.Effect<Option.Option<ApprovalRecord>, StorageError>
  /**
   * Claims the approval for approving: `pending` at `revision`, or `approving` at `revision` by the
   * same `sessionId` with a claim taken before `staleBefore` (that resolve died; its retry takes
   * over), becomes `approving` by `sessionId`.
   * `false` when another resolve holds or finished it, or the revision moved.
   */
  readonly claim: (input: {
    readonly approvalId: string
    readonly revision: number
    readonly sessionId: string
    readonly now: number
    readonly staleBefore: number
  }) => Effect.Effect<boolean, StorageError>
  /** `approving` by `sessionId` → `approved` with the action it authorized. */
  readonly complete: (input: {
    readonly approvalId: string
    readonly sessionId: string
    readonly actionRequestId: string
    readonly now: number
  }) => Effect.Effect<boolean, StorageError>
  /** `approving` by `sessionId` → `pending`, revision + 1, review cleared: the claim failed closed. */
  readonly release: (input: {
    readonly approvalId: string
    readonly sessionId: string
  }) => Effect.Effect<boolean, StorageError>
  /** `pending` → `denied` by `sessionId`. `false` when it is not `pending`. */
  readonly deny: (input: {
    readonly approvalId: string
    readonly sessionId: string
    readonly now: number
  }) => Effect.Effect<boolean, StorageError>
  /**
   * Inserts `record` only while the open approvals (`pending` or `approving`, expiring after
   * `now`) of its account, of that account's `actionKey` and of its requester's subject are each
   * fewer than `caps`; the count and the insert are one step, so requests racing for the last place
   * get it once. The scopes are checked in the order account, action, subject.
   */
  readonly createWithinCaps: (input: {
    readonly record: ApprovalRecord
    readonly actionKey: string
    readonly caps: PendingCaps
    readonly now: number
  }) => Effect.Effect<CappedCreate, StorageError>
  /**
   * `get`, except that an approval with `maxWrongTokens` or more wrong tokens recorded is `None`,
   * exactly as an unknown id.
   */
  readonly getUnlocked: (input: {
    readonly approvalId: string
    readonly maxWrongTokens: number
  }) => Effect.Effect<Option.Option<ApprovalRecord>, StorageError>
  /**
   * Counts one wrong token presented for the approval `approvalId` of `workspaceId`; an unknown
   * approval, or one of another workspace, changes nothing (the same statement runs either way).
   */
  readonly recordWrongToken: (input: {
    readonly workspaceId: string
    readonly approvalId: string
  }) => Effect.Effect<void, StorageError>
  /**
   * Every `pending` approval the session `sessionId` of `workspaceId` requested → `cancelled`
   * (its requester was revoked); answers how many. An `approving` claim is left to finish.
   */
  readonly cancelForRequester: (input: {
    readonly workspaceId: string
    readonly sessionId: string
    readonly now: number
  }) => Effect.Effect<number, StorageError>
  /**
   * One page of a workspace's approvals, newest first (by `createdAt`, then id, both descending),
   * optionally of one state and on one side of an expiry; `after` continues past the last approval
   * of the page before.
   */
  readonly list: (query: ApprovalListQuery) => Effect.Effect<ReadonlyArray<ApprovalRecord>, StorageError>
  /**
   * Removes the subject's approvals: an account's (`accountId`), or those a user requested
   * (`requester.subject`, in any account). An approval that authorized an action lives on in that
   * action (its id, state and history). Answers how many.
   */
  readonly eraseSubject: (workspaceId: string, subject: Subject) => Effect.Effect<number, StorageError>
}

/** Which approvals `list` reads: a workspace's, newest first, by state and expiry, paged by keyset. */
export interface ApprovalListQuery {
  readonly workspaceId: string
  readonly limit: number
  readonly state?: ApprovalState
  /** Only approvals whose `expiresAt` is at or before `now` (`passed`), or after it (not `passed`). */
  readonly expiry?: { readonly now: number; readonly passed: boolean }
  readonly after?: { readonly createdAt: number; readonly id: string }
}

/**
 * What a cap on open approvals counts in: the account, the account's action (by key), or the
 * requester's subject within the account.
 */
export type PendingScope = "account" | "action" | "subject"

/**
 * The most open approvals (`pending` or `approving`, not yet expired) each scope may hold.
 */
export interface PendingCaps {
  readonly account: number
  readonly action: number
  readonly subject: number
}

/**
 * What `createWithinCaps` did: inserted it, found one with the same id (nothing changes), or found
 * a scope at its cap; `freesAt` is the earliest expiry among that scope's open approvals, when a
 * place frees up at the latest.
 */
export type CappedCreate =
  | { readonly _tag: "Created" }
  | { readonly _tag: "Exists" }
  | { readonly _tag: "Full"; readonly scope: PendingScope; readonly freesAt: number }

/** The service tag of the approval store. */
export class ApprovalStore extends Context.Tag("@accord/core/ApprovalStore")<ApprovalStore, ApprovalStoreService>() {}
