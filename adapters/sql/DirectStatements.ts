/**
 * One statement run straight on the `pg` pool, outside any transaction, answered through a
 * callback with its rows or the driver's error. PostgreSQL only (`Database.layerPg` provides it;
 * PGlite does not). For the ingest route's batch statement, which runs thousands of times a second
 * on its own: measured under `bench:ingest`'s load, the server's CPU per event fell by about 8 %
 * against the same statement through `SqlClient` (docs/performance.md). The statement is prepared by
 * name like every other (`Database`'s `PreparingClient`); it has no `sql.execute` span.
 */
import { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { inTransactionOr } from "./Batch.ts"

/**
 * Runs one compiled statement straight on the `pg` pool, skipping the `SqlClient`'s per-statement
 * work, for the hottest ingest statement.
 */
export interface DirectStatementsService {
  /** Runs one compiled statement with its parameters on the pool and answers its rows. */
  readonly run: (
    text: string,
    values: ReadonlyArray<unknown>,
    done: (error: unknown, rows: ReadonlyArray<Record<string, unknown>>) => void
  ) => void
}

/** The service tag of the direct statement path; provided by `Database.layerPg` only. */
export class DirectStatements extends Context.Tag("@accord/adapters/sql/DirectStatements")<
  DirectStatements,
  DirectStatementsService
>() {}

/**
 * The `SqlError` a statement run here fails with: the driver's error as its cause, the message of
 * `@effect/sql-pg`'s own.
 */
export const executeFailed = (cause: unknown): SqlError =>
  new SqlError({ cause, message: "Failed to execute statement" })

/**
 * Runs a statement: straight on the pool when `DirectStatements` is provided and the caller is in
 * no transaction; otherwise as the statement itself (through the `SqlClient`, on the transaction's
 * connection when there is one). Same rows, same `SqlError` on failure.
 */
export type Run = <A extends object>(statement: Statement.Statement<A>) => Effect.Effect<ReadonlyArray<A>, SqlError>

/**
 * The {@link Run} of the current context (read once, when a store is built).
 */
export const makeRun: Effect.Effect<Run> = Effect.map(Effect.serviceOption(DirectStatements), (found) => {
  if (Option.isNone(found)) return (statement) => statement
  const direct = found.value
  return <A extends object>(statement: Statement.Statement<A>) =>
    inTransactionOr(
      () => statement,
      () =>
        Effect.async<ReadonlyArray<A>, SqlError>((resume) => {
          const [text, params] = statement.compile()
          direct.run(text, params, (cause, rows) =>
            resume(cause === undefined ? Effect.succeed(rows as ReadonlyArray<A>) : Effect.fail(executeFailed(cause)))
          )
        })
    )
})
