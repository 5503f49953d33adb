/**
 * `NonceStore` on SQL: one upsert per claim. The primary key `(scope, nonce)` makes the claim atomic
 * across processes; an expired entry is taken over in the same statement.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { NonceStore, type NonceStoreService } from "../../core/NonceStore.ts"
import { orStorageError } from "./SqlSupport.ts"

/**
 * Expired rows are deleted on every 256th claim of this process.
 *
 * @since 0.1.0
 */
export const make: Effect.Effect<NonceStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => {
    let claims = 0
    const sweep = (now: number) =>
      (++claims & 255) === 0 ? Effect.ignore(sql`DELETE FROM accord_nonces WHERE expires_at <= ${now}`) : Effect.void
    return {
      claim: ({ expiresAt, nonce, now, scope }) =>
        sql<{ claimed: number }>`
          INSERT INTO accord_nonces (scope, nonce, expires_at) VALUES (${scope}, ${nonce}, ${expiresAt})
          ON CONFLICT (scope, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
          WHERE accord_nonces.expires_at <= ${now}
          RETURNING 1 AS claimed`.pipe(
          Effect.map((rows) => rows.length === 1),
          Effect.tap(() => sweep(now)),
          orStorageError("nonce.claim")
        )
    }
  }
)

/**
 * @since 0.1.0
 */
export const layer: Layer.Layer<NonceStore, never, SqlClient.SqlClient> = Layer.effect(NonceStore, make)

