/**
 * What every SQL store shares: error mapping to the ports' `StorageError`, and reading the
 * representations the schema uses (int8 comes back as a string, D-rule "read int8 as strings").
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isNewer } from "../../core/ports/AccountProfileStore.ts"
import { StorageError } from "../../core/ports/StorageError.ts"

/**
 * A failed statement as `StorageError`, keeping the driver's message (PostgreSQL's messages name
 * constraints, not values; row values only appear in its `detail`, which is dropped).
 */
export const toStorageError = (operation: string, error: SqlError): StorageError =>
  new StorageError({ operation, message: error.message })

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
