/**
 * The one error every storage port may fail with: the store could not be read or written.
 * Carries no statement parameters or row values (no raw values in errors).
 */
import * as Schema from "effect/Schema"

/**
 * What kind of fault a storage failure was, as the adapter that met it classified it:
 * `connection` (the connection could not be made or was lost), `timeout` (a wait for a connection,
 * a lock or a statement ran out), `conflict` (a serialization failure or deadlock: the same work
 * may succeed again), `overloaded` (the database refuses more clients or work for now), `refused`
 * (the database refuses this statement's data, e.g. a constraint) and `other`. A fixed set: it is
 * a metric's label (`accord_storage_faults_total`).
 */
export const StorageFault = Schema.Literal("connection", "timeout", "conflict", "overloaded", "refused", "other")
export type StorageFault = typeof StorageFault.Type

/** Every fault kind, in a fixed order. */
export const storageFaults: ReadonlyArray<StorageFault> = StorageFault.literals

/**
 * A storage fault (connection, timeout, conflict, …) with the operation it hit and the driver's
 * code; answered as 503 with `Retry-After`.
 */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  operation: Schema.String,
  message: Schema.String,
  /** The fault's kind; absent where the store cannot tell (counts as `other`). */
  fault: Schema.optional(StorageFault),
  /** The driver's code (a SQLSTATE such as `57014`, or a system code such as `ECONNREFUSED`). */
  code: Schema.optional(Schema.String)
}) {}

/** The fault's kind, `other` when the store did not say. */
export const faultOf = (error: StorageError): StorageFault => error.fault ?? "other"

/**
 * Whether the fault is the database's state rather than the work's own data: the same work may
 * succeed later unchanged (a lost connection, a timeout, a conflict, an overloaded database).
 */
export const isTransient = (error: StorageError): boolean => {
  const fault = faultOf(error)
  return fault === "connection" || fault === "timeout" || fault === "conflict" || fault === "overloaded"
}

/**
 * Whether running the same work again at once is likely to get past the fault: a lost connection
 * (the pool opens a fresh one) or a serialization conflict (the other transaction has moved on).
 * A timeout or an overloaded database is not: another attempt would wait as long again.
 */
export const isRetryableAtOnce = (error: StorageError): boolean => {
  const fault = faultOf(error)
  return fault === "connection" || fault === "conflict"
}
