/**
 * The index a lease walks: open items of one kind in due order (`Outbox.lease`: `kind IN (…)`,
 * `next_attempt_at <= now`, `ORDER BY next_attempt_at, created_at LIMIT n`). An ordered index scan
 * stops at the limit and skips the entries of items completed since the last vacuum (they are
 * marked dead the first time a scan passes them); the former index on `next_attempt_at` alone was
 * combined with the kind index in a bitmap scan that visited every such entry on every lease
 * (measured with `bench:dispatch`: about 1 ms per lease after a few thousand deliveries).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE INDEX accord_outbox_lease ON accord_outbox (kind, next_attempt_at, created_at) WHERE completed_at IS NULL`,
  `DROP INDEX accord_outbox_due`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
