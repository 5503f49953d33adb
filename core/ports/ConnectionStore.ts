/**
 * The `ConnectionStore` port: one connector connection per workspace and its revisions
 * (spec "Connection configuration" and "Connection revision lifecycle").
 *
 * A revision is one exact endpoint-and-secret generation, numbered from 0. Registering creates a new
 * pending revision and supersedes an older pending one; a successful handshake activates exactly
 * the revision it tested, and only while that revision is still the newest pending one (a
 * compare-and-set), so a handshake for a superseded revision can never activate or overwrite
 * anything. Secrets are not here: they live sealed in the `SecretVault`.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "./StorageError.ts"

/**
 * - `pending`: registered, not yet proven by a handshake;
 * - `active`: the revision in use;
 * - `superseded`: a pending revision replaced by a newer registration before it was activated;
 * - `replaced`: a formerly active revision after a newer one was activated (its secrets stay
 *   available for completions of actions bound to it until it is retired);
 * - `retired`: its secrets are deleted.
 */
export type RevisionState = "pending" | "active" | "superseded" | "replaced" | "retired"

/**
 * One revision of a workspace's connector: its endpoint, state, and when it was created, activated
 * and retired.
 */
export interface ConnectionRevision {
  readonly revision: number
  readonly endpoint: string
  readonly state: RevisionState
  readonly createdAt: number
  readonly activatedAt: number | null
  readonly retiredAt: number | null
}

/** The outcome of one connection check of a revision, with its problem when it failed. */
export interface ConnectionCheck {
  readonly revision: number
  readonly at: number
  readonly outcome: "succeeded" | "failed"
  /**
   * A stable problem code when the check failed; after a successful check, why a payment capability
   * proof was refused, if it was.
   */
  readonly problem: string | null
}

/** A workspace's connector: its revisions, the active and pending one, and the last check. */
export interface Connection {
  readonly workspaceId: string
  readonly connectionId: string
  readonly createdAt: number
  /** Newest first. */
  readonly revisions: ReadonlyArray<ConnectionRevision>
  readonly lastCheck: ConnectionCheck | null
}

/**
 * What an audit entry records (spec "Connection revision lifecycle"): a registration, an activation,
 * the retirement of a revision's secrets once its actions left their reconciliation window, and the
 * retirement of an orphan ("a partial historical credential write").
 */
export type ConnectionAuditEvent = "registered" | "activated" | "retired" | "orphan_retired"

/**
 * One entry of a connection's append-only audit trail. Entries are never changed or deleted (the
 * SQL table refuses `UPDATE`, `DELETE` and `TRUNCATE`).
 */
export interface ConnectionAuditEntry {
  /** Increases with every entry across all connections; orders a connection's trail. */
  readonly seq: number
  readonly at: number
  readonly revision: number
  readonly event: ConnectionAuditEvent
  /** Bounded, secret-free JSON (secret names, hosts, times), never a secret or a full URL. */
  readonly detail: unknown
}

/** An audit entry to append to a connection: when, which revision, what happened. */
export interface NewConnectionAuditEntry {
  readonly at: number
  readonly revision: number
  readonly event: ConnectionAuditEvent
  readonly detail: unknown
}

/**
 * The connection port: register revisions, activate and retire them, record checks and audit
 * entries.
 */
export interface ConnectionStoreService {
  /**
   * Registers an endpoint as a new pending revision of the workspace's connection, creating the
   * connection (with `connectionId`) if the workspace has none; an older pending revision becomes
   * `superseded`. Returns the connection's id (the existing one if there was one) and the new revision.
   */
  readonly registerRevision: (options: {
    readonly workspaceId: string
    readonly connectionId: string
    readonly endpoint: string
    readonly now: number
  }) => Effect.Effect<{ readonly connectionId: string; readonly revision: number }, StorageError>
  /** The workspace's connection, if one was registered. */
  readonly get: (workspaceId: string) => Effect.Effect<Option.Option<Connection>, StorageError>
  /** The connection with this id, if any. */
  readonly getById: (connectionId: string) => Effect.Effect<Option.Option<Connection>, StorageError>
  /**
   * Activates `revision` if it is still the newest revision and pending; the previously active one
   * becomes `replaced`. `superseded` when it is not (nothing changes).
   */
  readonly activate: (options: {
    readonly connectionId: string
    readonly revision: number
    readonly now: number
  }) => Effect.Effect<"activated" | "superseded", StorageError>
  /**
   * Records a check as the connection's last check, unless the checked revision is no longer active
   * or pending (`false` then, nothing written): a delayed check of a superseded or replaced
   * revision must not overwrite a newer revision's result.
   */
  readonly recordCheck: (connectionId: string, check: ConnectionCheck) => Effect.Effect<boolean, StorageError>
  /** Marks a `replaced` or `superseded` revision `retired`; `false` if it is in another state. */
  readonly retire: (options: {
    readonly connectionId: string
    readonly revision: number
    readonly now: number
  }) => Effect.Effect<boolean, StorageError>
  /** Connections with an active or pending revision whose last check is older than `before` (or missing). */
  readonly dueForCheck: (before: number) => Effect.Effect<ReadonlyArray<Connection>, StorageError>
  /** Connections with at least one `replaced` or `superseded` revision (candidates for retirement). */
  readonly withRetirableRevisions: Effect.Effect<ReadonlyArray<Connection>, StorageError>
  /** Appends an entry to the connection's audit trail; fails for an unknown connection. */
  readonly appendAudit: (connectionId: string, entry: NewConnectionAuditEntry) => Effect.Effect<void, StorageError>
  /** The connection's audit trail, oldest first. */
  readonly audit: (connectionId: string) => Effect.Effect<ReadonlyArray<ConnectionAuditEntry>, StorageError>
}

/** The service tag of the connection store. */
export class ConnectionStore extends Context.Tag("@accord/core/ConnectionStore")<
  ConnectionStore,
  ConnectionStoreService
>() {}
