/**
 * The first migration: a key/value table for facts about the installation itself (schema
 * notes, bootstrap markers), so an empty database and a migrated one are told apart.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    Effect.asVoid(sql`CREATE TABLE accord_meta (
      key text PRIMARY KEY,
      value text NOT NULL
    )`)
)
