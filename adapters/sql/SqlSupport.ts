/**
 * What every SQL store shares: error mapping to the ports' `StorageError`, and reading the
 * representations the schema uses (int8 comes back as a string, D-rule "read int8 as strings").
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import { isNewer } from "../../core/ports/AccountProfileStore.ts"
import { StorageError, type StorageFault, storageFaults } from "../../core/ports/StorageError.ts"
import * as Metrics from "../../core/telemetry/Metrics.ts"

/**
 * The storage bound (`ACCORD_STORAGE_TIMEOUT`) unless configured: the longest one wait for the
 * database, long enough for a busy database, short enough for a client to be told to retry.
 */
export const defaultStorageTimeoutMillis = 5_000

/**
 * The most connections one process opens to PostgreSQL (`ACCORD_DATABASE_POOL_SIZE`) unless
 * configured: `pg`'s own default, which keeps ten processes within PostgreSQL's default
 * `max_connections` of 100.
 */
export const defaultPoolSize = 10

/**
 * The statement that lifts the storage bound for the rest of the transaction it runs in:
 * PostgreSQL's statement timeout, and the PostgreSQL client's deadline on an answer (`Database`'s
 * client recognises this exact text). For background work whose statements may take longer than
 * any request may wait: the migrations (and their wait for another process's), and the retention
 * sweep's move of a month's events out of the default partition.
 */
export const unboundedTransaction = "SET LOCAL statement_timeout = 0"

/**
 * What the driver said, as far as it may be logged: its code (a SQLSTATE, or a system code such
 * as `ECONNREFUSED`) and its own message, looked up through the wrappers' `cause` chain (the SQL
 * client's "Failed to acquire connection" says nothing about why). PostgreSQL's messages name
 * constraints, not values, except a data exception's (class 22: "invalid input syntax for type
 * integer: …" quotes the value), which is replaced by its class; row values only appear in a
 * `detail`, which is never read.
 */
export interface DriverReason {
  readonly code: string | undefined
  readonly message: string
}

/**
 * The driver's code and message found through an error's `cause` chain, for fault classification
 * and logs.
 */
export const driverReason = (error: unknown): DriverReason => {
  let outer: string | undefined
  let timedOut: string | undefined
  let current: unknown = error
  for (let depth = 0; depth < 8 && current !== null && current !== undefined; depth++) {
    const code = (current as { readonly code?: unknown }).code
    const message = current instanceof Error ? current.message : undefined
    if (typeof code === "string" && code !== "") {
      return { code, message: code.startsWith("22") ? "data exception" : oneLine(message || code) }
    }
    if (message !== undefined) outer = message
    // A timer that gave up closed the connection: what it closed says only "terminated".
    if (message !== undefined && timedOut === undefined && timeoutMessages.test(message)) timedOut = message
    const cause = (current as { readonly cause?: unknown }).cause
    if (cause === current) break
    current = cause
  }
  return { code: undefined, message: oneLine(timedOut ?? outer ?? String(error)) }
}

const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim().slice(0, 300)

/** SQLSTATEs and system codes of a connection that could not be made or was lost. */
const connectionCodes = new Set([
  "57P01", // admin_shutdown: the backend was terminated
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up or shutting down
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN"
])

/** Messages of `pg` and `pg-pool` for the same, which carry no code. */
const connectionMessages =
  /connection terminated|not queryable|connection error|client was closed|cannot use a pool after calling end|connection ended|ended unexpectedly/i
const timeoutMessages = /timeout exceeded when trying to connect|connection timeout|query read timeout|timed out/i
/** PostgreSQL's message for a row outside its partition's bounds (SQLSTATE 23514). */
const partitionConstraintMessage = /violates partition constraint/

/**
 * The kind of a driver's fault (`StorageFault`), from its code, else its message.
 */
export const faultKind = (reason: DriverReason): StorageFault => {
  const code = reason.code
  if (code !== undefined) {
    if (code.startsWith("08") || connectionCodes.has(code)) return "connection"
    if (code === "57014" || code === "55P03" || code === "25P03") return "timeout"
    if (code === "40001" || code === "40P01") return "conflict"
    // A row routed to a partition whose bounds a concurrent attach changed (the retention sweep
    // moving a month out of the default partition): the same statement run again routes it anew.
    if (code === "23514" && partitionConstraintMessage.test(reason.message)) return "conflict"
    if (code.startsWith("53")) return "overloaded"
    if (code.startsWith("22") || code.startsWith("23")) return "refused"
  }
  if (timeoutMessages.test(reason.message)) return "timeout"
  if (connectionMessages.test(reason.message)) return "connection"
  return "other"
}

/**
 * A failed statement (or a failed connection) as `StorageError`, with the driver's reason and its
 * kind; counted in `accord_storage_faults_total` by kind, once, here.
 */
export const toStorageError = (operation: string, error: unknown): StorageError => {
  const reason = driverReason(error)
  const fault = faultKind(reason)
  Metrics.unsafeCount(Metrics.storageFaults, "cause", fault)
  return new StorageError({
    operation,
    message: reason.message,
    fault,
    ...(reason.code === undefined ? {} : { code: reason.code })
  })
}

/**
 * Records zero for every fault kind, so `/metrics` lists the whole fixed label set of
 * `accord_storage_faults_total` before the first fault.
 */
export const preregisterFaults: Effect.Effect<void> = Effect.forEach(
  storageFaults,
  (fault) => Metric.incrementBy(Metric.tagged(Metrics.storageFaults, "cause", fault), 0),
  { discard: true }
)

/**
 * Maps a failed statement to `StorageError` ({@link toStorageError}).
 */
export const orStorageError =
  (operation: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError, R>): Effect.Effect<A, StorageError, R> =>
    Effect.mapError(effect, (error) => toStorageError(operation, error))

/**
 * An int8 (or int4) column as a number; epoch milliseconds fit exactly.
 */
export const num = (value: unknown): number => (typeof value === "number" ? value : Number(value))

/**
 * A nullable int8 column.
 */
export const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : num(value))

/**
 * A JSON value as a `jsonb` parameter: passed as `JSON.stringify(x)` with `::jsonb`, the one form
 * both PostgreSQL and PGlite read alike.
 */
export const json = (value: unknown): string => JSON.stringify(value ?? null)

/**
 * A `COPY … FROM STDIN` statement. `COPY` takes no parameters, so both SQL clients read such a
 * statement given one value as a copy whose data is that value (`COPY`'s text format): the `pg`
 * client through `pg-copy-streams`, PGlite as a copy from its `/dev/blob`.
 */
export const copyFromStdin = /^COPY\s[^;]*\sFROM\s+STDIN$/i

/**
 * A list of text keys as one array expression for `column = ANY(…)`: one statement text whatever
 * the number of keys (`sql.in` writes one placeholder per key, so every batch size would be a new
 * prepared statement), and an index lookup however many keys the planner assumes.
 */
export const anyOf = (sql: SqlClient.SqlClient, keys: ReadonlyArray<string>): Statement.Fragment =>
  sql`ARRAY(SELECT jsonb_array_elements_text(${json(keys.flatMap(storableKey))}::jsonb))`

/**
 * A key as PostgreSQL text can hold it, or nothing when it cannot match any stored key: a NUL is
 * never stored, and an unpaired surrogate is written as U+FFFD, as the driver encodes a text
 * parameter. `jsonb` refuses both, so one such key (from an unauthenticated request, say) would
 * otherwise fail the lookups of every caller sharing its statement.
 */
const storableKey = (key: string): ReadonlyArray<string> =>
  key.includes("\u0000")
    ? []
    : [key.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD")]

/**
 * The newest item per key (by `AccountProfileStore.isNewer`), in key order: one statement may not
 * update a row twice, and writers that take row locks in the same order cannot deadlock.
 */
export const newestInKeyOrder = <A extends { readonly observedAt: number; readonly sourceEventId: string }>(
  items: ReadonlyArray<A>,
  keyOf: (item: A) => string
): ReadonlyArray<A> => {
  const newest = new Map<string, A>()
  for (const item of items) {
    const key = keyOf(item)
    if (isNewer(item, newest.get(key))) newest.set(key, item)
  }
  return [...newest.keys()].sort().map((key) => newest.get(key)!)
}

/**
 * The first row of a result, mapped, if there is one: a lookup by key.
 */
export const firstRow =
  <R, A>(map: (row: R) => A) =>
  (rows: ReadonlyArray<R>): Option.Option<A> =>
    Option.map(Option.fromNullable(rows[0]), map)
