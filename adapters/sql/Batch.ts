/**
 * Statement batching for hot store operations, on `ports/Batcher`: concurrent callers hand their
 * item over and wait; a worker runs ONE statement for whatever has queued up, then answers each
 * caller with its own result. Under load many callers share a round trip; alone, a caller's item
 * goes out at once.
 *
 * The SQL part is here: a caller inside a transaction is not batched, since its statement must run
 * on the transaction's connection (read-your-writes, rollback), so it runs alone there; and a batch
 * is split by default only on a deadlock. `rounds` and `inRounds` shape a batch for statements
 * that must not see one key twice.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Batcher from "../../core/ports/Batcher.ts"

export interface BatchOptions {
  /** The most items in one statement (default 256). */
  readonly maxBatch?: number
  /** Statements in flight at once (default 2). */
  readonly workers?: number
}

/**
 * Builds a batcher over `many`, which must answer one result per item, in the items' order. When
 * a batch fails with an error `splitOn` accepts (a deadlock between two batches by default; the
 * statement was rolled back), its items are run again one at a time through `one`, each answered
 * with its own result.
 */
export const makeBatcher = <A, B>(
  many: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, SqlError>,
  options?: BatchOptions & {
    readonly one?: (item: A) => Effect.Effect<B, SqlError>
    readonly splitOn?: (error: SqlError) => boolean
    /** What an idle worker woken by an item waits for before taking its batch (`Batcher.gatherNextTurn`). */
    readonly gather?: Effect.Effect<void>
  }
): Effect.Effect<(item: A) => Effect.Effect<B, SqlError>, never, Scope.Scope> =>
  Effect.map(
    Batcher.make(many, {
      maxBatch: options?.maxBatch ?? Batcher.defaultMaxBatch,
      workers: options?.workers ?? 2,
      splitOn: options?.splitOn ?? isDeadlock,
      ...(options?.one === undefined ? {} : { one: options.one }),
      ...(options?.gather === undefined ? {} : { gather: options.gather })
    }),
    (queued) => {
      const one = options?.one ?? ((item: A) => Effect.map(many([item]), (results) => results[0]!))
      return (item: A) =>
        inTransactionOr(
          () => one(item),
          () => queued(item)
        )
    }
  )

/**
 * `inTransaction()` when the calling fiber runs inside a `SqlClient` transaction, `outside()`
 * otherwise. It reads the fiber's context in one step: every batched statement asks, and
 * `serviceOption` and a `flatMap` take three.
 */
export const inTransactionOr = <A, E, R>(
  inTransaction: () => Effect.Effect<A, E, R>,
  outside: () => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) =>
    Option.isSome(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))
      ? inTransaction()
      : outside()
  )

const sqlState = (error: SqlError): unknown =>
  typeof error.cause === "object" && error.cause !== null
    ? (error.cause as { readonly code?: unknown }).code
    : undefined

/**
 * Whether a statement failed on a unique constraint (SQLSTATE 23505); `pg` and the PGlite client
 * both keep the code on the cause.
 */
export const isUniqueViolation = (error: SqlError): boolean => sqlState(error) === "23505"

/**
 * Whether a statement was chosen as a deadlock victim (SQLSTATE 40P01) and rolled back.
 */
export const isDeadlock = (error: SqlError): boolean => sqlState(error) === "40P01"

/**
 * Splits items into rounds in which no key repeats: each item goes into the round after the last
 * one holding any of its keys, so a statement that must treat each item separately (a conflict, a
 * version check) never sees one key twice, and items sharing a key are applied in their order.
 */
export const rounds = <A>(
  items: ReadonlyArray<A>,
  keys: (item: A) => ReadonlyArray<string>
): ReadonlyArray<ReadonlyArray<number>> => {
  const result: Array<Array<number>> = []
  const lastRound = new Map<string, number>()
  items.forEach((item, index) => {
    const itemKeys = keys(item)
    const round = itemKeys.reduce((latest, k) => Math.max(latest, (lastRound.get(k) ?? -1) + 1), 0)
    for (const k of itemKeys) lastRound.set(k, round)
    if (round === result.length) result.push([])
    result[round]!.push(index)
  })
  return result
}

/**
 * Runs `run` once per round of `items` (see `rounds`), and puts the results back in item order.
 */
export const inRounds = <A, B>(
  items: ReadonlyArray<A>,
  keys: (item: A) => ReadonlyArray<string>,
  run: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, SqlError>
): Effect.Effect<ReadonlyArray<B>, SqlError> =>
  Effect.gen(function* () {
    const results = new Array<B>(items.length)
    for (const round of rounds(items, keys)) {
      const answered = yield* run(round.map((i) => items[i]!))
      round.forEach((index, j) => {
        results[index] = answered[j]!
      })
    }
    return results
  })
