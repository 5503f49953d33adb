/**
 * An `@effect/sql` `SqlClient` over embedded PGlite, so the one SQL implementation in
 * `adapters/sql` runs unchanged on PostgreSQL (`@effect/sql-pg`) and on the embedded default.
 *
 * PGlite is a single PostgreSQL session. Two fibers sharing it would share one transaction:
 * a statement from fiber B issued while fiber A has `BEGIN` open would commit or roll back with
 * A. A one-permit semaphore therefore guards the session: a plain statement holds the permit
 * while it runs; a transaction takes it at `BEGIN` and keeps it until `COMMIT`/`ROLLBACK`.
 * Statements inside the transaction run on the transaction connection (which `Client.make`
 * finds in the fiber's context) and never take the permit again.
 *
 * Consequence: inside `withTransaction`, never wait for another fiber that itself needs the
 * database outside this transaction (a queue consumer, a daemon); it would wait forever.
 *
 * Durability. PGlite's own defaults start PostgreSQL with `fsync` off, and its Node filesystem
 * (Emscripten's NODEFS) implements no `fsync` at all: a commit reaches the operating system's page
 * cache, so it survives the process being killed but not the machine losing power. On a data
 * directory the default here, `durability: "full"`, starts PostgreSQL with `fsync` on and
 * `wal_sync_method=fsync` (Emscripten's `fdatasync` is a no-op, its `fsync` calls the file
 * system's) and gives NODEFS an `fsync` that calls `fs.fsyncSync`: a commit returns only once its
 * WAL is on disk, as on PostgreSQL. `durability: "relaxed"` keeps PGlite's defaults, faster and not
 * power-loss safe (docs/decisions.md, "Embedded storage durability").
 *
 * Types are read as `pg` reads them: int8 and numeric as strings, json/jsonb parsed,
 * timestamptz/timestamp/date as `Date` (PGlite's default; its session time zone is UTC, and it
 * parses `date` as UTC midnight where `pg` uses local midnight, so prefer text for dates),
 * bytea as `Uint8Array` (`pg`: `Buffer`).
 */
import { fsyncSync, mkdirSync } from "node:fs"
import { dirname, resolve } from "node:path"
import * as Reactivity from "@effect/experimental/Reactivity"
import { makeCompiler } from "@effect/sql-pg/PgClient"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { PGlite, types, type PGliteOptions, type QueryOptions, type Results } from "@electric-sql/pglite"
import { NodeFS } from "@electric-sql/pglite/nodefs"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { copyFromStdin } from "../sql/SqlSupport.ts"
import * as DataDirectoryLock from "./DataDirectoryLock.ts"

/**
 * Whether a commit on a data directory waits for the disk: `full` (the default) survives a power
 * loss; `relaxed` (PGlite's own defaults, no `fsync`) survives only the process being killed.
 */
export type Durability = "full" | "relaxed"

/** Where the embedded database keeps its data: in memory, or a directory on disk. */
export interface PgliteClientConfig {
  /** `undefined` or `memory://...`: in memory. A filesystem path: on disk, created if absent. */
  readonly dataDir?: string | undefined
  /**
   * A database to start from instead of an empty one: a `dumpDataDir` archive (PGlite skips
   * `initdb`, the slow part of opening a new database). For an in-memory database.
   */
  readonly loadDataDir?: Blob | undefined
  readonly spanAttributes?: Record<string, unknown> | undefined
  /** Renames result columns (e.g. snake_case to camelCase), as `@effect/sql` clients do. */
  readonly transformResultNames?: ((str: string) => string) | undefined
  /**
   * Renames identifiers in statements (e.g. camelCase to snake_case), as `@effect/sql` clients do.
   */
  readonly transformQueryNames?: ((str: string) => string) | undefined
  readonly transformJson?: boolean | undefined
  /** How the data directory's lock (taken when `dataDir` is a path) judges an abandoned holder. */
  readonly lock?: DataDirectoryLock.LockOptions | undefined
  /** For a data directory: `full` (default) or `relaxed`; see the module comment. */
  readonly durability?: Durability | undefined
}

/** An `@effect/sql` `SqlClient` over embedded PGlite (one session, so statements take turns). */
export interface PgliteClient extends Client.SqlClient {
  readonly config: PgliteClientConfig
  /**
   * The underlying database, for diagnostics (`closed`, `dataDir`). Statements sent to it
   * directly bypass the session permit; send them through the client.
   */
  readonly pglite: PGlite
}

/** The service tag of the embedded PGlite client. */
export const PgliteClient: Context.Tag<PgliteClient, PgliteClient> = Context.GenericTag<PgliteClient>(
  "@accord/adapters/pglite/PgliteClient"
)

type TransformRows = (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

/** int8 as strings like `pg`: JS numbers lose precision past 2^53 (int8 arrays follow). */
const parsers = { [types.INT8]: (value: string): string => value }

const isPath = (dataDir: string | undefined): dataDir is string => dataDir !== undefined && !dataDir.includes("://")

/**
 * PGlite attaches the statement's parameters to its errors (`params`, `queryOptions`). Keep the
 * fields `pg`'s own `DatabaseError` has (so `cause.code` works the same on both clients) and
 * drop those. The `SqlError` message carries only the SQLSTATE: the server message can quote an
 * input value (`invalid input syntax for type integer: "..."`).
 */
const toSqlError =
  (message: string) =>
  (error: unknown): SqlError => {
    if (!(error instanceof Error)) return new SqlError({ cause: error, message })
    const {
      params: _params,
      queryOptions: _queryOptions,
      query: _query,
      ...fields
    } = error as Error & Record<string, unknown>
    const cause = Object.assign(new Error(error.message), fields, { name: "PgliteDatabaseError" })
    const code = typeof fields["code"] === "string" ? ` (SQLSTATE ${fields["code"]})` : ""
    return new SqlError({ cause, message: `${message}${code}` })
  }

/** PGlite cannot cancel a running statement: wait for it, so the permit is never released early. */
const attempt = <A>(run: () => Promise<A>): Effect.Effect<A, SqlError> =>
  Effect.uninterruptible(Effect.tryPromise({ try: run, catch: toSqlError("Failed to execute statement") }))

/** One statement on the session; `exclusive` is the session permit, or identity inside a transaction. */
const makeConnection = (
  pglite: PGlite,
  exclusive: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
): Connection => {
  /**
   * Without parameters, use the simple protocol as `pg` does, so multi-statement text (one
   * migration file) works on both clients; a multi-statement result is one row array per statement.
   */
  const run = (sql: string, params: ReadonlyArray<unknown>, options?: QueryOptions) =>
    exclusive(
      attempt(async (): Promise<ReadonlyArray<any>> => {
        if (params.length === 1 && copyFromStdin.test(sql)) {
          // `COPY … FROM STDIN` with its data as the one value: PGlite reads a copy from a blob.
          const blob = new Blob([String(params[0])])
          return (await pglite.query(sql.replace(/\sFROM\s+STDIN$/i, " FROM '/dev/blob'"), [], { ...options, blob }))
            .rows
        }
        if (params.length > 0) return (await pglite.query(sql, params as Array<unknown>, options)).rows
        const results = await pglite.exec(sql, options)
        return results.length === 1 ? results[0]!.rows : results.map((result) => result.rows)
      })
    )
  const execute = (sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) =>
    transformRows ? Effect.map(run(sql, params), transformRows) : run(sql, params)
  return {
    execute,
    executeUnprepared: execute,
    executeValues: (sql, params) => run(sql, params, { rowMode: "array" }),
    executeRaw: (sql, params): Effect.Effect<Results, SqlError> =>
      exclusive(attempt(() => pglite.query(sql, params as Array<unknown>))),
    // Not a cursor: emits every row after the statement completes. Fine at Accord's row counts.
    executeStream: (sql, params, transformRows) => Stream.fromIterableEffect(execute(sql, params, transformRows))
  }
}

/**
 * NODEFS with an `fsync`: Emscripten's has none (a call is a silent no-op), so PostgreSQL's WAL
 * flush at commit would stop at the page cache. Every NODEFS file shares one `stream_ops` object,
 * patched before the data directory is mounted.
 */
class SyncedNodeFS extends NodeFS {
  override async init(pg: PGlite, opts: Parameters<NodeFS["init"]>[1]) {
    const patch = (mod: any) => {
      mod.NODEFS.stream_ops.fsync = (stream: { readonly nfd: number }) => {
        fsyncSync(stream.nfd)
        return 0
      }
    }
    return super.init(pg, { ...opts, preRun: [patch, ...(opts.preRun ?? [])] })
  }
}

/** PostgreSQL's start parameters for a durable data directory: PGlite's, with `fsync` on. */
const durableStartParams: ReadonlyArray<string> = [
  ...PGlite.defaultStartParams.filter((param) => param !== "-F"),
  "-c",
  "wal_sync_method=fsync"
]

/** The PGlite options for `config`: the durable file system and parameters on a data directory by default. */
const openOptions = (config: PgliteClientConfig): PGliteOptions => {
  const base: PGliteOptions =
    config.loadDataDir === undefined ? { parsers } : { parsers, loadDataDir: config.loadDataDir }
  if (!isPath(config.dataDir) || config.durability === "relaxed") return base
  return { ...base, fs: new SyncedNodeFS(config.dataDir), startParams: [...durableStartParams] }
}

/**
 * Opens PGlite for the scope; closing the scope waits for an open transaction, then closes it.
 */
export const make = (
  config: PgliteClientConfig
): Effect.Effect<PgliteClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function* () {
    const session = yield* Effect.makeSemaphore(1)
    // One writer per data directory: the lock is taken before PGlite reads the directory and,
    // as a finalizer registered first, released only after PGlite has closed and written it back.
    if (isPath(config.dataDir)) {
      const dataDir = config.dataDir
      yield* Effect.try({
        try: () => mkdirSync(dirname(resolve(dataDir)), { recursive: true }),
        catch: toSqlError("PgliteClient: failed to create the data directory's parent")
      })
      yield* DataDirectoryLock.acquire(dataDir, config.lock).pipe(
        Effect.mapError((error) => new SqlError({ cause: error, message: error.message }))
      )
    }
    const pglite = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          if (isPath(config.dataDir)) mkdirSync(config.dataDir, { recursive: true })
          return await PGlite.create(config.dataDir, openOptions(config))
        },
        catch: toSqlError("PgliteClient: failed to open the database")
      }),
      (pglite) =>
        session.withPermits(1)(
          Effect.tryPromise(() => (pglite.closed ? Promise.resolve() : pglite.close())).pipe(
            Effect.catchAll((error) => Effect.logWarning("PgliteClient: failed to close the database", error))
          )
        )
    )

    const transactionConnection = makeConnection(pglite, (effect) => effect)
    const client = yield* Client.make({
      acquirer: Effect.succeed(makeConnection(pglite, session.withPermits(1))),
      // Holds the permit from BEGIN until Client.make closes the transaction's scope after
      // COMMIT/ROLLBACK. Waiting for it stays interruptible, as in `withPermits`.
      transactionAcquirer: Effect.as(
        Effect.acquireRelease(Effect.interruptible(session.take(1)), () => session.release(1)),
        transactionConnection
      ),
      compiler: makeCompiler(config.transformQueryNames, config.transformJson),
      spanAttributes: [
        ...(config.spanAttributes ? Object.entries(config.spanAttributes) : []),
        ["db.system.name", "postgresql"],
        ["db.namespace", "pglite"]
      ],
      transformRows: config.transformResultNames
        ? Statement.defaultTransforms(config.transformResultNames, config.transformJson).array
        : undefined
    })
    return Object.assign(client, { config, pglite })
  })

/**
 * Provides both `PgliteClient` and `SqlClient`.
 */
export const layer = (config: PgliteClientConfig = {}): Layer.Layer<PgliteClient | Client.SqlClient, SqlError> =>
  Layer.scopedContext(
    Effect.map(make(config), (client) => Context.make(PgliteClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
