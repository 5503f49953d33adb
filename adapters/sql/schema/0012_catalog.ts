/**
 * Published catalog versions: append-only, one row per `(workspace_id, version)`;
 * `published_version_id` is the UUID an action's `binding.publishedVersionId` names. The primary key
 * makes two concurrent publishes of one version number impossible (the loser retries with the next).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_catalog_versions (
    workspace_id text NOT NULL,
    version integer NOT NULL,
    published_version_id text NOT NULL,
    published_at bigint NOT NULL,
    published_by text NOT NULL,
    document jsonb NOT NULL,
    PRIMARY KEY (workspace_id, version),
    UNIQUE (workspace_id, published_version_id)
  )`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
