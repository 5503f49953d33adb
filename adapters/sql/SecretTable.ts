/**
 * The sealed-secret table behind the `SecretVault` on SQL: only ciphertext, in its own table,
 * never in the connector row (docs/decisions.md, "Secret handling").
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import * as SecretVault from "../../core/ports/SecretVault.ts"
import { firstRow, orStorageError } from "./SqlSupport.ts"

export const make: Effect.Effect<SecretVault.SealedSecretTable, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    put: (ref, sealed, now) =>
      sql`INSERT INTO accord_secrets (ref, sealed, created_at) VALUES (${ref}, ${sealed}, ${now})
          ON CONFLICT (ref) DO UPDATE SET sealed = EXCLUDED.sealed, created_at = EXCLUDED.created_at`.pipe(
        Effect.asVoid,
        orStorageError("secret.put")
      ),
    get: (ref) =>
      sql<{ sealed: string }>`SELECT sealed FROM accord_secrets WHERE ref = ${ref}`.pipe(
        Effect.map(firstRow((row) => row.sealed)),
        orStorageError("secret.get")
      ),
    delete: (ref) =>
      sql`DELETE FROM accord_secrets WHERE ref = ${ref} RETURNING ref`.pipe(
        Effect.map((rows) => rows.length === 1),
        orStorageError("secret.delete")
      )
  })
)

export const layer: Layer.Layer<SecretVault.SecretVault, never, SqlClient.SqlClient | Cipher> = Layer.effect(
  SecretVault.SecretVault,
  Effect.flatMap(make, SecretVault.make)
)
