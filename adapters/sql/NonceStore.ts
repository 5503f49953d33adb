/**
 * `NonceStore` on SQL. The primary key `(scope, nonce)` makes a claim atomic across processes; an
 * expired entry is taken over in the same statement. Concurrent claims share one statement
 * (`Batch`): one `INSERT … SELECT FROM jsonb_to_recordset … ON CONFLICT DO UPDATE … WHERE expired`,
 * with a nonce that repeats within a batch claimed in a later round (where it conflicts). An idle
 * worker woken by a claim waits for the host's next turn before taking its batch
 * (`Batcher.gatherNextTurn`), so claims that arrive together share a statement.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as Statement from "@effect/sql/Statement"
import { type NonceClaim, NonceStore, type NonceStoreService } from "../../core/ports/NonceStore.ts"
import * as Batcher from "../../core/ports/Batcher.ts"
import { inRounds, makeBatcher } from "./Batch.ts"
import { json, orStorageError } from "./SqlSupport.ts"

/**
 * The retention sweep of used nonces: deletes up to `limit` entries whose retention ended by `now`
 * (each is kept `nonceRetentionMillis`, 10 minutes, from its claim: docs/decisions.md, "Nonce length
 * and retention"); the number deleted.
 * The condition is checked again on the row it deletes, so an entry a concurrent claim has just
 * taken over (its `expires_at` moved forward) is never deleted.
 */
export const sweepNonces = (sql: SqlClient.SqlClient, now: number, limit = 10_000): Effect.Effect<number, SqlError> =>
  sql`DELETE FROM accord_nonces
      WHERE expires_at <= ${now} AND (scope, nonce) IN (
        SELECT scope, nonce FROM accord_nonces WHERE expires_at <= ${now} LIMIT ${limit})
      RETURNING 1`.pipe(Effect.map((rows) => rows.length))

/**
 * The one statement that claims nonces, wherever a nonce is recorded (`NonceStore.claim`, and an
 * action's create in `ActionLedger`): inserts the `(scope, nonce, expires_at)` rows that `rows`
 * selects, and takes over an existing entry only if it expired by `now`, so a nonce still held is
 * never claimed twice; returns the `(scope, nonce)` of every row it claimed. The primary key makes
 * the claim atomic across processes.
 */
export const claimNonces = (
  sql: SqlClient.SqlClient,
  rows: Statement.Fragment,
  now: number
): Statement.Statement<{ readonly scope: string; readonly nonce: string }> =>
  sql<{ readonly scope: string; readonly nonce: string }>`
  INSERT INTO accord_nonces (scope, nonce, expires_at) ${rows}
  ON CONFLICT (scope, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
  WHERE accord_nonces.expires_at <= ${now}
  RETURNING scope, nonce`

/**
 * The `now` of a batch's claim statement: its earliest claim time, so an entry is taken over only
 * if it expired before every claim of the batch (0 when the batch claims none).
 */
export const earliestClaimTime = (claims: ReadonlyArray<NonceClaim | undefined>): number => {
  let now = Number.POSITIVE_INFINITY
  for (const claim of claims) if (claim !== undefined && claim.now < now) now = claim.now
  return Number.isFinite(now) ? now : 0
}

/**
 * Expired rows are swept on every 256th claim of this process (`sweepNonces`): the table holds at
 * most ten minutes of nonces plus what arrived since the last sweep.
 */
export const make: Effect.Effect<NonceStoreService, never, SqlClient.SqlClient | Scope.Scope> = Effect.gen(
  function* () {
    const sql = yield* SqlClient.SqlClient
    let claims = 0
    const sweep = (now: number) => ((++claims & 255) === 0 ? Effect.ignore(sweepNonces(sql, now)) : Effect.void)
    const claimAll = (batch: ReadonlyArray<NonceClaim>) =>
      Effect.gen(function* () {
        const now = earliestClaimTime(batch)
        const rows = yield* claimNonces(
          sql,
          sql`SELECT scope, nonce, expires_at
          FROM jsonb_to_recordset(${json(batch.map((c) => ({ scope: c.scope, nonce: c.nonce, expires_at: c.expiresAt })))}::jsonb)
            AS claim(scope text, nonce text, expires_at int8)`,
          now
        )
        const claimed = new Set(rows.map((r) => `${r.scope}\u0000${r.nonce}`))
        yield* sweep(now)
        return batch.map((c) => claimed.has(`${c.scope}\u0000${c.nonce}`))
      })
    const claim = yield* makeBatcher(
      (batch: ReadonlyArray<NonceClaim>) => inRounds(batch, (c) => [`${c.scope}\u0000${c.nonce}`], claimAll),
      {
        // Requests that arrive together share one statement: fewer, fuller statements cost the kit
        // and PostgreSQL less CPU per action.
        gather: Batcher.gatherNextTurn
      }
    )
    return { claim: (c) => claim(c).pipe(orStorageError("nonce.claim")) }
  }
)

export const layer: Layer.Layer<NonceStore, never, SqlClient.SqlClient> = Layer.scoped(NonceStore, make)
