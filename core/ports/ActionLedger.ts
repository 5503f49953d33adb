/**
 * The `ActionLedger` port: action requests, their current state and an append-only history, on
 * either side of the connector (the service's dispatched actions; the customer kit's claimed
 * executions).
 *
 * The writes the protocol needs to be atomic are single operations here, so every adapter commits
 * them in one transaction: creating an action together with its first history entry and its outbox
 * item ("persist it and an outbox item in one transaction"; the customer's "persist the key under a
 * unique constraint in the same transaction that claims the work"), and a state change together
 * with its history entry, an optional outbox item and an optional completion claim (a
 * `completionId` is unique: a redelivery is recognised, a different body under the same id is a
 * conflict). Changes are compare-and-set on `version`. A caller's intake idempotency key is claimed in
 * the same write that creates the action (unique per workspace), so concurrent intakes under one key
 * create one action.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { NonceClaim } from "./NonceStore.ts"
import type { LeaseRequest, NewOutboxItem, OutboxItem } from "./Outbox.ts"
import type { StorageError } from "./StorageError.ts"
import type { Subject } from "./SuppressionStore.ts"

/** An action as stored: its request, state, version (for compare-and-set) and delivery facts. */
export interface ActionRecord {
  readonly actionRequestId: string
  readonly workspaceId: string
  readonly accountId: string
  readonly connectionId: string
  readonly revision: number
  readonly providerIdempotencyKey: string
  readonly state: string
  /** The request's immutable fields as JSON (never secrets). */
  readonly request: unknown
  /** The acknowledgement as sent or received, once there is one. */
  readonly acknowledgement: unknown
  /** A payment continuation sealed with the `Cipher` (never stored in clear). */
  readonly sealedContinuation: string | null
  readonly createdAt: number
  readonly updatedAt: number
  /** Incremented by every change; changes are compare-and-set on it. */
  readonly version: number
}

/** One transition of an action's history: when, what triggered it, from and to which state. */
export interface HistoryEntry {
  readonly seq: number
  readonly at: number
  readonly trigger: string
  readonly fromState: string | null
  readonly toState: string
  /** Bounded, display-safe detail (hashed references, codes), never raw provider references. */
  readonly detail: unknown
}

/**
 * A recorded completion: its `completionId`, the action and the hash of the body, so a redelivery
 * can be told from a conflict.
 */
export interface CompletionClaim {
  readonly completionId: string
  readonly actionRequestId: string
  /** Lowercase hex SHA-256 of the completion body. */
  readonly bodyHash: string
  readonly receivedAt: number
}

/**
 * What a compare-and-set transition did: applied, or refused because the record changed since it
 * was read.
 */
export type TransitionResult =
  | { readonly _tag: "Applied"; readonly record: ActionRecord }
  /** The record changed since `expectedVersion` was read (or does not exist). Nothing written. */
  | { readonly _tag: "Stale" }
  /** The completion id is already recorded with the same body: a redelivery. Nothing written. */
  | { readonly _tag: "DuplicateCompletion"; readonly claim: CompletionClaim }
  /** The completion id is already recorded with a different body. Nothing written. */
  | { readonly _tag: "ConflictingCompletion"; readonly claim: CompletionClaim }

/**
 * The result of a transition whose completion id is already claimed (`completionIdentity` said
 * `duplicate` or `conflict`).
 */
export const claimRefused = (identity: "duplicate" | "conflict", claim: CompletionClaim): TransitionResult =>
  identity === "duplicate" ? { _tag: "DuplicateCompletion", claim } : { _tag: "ConflictingCompletion", claim }

/**
 * A caller's `Idempotency-Key` for an intake, recorded with the action it created.
 */
export interface IntakeKeyClaim {
  readonly workspaceId: string
  readonly idempotencyKey: string
  /** Lowercase hex SHA-256 of the intake's canonical JSON. */
  readonly bodyHash: string
  readonly actionRequestId: string
  readonly createdAt: number
}

/**
 * An intake key to claim with a new action: a claim created before `liveSince` has expired and is
 * replaced; a live one is kept and nothing is written.
 */
export interface NewIntakeKey {
  readonly claim: IntakeKeyClaim
  readonly liveSince: number
}

/**
 * What creating an action did: created, or nothing because its id, idempotency key or outbox item
 * exists.
 */
export type CreateResult =
  | "created"
  /** The action request id, provider idempotency key or outbox item already exists. Nothing written. */
  | "duplicate"
  /** The intake key is held by a live claim (returned). Nothing written. */
  | { readonly _tag: "IntakeKeyTaken"; readonly claim: IntakeKeyClaim }
  /** The `nonce` given was already used in its scope (a replay). Nothing written. */
  | "replayed_nonce"

/** A history entry to append with a transition: when, the trigger and its detail. */
export interface NewHistoryEntry {
  readonly at: number
  readonly trigger: string
  readonly detail: unknown
}

/**
 * Work that keeps an action unfinished: an outbox item of `kind` that is not completed and whose
 * payload names the action (`{ actionRequestId }`), counted only while the action is in one of
 * `whileIn` when given.
 */
export interface OpenWork {
  readonly kind: string
  readonly whileIn?: ReadonlyArray<string>
}

/**
 * A leased outbox item and the action its payload names, read in the same step.
 */
export interface LeasedAction {
  readonly item: OutboxItem
  readonly action: Option.Option<ActionRecord>
}

/**
 * The lease an outbox item is created with: held by `owner` until `expiresAt`.
 */
export interface OutboxLease {
  readonly owner: string
  readonly expiresAt: number
}

/**
 * The action ledger port: create an action with its first outbox item, transition it by
 * compare-and-set, read and list it.
 */
export interface ActionLedgerService {
  /**
   * Creates the action with version 1, its first history entry (from `null` to `record.state`) and,
   * if given, an outbox item and an intake key claim, atomically. `duplicate` when the action
   * request id or the idempotency key already exists in the workspace (unique per workspace, so a
   * distributed database can enforce it; an adapter may also refuse another workspace's), `IntakeKeyTaken` when the intake key has a
   * live claim (nothing is written in either case). With `outboxLease`, the outbox item is created
   * already leased to its owner until `expiresAt` (as if `Outbox.lease` had just taken it): the
   * creator hands it to that worker in process (`DispatchSignal`'s handoff).
   *
   * With `nonce`, the message that asks for the action is proven fresh in the same write: the nonce
   * is recorded first, as `NonceStore.claim` records it and in the same nonce space (SQL: the same
   * table), and when it was already used nothing at all is written (`replayed_nonce`); otherwise
   * it stays recorded whether the action is `created` or a `duplicate`. Not combined with
   * `intakeKey` (a defect).
   */
  readonly create: (options: {
    readonly record: Omit<ActionRecord, "version" | "updatedAt">
    readonly history: NewHistoryEntry
    readonly outbox?: NewOutboxItem
    readonly outboxLease?: OutboxLease
    readonly intakeKey?: NewIntakeKey
    readonly nonce?: NonceClaim
  }) => Effect.Effect<CreateResult, StorageError>
  /** The live claim of an intake key: created at or after `liveSince`. */
  readonly findIntakeKey: (options: {
    readonly workspaceId: string
    readonly idempotencyKey: string
    readonly liveSince: number
  }) => Effect.Effect<Option.Option<IntakeKeyClaim>, StorageError>
  /** The action with this id, if any. */
  readonly get: (actionRequestId: string) => Effect.Effect<Option.Option<ActionRecord>, StorageError>
  /** The action with this provider idempotency key, if any. */
  readonly getByIdempotencyKey: (key: string) => Effect.Effect<Option.Option<ActionRecord>, StorageError>
  /** Applies a state change atomically with its history entry, outbox item and completion claim. */
  readonly transition: (options: {
    readonly actionRequestId: string
    readonly expectedVersion: number
    readonly toState: string
    readonly at: number
    readonly history: NewHistoryEntry
    readonly acknowledgement?: unknown
    readonly sealedContinuation?: string
    readonly outbox?: NewOutboxItem
    readonly completion?: CompletionClaim
    /**
     * A leased outbox item this change finishes (a delivery answered): marked done in the same
     * write, if `owner` still holds its lease. Nothing happens to it when the change is not applied.
     */
    readonly completeOutboxItem?: { readonly id: string; readonly owner: string }
  }) => Effect.Effect<TransitionResult, StorageError>
  /**
   * Leases due outbox items (as `Outbox.lease`) and reads, with them, the action each one's payload
   * names (`actionRequestId`): a worker gets its work and its action in one step.
   */
  readonly leaseWithActions: (request: LeaseRequest) => Effect.Effect<ReadonlyArray<LeasedAction>, StorageError>
  /**
   * An endpoint answers again: the outbox items of `kinds` waiting for a later attempt (not
   * completed, next attempt after `now`, no live lease) whose last attempt failed with one of
   * `errors`, for actions bound to this connection revision, become due at `now`. Their attempt
   * count is kept, so a later failure still backs off further. Answers how many were made due.
   */
  readonly expediteRetries: (options: ExpediteRetries) => Effect.Effect<number, StorageError>
  /** Oldest first. */
  readonly history: (actionRequestId: string) => Effect.Effect<ReadonlyArray<HistoryEntry>, StorageError>
  /** The completion recorded under this `completionId`, if any. */
  readonly findCompletion: (completionId: string) => Effect.Effect<Option.Option<CompletionClaim>, StorageError>
  /** The latest `updatedAt` of actions bound to a connection revision (for retiring its secrets). */
  readonly lastActivityOnRevision: (
    connectionId: string,
    revision: number
  ) => Effect.Effect<Option.Option<number>, StorageError>
  /** How many actions bound to a connection revision have open `work` (for retiring its secrets). */
  readonly unfinishedOnRevision: (options: {
    readonly connectionId: string
    readonly revision: number
    readonly work: ReadonlyArray<OpenWork>
  }) => Effect.Effect<number, StorageError>
  /**
   * How many actions of one catalog action (`request.action.id`) an account has, created at or
   * after `since` and, with `before`, ordered before that action (by `createdAt`, then id), not
   * counting those that never ran (`blocked`, `rejected`): the frequency policy's count.
   */
  readonly countForFrequency: (options: FrequencyQuery) => Effect.Effect<number, StorageError>
  /**
   * One page of a workspace's actions, newest first (by `createdAt`, then id, both descending),
   * optionally of one state and one account; `after` continues past the last action of the page
   * before (keyset paging).
   */
  readonly list: (query: ActionListQuery) => Effect.Effect<ReadonlyArray<ActionRecord>, StorageError>
  /**
   * Redacts the subject's actions (see `RedactSubject`), all or none: when one of them is in one of
   * `openStates`, nothing changes and the answer is `Open` with how many are.
   */
  readonly redactSubject: (options: RedactSubject) => Effect.Effect<RedactResult, StorageError>
}

/**
 * The actions of a subject to redact, keeping each one's id, state, times, connection revision,
 * idempotency key, acknowledgement and history (the connector's audit trail). An account's actions
 * (`accountId`): the account id, in the row and in the request, becomes `pseudonym`; the actor's
 * `subjectId` becomes {@link erasedField}; the operation keeps only its `family`; a sealed
 * continuation is removed; the caller's intake keys that created them are removed. A user's actions
 * (`request.actor.subjectId`, in any account): that `subjectId` becomes `pseudonym`.
 */
export interface RedactSubject {
  readonly workspaceId: string
  readonly subject: Subject
  /** What replaces the subject's id: `Erasure.pseudonym` of it. */
  readonly pseudonym: string
  /** States of an action still in flight: such an action is never redacted. */
  readonly openStates: ReadonlyArray<string>
}

/** What `redactSubject` did: redacted this many actions, or nothing because this many are open. */
export type RedactResult =
  | { readonly _tag: "Redacted"; readonly count: number }
  | { readonly _tag: "Open"; readonly count: number }

/** The value of a personal field an erasure removed. */
export const erasedField = "erased"

/** The actor's `subjectId` in a stored request, if it has one. */
export const actorSubjectOf = (request: unknown): string | undefined => {
  const subjectId = (request as { readonly actor?: { readonly subjectId?: unknown } } | null)?.actor?.subjectId
  return typeof subjectId === "string" ? subjectId : undefined
}

/**
 * An action's stored request as `redactSubject` leaves it (`RedactSubject`): the one rule every
 * adapter applies (the SQL one by the same JSON edits in its statement).
 */
export const redactedRequest = (request: unknown, subject: Subject, pseudonym: string): unknown => {
  type Stored = {
    readonly actor?: Record<string, unknown>
    readonly action?: { readonly operation?: { readonly family?: unknown } }
  }
  const stored = (request ?? {}) as Stored & Record<string, unknown>
  if (subject.kind === "user") return { ...stored, actor: { ...stored.actor, subjectId: pseudonym } }
  const action = stored.action
  return {
    ...stored,
    accountId: pseudonym,
    ...(stored.actor === undefined ? {} : { actor: { ...stored.actor, subjectId: erasedField } }),
    ...(action?.operation === undefined
      ? {}
      : { action: { ...action, operation: { family: action.operation.family } } })
  }
}

/**
 * Which connection revision's waiting deliveries to make due now (after a successful connection
 * check).
 */
export interface ExpediteRetries {
  readonly connectionId: string
  readonly revision: number
  readonly kinds: ReadonlyArray<string>
  readonly errors: ReadonlyArray<string>
  readonly now: number
  /** At most this many, those due soonest first (oldest first among equals); all when absent. */
  readonly limit?: number
}

/** One page of a workspace's actions, optionally filtered by state and account. */
export interface ActionListQuery {
  readonly workspaceId: string
  readonly limit: number
  readonly state?: string
  readonly accountId?: string
  readonly after?: { readonly createdAt: number; readonly actionRequestId: string }
}

/**
 * Whether `a` comes before `b` newest first (by `createdAt`, then id, both descending): the order of
 * every paged list of records with a creation time and an id.
 */
export const newestFirst = (
  a: { readonly createdAt: number; readonly id: string },
  b: { readonly createdAt: number; readonly id: string }
): number => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/**
 * Which of an account's actions count toward a catalog action's frequency limit, over which window.
 */
export interface FrequencyQuery {
  readonly workspaceId: string
  readonly accountId: string
  readonly actionId: string
  readonly since: number
  readonly before?: { readonly createdAt: number; readonly actionRequestId: string }
}

/**
 * States of actions the frequency policy does not count: they never ran at the customer.
 */
export const notCountedForFrequency: ReadonlyArray<string> = ["blocked", "rejected"]

/** The service tag of the action ledger. */
export class ActionLedger extends Context.Tag("@accord/core/ActionLedger")<ActionLedger, ActionLedgerService>() {}
