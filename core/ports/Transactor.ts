/**
 * The `Transactor` port: runs several storage port operations as one unit. On SQL every port runs on
 * the same `SqlClient`, whose transactions follow the fiber, so wrapping port calls commits them
 * together; memory operations are synchronous steps and need no wrapper.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { StorageError } from "./StorageError.ts"

/**
 * Runs an effect in one storage transaction: every store write inside commits or rolls back
 * together.
 */
export interface TransactorService {
  /** Runs `effect` in one transaction; a failure rolls back every write inside it. */
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
}

/** The service tag of the storage transaction boundary. */
export class Transactor extends Context.Tag("@accord/core/Transactor")<Transactor, TransactorService>() {}
