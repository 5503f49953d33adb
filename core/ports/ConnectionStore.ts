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
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { StorageError } from "./StorageError.ts"

/**
 * - `pending`: registered, not yet proven by a handshake;
 * - `active`: the revision in use;
 * - `superseded`: a pending revision replaced by a newer registration before it was activated;
 * - `replaced`: a formerly active revision after a newer one was activated (its secrets stay
 *   available for completions of actions bound to it until it is retired);
 * - `retired`: its secrets are deleted.
 */
export type RevisionState = "pending" | "active" | "superseded" | "replaced" | "retired"

export interface ConnectionRevision {
  readonly revision: number
  readonly endpoint: string
  readonly state: RevisionState
  readonly createdAt: number
  readonly activatedAt: number | null
  readonly retiredAt: number | null
}

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

export interface NewConnectionAuditEntry {
  readonly at: number
  readonly revision: number
  readonly event: ConnectionAuditEvent
  readonly detail: unknown
}

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
  readonly get: (workspaceId: string) => Effect.Effect<Option.Option<Connection>, StorageError>
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

export class ConnectionStore extends Context.Tag("@accord/core/ConnectionStore")<
  ConnectionStore,
  ConnectionStoreService
>() {}

interface MutableConnection {
  workspaceId: string
  connectionId: string
  createdAt: number
  revisions: Array<ConnectionRevision>
  lastCheck: ConnectionCheck | null
}

export const makeMemory = (): ConnectionStoreService => {
  const byWorkspace = new Map<string, MutableConnection>()
  const byId = new Map<string, MutableConnection>()
  const trail: Array<ConnectionAuditEntry & { readonly connectionId: string }> = []
  const snapshot = (c: MutableConnection): Connection => ({
    ...c,
    revisions: [...c.revisions].sort((a, b) => b.revision - a.revision)
  })
  const update = (c: MutableConnection, revision: number, f: (r: ConnectionRevision) => ConnectionRevision) => {
    c.revisions = c.revisions.map((r) => (r.revision === revision ? f(r) : r))
  }
  return {
    registerRevision: ({ connectionId, endpoint, now, workspaceId }) =>
      Effect.sync(() => {
        let c = byWorkspace.get(workspaceId)
        if (c === undefined) {
          c = { workspaceId, connectionId, createdAt: now, revisions: [], lastCheck: null }
          byWorkspace.set(workspaceId, c)
          byId.set(connectionId, c)
        }
        const revision = c.revisions.reduce((max, r) => Math.max(max, r.revision + 1), 0)
        c.revisions = c.revisions.map((r) => (r.state === "pending" ? { ...r, state: "superseded" } : r))
        c.revisions.push({ revision, endpoint, state: "pending", createdAt: now, activatedAt: null, retiredAt: null })
        return { connectionId: c.connectionId, revision }
      }),
    get: (workspaceId) => Effect.sync(() => Option.map(Option.fromNullable(byWorkspace.get(workspaceId)), snapshot)),
    getById: (connectionId) => Effect.sync(() => Option.map(Option.fromNullable(byId.get(connectionId)), snapshot)),
    activate: ({ connectionId, now, revision }) =>
      Effect.sync(() => {
        const c = byId.get(connectionId)
        if (c === undefined) return "superseded"
        const newest = c.revisions.reduce((max, r) => Math.max(max, r.revision), -1)
        const target = c.revisions.find((r) => r.revision === revision)
        if (target === undefined || target.state !== "pending" || revision !== newest) return "superseded"
        c.revisions = c.revisions.map((r) => (r.state === "active" ? { ...r, state: "replaced" } : r))
        update(c, revision, (r) => ({ ...r, state: "active", activatedAt: now }))
        return "activated"
      }),
    recordCheck: (connectionId, check) =>
      Effect.sync(() => {
        const c = byId.get(connectionId)
        const target = c?.revisions.find((r) => r.revision === check.revision)
        if (c === undefined || target === undefined || (target.state !== "active" && target.state !== "pending")) {
          return false
        }
        c.lastCheck = check
        return true
      }),
    retire: ({ connectionId, now, revision }) =>
      Effect.sync(() => {
        const c = byId.get(connectionId)
        const target = c?.revisions.find((r) => r.revision === revision)
        if (c === undefined || target === undefined || (target.state !== "replaced" && target.state !== "superseded")) {
          return false
        }
        update(c, revision, (r) => ({ ...r, state: "retired", retiredAt: now }))
        return true
      }),
    dueForCheck: (before) =>
      Effect.sync(() =>
        [...byId.values()]
          .filter(
            (c) =>
              c.revisions.some((r) => r.state === "active" || r.state === "pending") &&
              (c.lastCheck === null || c.lastCheck.at < before)
          )
          .map(snapshot)
      ),
    withRetirableRevisions: Effect.sync(() =>
      [...byId.values()]
        .filter((c) => c.revisions.some((r) => r.state === "replaced" || r.state === "superseded"))
        .map(snapshot)
    ),
    appendAudit: (connectionId, entry) =>
      byId.has(connectionId)
        ? Effect.sync(() => void trail.push({ ...entry, connectionId, seq: trail.length + 1 }))
        : Effect.fail(new StorageError({ operation: "connection.appendAudit", message: "no such connection" })),
    audit: (connectionId) =>
      Effect.sync(() =>
        trail.filter((e) => e.connectionId === connectionId).map(({ connectionId: _, ...entry }) => entry)
      )
  }
}

export const layerMemory: Layer.Layer<ConnectionStore> = Layer.sync(ConnectionStore, makeMemory)
