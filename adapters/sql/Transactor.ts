/**
 * `Transactor` on SQL: the client's own transaction. Every SQL port runs its statements through the
 * same `SqlClient`, which finds the open transaction in the fiber's context, so port calls inside
 * `withTransaction` commit or roll back together.
 *
 * This is the one transaction boundary, so it is where every fault of the transaction itself
 * becomes a `StorageError`: a failed `BEGIN`, and a failed `COMMIT` or `ROLLBACK`, which the SQL
 * client raises as a defect (it runs both under `Effect.orDie`), typically because the connection
 * died mid-transaction. Such a connection is not reused: the client hands a connection that
 * reported an error back to the pool with that error, and the pool destroys it (and never reuses
 * one that is no longer queryable, one whose statement failed with a connection fault, or one
 * with a statement unanswered: `Database`'s pool). No wait inside a transaction outlasts the
 * storage bound: a statement unanswered by then has its connection destroyed (`Database`'s
 * bounded client), which fails the transaction: it commits only if the database had already
 * received its `COMMIT`, and its caller, answered 503, sends the same request again.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { StorageError } from "../../core/ports/StorageError.ts"
import { Transactor, type TransactorService } from "../../core/ports/Transactor.ts"
import { toStorageError } from "./SqlSupport.ts"

/**
 * The wrapped effect's own failure, carried through the transaction untouched so that only the
 * transaction's control statements (`BEGIN`, `COMMIT`, `ROLLBACK`) become a `StorageError`, even
 * when the effect's own error type includes `SqlError`.
 */
class EffectFailure<E> {
  constructor(readonly error: E) {}
}

/** A `SqlError` the client raised as a defect (its `COMMIT` or `ROLLBACK` failed). */
const sqlDefect = (cause: Cause.Cause<unknown>): Option.Option<SqlError> =>
  Cause.find(cause, (reason) =>
    reason._tag === "Die" && reason.defect instanceof SqlError ? Option.some(reason.defect) : Option.none()
  )

/**
 * `sql.withTransaction`, the one way a SQL store opens a transaction: the same, except that a
 * failed `COMMIT` or `ROLLBACK` fails with its `SqlError` instead of dying, so the store maps it to
 * a `StorageError` like any failed statement. When the effect itself failed, its failure is the
 * outcome (a `ROLLBACK` that failed after it changes nothing: nothing was committed).
 * Interruptions and any other defect pass unchanged.
 */
export const sqlTransaction = <A, E, R>(
  sql: SqlClient.SqlClient,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError, R> =>
  sql.withTransaction(effect).pipe(
    Effect.catchAllCause((cause) => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) return Effect.fail(failure.value)
      const defect = sqlDefect(cause)
      return Option.isSome(defect) ? Effect.fail(defect.value) : Effect.failCause(cause)
    })
  )

export const make: Effect.Effect<TransactorService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sqlTransaction(
        sql,
        Effect.mapError(effect, (error) => new EffectFailure(error))
      ).pipe(
        Effect.catchAll(
          (failure): Effect.Effect<never, E | StorageError> =>
            failure instanceof EffectFailure
              ? Effect.fail(failure.error as E)
              : Effect.fail(toStorageError("transaction", failure))
        )
      )
  })
)

export const layer: Layer.Layer<Transactor, never, SqlClient.SqlClient> = Layer.effect(Transactor, make)
