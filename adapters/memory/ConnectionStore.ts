/**
 * ConnectionStore in memory: connections, revisions and their audit trail in maps.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  type Connection,
  type ConnectionAuditEntry,
  type ConnectionCheck,
  type ConnectionRevision,
  ConnectionStore,
  type ConnectionStoreService
} from "../../core/ports/ConnectionStore.ts"
import { StorageError } from "../../core/ports/StorageError.ts"

interface MutableConnection {
  workspaceId: string
  connectionId: string
  createdAt: number
  revisions: Array<ConnectionRevision>
  lastCheck: ConnectionCheck | null
}

/** An empty `ConnectionStore` held in this process's memory. */
export const make = (): ConnectionStoreService => {
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

/** Provides an empty in-memory `ConnectionStore`. */
export const layerMemory: Layer.Layer<ConnectionStore> = Layer.sync(ConnectionStore, make)
