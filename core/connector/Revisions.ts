/**
 * Which revision of a connection plays which part (spec "Connection revision lifecycle"): at most
 * one revision is active (actions are bound to it and payment capability evidence must match it)
 * and at most one is pending (awaiting its first successful check).
 */
import type { Connection, ConnectionRevision } from "../ports/ConnectionStore.ts"

/**
 * The active revision of a connection, if it has one.
 */
export const activeRevision = (connection: Connection): ConnectionRevision | undefined =>
  connection.revisions.find((r) => r.state === "active")

/**
 * The pending revision of a connection, if it has one (at most one is pending).
 */
export const pendingRevision = (connection: Connection): ConnectionRevision | undefined =>
  connection.revisions.find((r) => r.state === "pending")

/**
 * The revision numbered `revision`, whatever its state.
 */
export const revisionNumbered = (connection: Connection, revision: number): ConnectionRevision | undefined =>
  connection.revisions.find((r) => r.revision === revision)
