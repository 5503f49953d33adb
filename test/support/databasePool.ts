/**
 * Migrated test databases handed out again instead of opened anew. Opening one costs most of a
 * second of CPU (a PGlite loaded from its archive; a PostgreSQL schema created and migrated),
 * hundreds of times a run. A pool keeps the databases its layers released: on release every table
 * but the migrations' is truncated and its identities restarted, in one transaction on one
 * connection (the append-only tables refuse TRUNCATE by trigger, so the transaction sets
 * `session_replication_role = replica`: a test database's reset is not an edit of its history).
 * A database whose schema a test changed (tables, columns, constraints, indexes, sequences differ
 * from the first one opened), or that a test closed or broke, is closed and never handed out
 * again. A database is held by one layer at a time: tests that run at once each get their own,
 * and a test sees no row another test wrote.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"

interface Pooled<I> {
  readonly context: Context.Context<I>
  readonly scope: Scope.CloseableScope
}

/**
 * What a database's schema is: its tables, columns, constraints, indexes and sequences, without
 * the schema's own name (PostgreSQL test databases are schemas of one database).
 */
const fingerprint = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ readonly shape: string }>`
      SELECT md5(
        coalesce((SELECT string_agg(table_name || '.' || column_name || ':' || data_type || ':' || is_nullable
            || ':' || coalesce(column_default, ''), ',' ORDER BY table_name, column_name)
          FROM information_schema.columns WHERE table_schema = current_schema()), '') ||
        coalesce((SELECT string_agg(replace(indexdef, ' ' || quote_ident(current_schema()) || '.', ' '), ',' ORDER BY indexname)
          FROM pg_indexes WHERE schemaname = current_schema()), '') ||
        coalesce((SELECT string_agg(conname || pg_get_constraintdef(oid), ',' ORDER BY conname)
          FROM pg_constraint WHERE connamespace = current_schema()::regnamespace), '') ||
        coalesce((SELECT string_agg(sequencename, ',' ORDER BY sequencename)
          FROM pg_sequences WHERE schemaname = current_schema()), '')
      ) AS shape`,
    (rows) => rows[0]!.shape
  )

/** Empties a released database; false when it can no longer be handed out. */
const reset = (sql: SqlClient.SqlClient, pristine: string) =>
  Effect.gen(function* () {
    const tables = yield* sql<{ readonly name: string }>`
      SELECT quote_ident(tablename) AS name FROM pg_tables
      WHERE schemaname = current_schema() AND tablename <> 'accord_migrations'`
    const sequences = yield* sql<{ readonly name: string }>`
      SELECT quote_ident(sequencename) AS name FROM pg_sequences WHERE schemaname = current_schema()`
    yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql.unsafe("SET LOCAL session_replication_role = replica")
        if (tables.length > 0) {
          yield* sql.unsafe(`TRUNCATE ${tables.map((table) => table.name).join(", ")} RESTART IDENTITY CASCADE`)
        }
        for (const sequence of sequences) yield* sql.unsafe(`ALTER SEQUENCE ${sequence.name} RESTART`)
      })
    )
    return (yield* fingerprint(sql)) === pristine
  }).pipe(Effect.catchAllCause(() => Effect.succeed(false)))

/**
 * A pool of the databases the layers `open` makes build (each migrated alike): `layer()` holds one until the
 * layer's release, opening one only when none is idle.
 */
export const make = <I, E>(
  open: () => Layer.Layer<I | SqlClient.SqlClient, E>
): (() => Layer.Layer<I | SqlClient.SqlClient, E>) => {
  const idle: Array<Pooled<I | SqlClient.SqlClient>> = []
  let pristine: string | undefined
  const openOne = Effect.gen(function* () {
    const scope = yield* Scope.make()
    // A new layer value per database: a layer built again within one build is shared, not rebuilt.
    const context = yield* Layer.buildWithScope(open(), scope).pipe(
      Effect.tapError(() => Scope.close(scope, Exit.void))
    )
    pristine ??= yield* Effect.orDie(fingerprint(Context.get(context, SqlClient.SqlClient)))
    return { context, scope }
  })
  const release = (pooled: Pooled<I | SqlClient.SqlClient>) =>
    Effect.flatMap(reset(Context.get(pooled.context, SqlClient.SqlClient), pristine!), (reusable) =>
      // A database that cannot be handed out again closes in the background: the holder's release
      // does not wait on it (a run's leftover PostgreSQL schemas are dropped at its end).
      reusable
        ? Effect.sync(() => void idle.push(pooled))
        : Effect.asVoid(Effect.forkDaemon(Scope.close(pooled.scope, Exit.void)))
    )
  const acquire = Effect.suspend(() => {
    const reused = idle.pop()
    return reused === undefined ? openOne : Effect.succeed(reused)
  })
  return () => Layer.scopedContext(Effect.map(Effect.acquireRelease(acquire, release), (pooled) => pooled.context))
}
