/**
 * The connection audit trail (spec "Connection revision lifecycle": "a partial historical
 * credential write: treated as an orphan and retired with its own immutable audit evidence").
 * Append-only: a trigger refuses every `UPDATE`, `DELETE` and `TRUNCATE`, so evidence once written
 * stays as written. Times are epoch milliseconds in `bigint`, as in 0002.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

const statements: ReadonlyArray<string> = [
  `CREATE TABLE accord_connection_audit (
    seq bigserial PRIMARY KEY,
    connection_id text NOT NULL REFERENCES accord_connections (connection_id),
    revision integer NOT NULL,
    at bigint NOT NULL,
    event text NOT NULL,
    detail jsonb NOT NULL
  )`,
  `CREATE INDEX accord_connection_audit_connection ON accord_connection_audit (connection_id, seq)`,
  `CREATE FUNCTION accord_connection_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'accord_connection_audit is append-only';
    END
  $$`,
  `CREATE TRIGGER accord_connection_audit_no_change BEFORE UPDATE OR DELETE ON accord_connection_audit
    FOR EACH ROW EXECUTE FUNCTION accord_connection_audit_append_only()`,
  `CREATE TRIGGER accord_connection_audit_no_truncate BEFORE TRUNCATE ON accord_connection_audit
    FOR EACH STATEMENT EXECUTE FUNCTION accord_connection_audit_append_only()`,
  `CREATE INDEX accord_connection_revisions_retirable ON accord_connection_revisions (connection_id)
    WHERE state IN ('replaced', 'superseded')`
]

export const migration: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true })
)
