/**
 * `Transactor` on SQL: the client's own transaction. Every SQL port runs its statements through the
 * same `SqlClient`, which finds the open transaction in the fiber's context, so port calls inside
 * `withTransaction` commit or roll back together.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StorageError } from "../../core/ports/StorageError.ts"
import { Transactor, type TransactorService } from "../../core/ports/Transactor.ts"
import { orStorageError } from "./SqlSupport.ts"

/**
 * The wrapped effect's own failure, carried through the transaction untouched so that only the
 * transaction's control statements (`BEGIN`, `COMMIT`, `ROLLBACK`) become a `StorageError`, even
 * when the effect's own error type includes `SqlError`.
 */
class EffectFailure<E> {
  constructor(readonly error: E) {}
}

export const make: Effect.Effect<TransactorService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sql
        .withTransaction(Effect.mapError(effect, (error) => new EffectFailure(error)))
        .pipe(
          Effect.catchAll(
            (failure): Effect.Effect<never, E | StorageError> =>
              failure instanceof EffectFailure
                ? Effect.fail(failure.error)
                : orStorageError("transaction")(Effect.fail(failure))
          )
        )
  })
)

export const layer: Layer.Layer<Transactor, never, SqlClient.SqlClient> = Layer.effect(Transactor, make)
