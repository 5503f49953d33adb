/**
 * Storage selection for servers and tests: PostgreSQL when `DATABASE_URL` is set, otherwise the
 * embedded PGlite in `ACCORD_DATA_DIR` (power-loss durable unless `ACCORD_PGLITE_DURABILITY=relaxed`:
 * docs/decisions.md, "Embedded storage durability"). Both provide the same `SqlClient`, so storage adapters never know which one they run
 * on.
 */
import { existsSync } from "node:fs"
import { join, resolve } from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import pg from "pg"
import { from as copyFrom } from "pg-copy-streams"
import * as PgliteClient from "../pglite/PgliteClient.ts"
import { DirectStatements, type DirectStatementsService } from "./DirectStatements.ts"
import * as Instrumented from "../telemetry/Instrumented.ts"
import {
  copyFromStdin,
  type DriverReason,
  defaultPoolSize,
  defaultStorageTimeoutMillis,
  driverReason,
  faultKind,
  unboundedTransaction
} from "./SqlSupport.ts"

/**
 * Which database Accord uses. The URL stays `Redacted`: it usually carries the password.
 */
export type Storage =
  | ({ readonly _tag: "Postgres"; readonly url: Redacted.Redacted<string> } & PgOptions)
  | { readonly _tag: "Pglite"; readonly dataDir: string; readonly durability?: PgliteClient.Durability }

/**
 * How long Accord waits for PostgreSQL.
 */
export interface PgOptions {
  /**
   * `ACCORD_STORAGE_TIMEOUT`: the longest any one wait for the database may take: for a
   * connection (a new one, or a free one from the pool) and for a statement (PostgreSQL's
   * `statement_timeout`, which also ends a wait for a lock). Past it the request is answered 503
   * with `Retry-After`. Default {@link defaultStorageTimeoutMillis}.
   */
  readonly timeoutMillis?: number
  /**
   * `ACCORD_DATABASE_WAIT`: how long the start keeps trying to reach the database, a line per
   * failed attempt, before it gives up with the driver's reason. Default 0: one attempt.
   */
  readonly waitMillis?: number
  /**
   * `ACCORD_DATABASE_POOL_SIZE`: the most connections this process opens to PostgreSQL at once.
   * Every process sharing the database counts against its `max_connections` (100 by default);
   * past it PostgreSQL refuses new connections. Default {@link defaultPoolSize}.
   */
  readonly poolSize?: number
}

/**
 * `DATABASE_URL` (an empty value counts as unset) selects PostgreSQL; otherwise PGlite in
 * `${ACCORD_DATA_DIR}/pglite` (default `./.accord-data/pglite`; `memory://` keeps it in memory).
 */
export const storageConfig: Config.Config<Storage> = Config.all({
  url: Config.option(Config.redacted("DATABASE_URL")),
  dataDir: Config.withDefault(Config.string("ACCORD_DATA_DIR"), "./.accord-data"),
  pgliteDurability: Config.withDefault(Config.literal("full", "relaxed")("ACCORD_PGLITE_DURABILITY"), "full")
}).pipe(
  Config.map(({ dataDir, pgliteDurability, url }) => storageFrom({ databaseUrl: url, dataDir, pgliteDurability }))
)

/**
 * The same choice from already loaded settings (the server's `AccordConfig`).
 */
export const storageFrom = (settings: {
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly storageTimeoutMillis?: number
  readonly databaseWaitMillis?: number
  readonly databasePoolSize?: number
  readonly pgliteDurability?: PgliteClient.Durability
}): Storage =>
  Option.match(
    Option.filter(settings.databaseUrl, (url) => Redacted.value(url).trim() !== ""),
    {
      onSome: (url): Storage => ({
        _tag: "Postgres",
        url,
        ...(settings.storageTimeoutMillis === undefined ? {} : { timeoutMillis: settings.storageTimeoutMillis }),
        ...(settings.databaseWaitMillis === undefined ? {} : { waitMillis: settings.databaseWaitMillis }),
        ...(settings.databasePoolSize === undefined ? {} : { poolSize: settings.databasePoolSize })
      }),
      onNone: (): Storage => ({
        _tag: "Pglite",
        dataDir: settings.dataDir.startsWith("memory://") ? settings.dataDir : join(settings.dataDir, "pglite"),
        ...(settings.pgliteDurability === undefined ? {} : { durability: settings.pgliteDurability })
      })
    }
  )

/**
 * One line for startup logs: which storage and where, never credentials (no user, no password,
 * no query string).
 */
export const describeStorage = (storage: Storage): string => {
  if (storage._tag === "Pglite") {
    const where = storage.dataDir.startsWith("memory://") ? "in memory" : `in ${resolve(storage.dataDir)}`
    if (storage.dataDir.startsWith("memory://")) return `PGlite (embedded) ${where}`
    return storage.durability === "relaxed"
      ? `PGlite (embedded, ACCORD_PGLITE_DURABILITY=relaxed: commits do not wait for fsync, not power-loss durable) ${where}`
      : `PGlite (embedded, each commit waits for fsync) ${where}`
  }
  try {
    const url = new URL(Redacted.value(storage.url))
    const host = url.hostname || url.searchParams.get("host") || "localhost"
    const port = url.port ? `:${url.port}` : ""
    const database = decodeURIComponent(url.pathname.replace(/^\//, "")) || "(default database)"
    return `PostgreSQL at ${host}${port}/${database}`
  } catch {
    return "PostgreSQL (DATABASE_URL is not a URL; details withheld)"
  }
}

/**
 * Whether this start creates the embedded database (PGlite in a data directory that holds none
 * yet): creating and migrating it takes seconds, which deserves a line before it starts.
 */
export const createsEmbeddedDatabase = (storage: Storage): boolean =>
  storage._tag === "Pglite" &&
  !storage.dataDir.startsWith("memory://") &&
  !existsSync(join(storage.dataDir, "PG_VERSION"))

/**
 * int8 and numeric come back as strings: `pg`'s defaults, matched by the PGlite client.
 */
export const layerPg = (
  url: Redacted.Redacted<string>,
  options?: PgOptions
): Layer.Layer<SqlClient.SqlClient | DirectStatements, SqlError> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const pool = yield* acquirePool(url, options)
      const client = yield* PgClient.fromPool({ acquire: Effect.succeed(pool) })
      return Context.make(PgClient.PgClient, client).pipe(
        Context.add(SqlClient.SqlClient, client),
        Context.add(DirectStatements, directStatements(pool))
      )
    })
  ).pipe(Layer.provide(Reactivity.layer))

/** The driver's reason in one line: its code, then its message (when it does not already say it). */
export const describeReason = (reason: DriverReason): string =>
  reason.code === undefined || reason.message.includes(reason.code)
    ? reason.message
    : `${reason.code} ${reason.message}`

/** Between two attempts to reach the database at start. */
const attemptSpacingMillis = 1_000

/**
 * The pool, once the database answered `SELECT 1`. Every wait is bounded by the storage bound: a
 * connection attempt and a wait for a free connection by `connectionTimeoutMillis` (a host that
 * accepts and never answers included), a statement by the client's deadline on its answer
 * ({@link boundedClient}), and the first attempt as a whole by a little more, in case the driver's
 * own timer does not fire. A pool that failed is ended without waiting for it: `end()` does not
 * resolve while a connection attempt is pending.
 */
const acquirePool = (
  url: Redacted.Redacted<string>,
  options: PgOptions | undefined
): Effect.Effect<pg.Pool, SqlError, Scope.Scope> => {
  const timeoutMillis = options?.timeoutMillis ?? defaultStorageTimeoutMillis
  const waitMillis = options?.waitMillis ?? 0
  return Effect.acquireRelease(
    Effect.gen(function* () {
      const pool = new pg.Pool({
        connectionString: Redacted.value(url),
        application_name: "accord",
        Client: boundedClient(timeoutMillis),
        max: options?.poolSize ?? defaultPoolSize,
        connectionTimeoutMillis: timeoutMillis,
        statement_timeout: serverStatementTimeout(timeoutMillis),
        keepAlive: true
      })
      pool.on("error", () => undefined)
      pool.on("release", dropIfUnusable)
      const attempt = Effect.tryPromise({ try: () => pool.query("SELECT 1"), catch: (cause) => cause }).pipe(
        Effect.timeoutFail({
          duration: timeoutMillis + 1_000,
          onTimeout: () => new Error("connection timeout: the database did not answer")
        })
      )
      const started = yield* Clock.currentTimeMillis
      for (let attempts = 1; ; attempts++) {
        const attemptStarted = yield* Clock.currentTimeMillis
        const result = yield* Effect.either(attempt)
        if (Either.isRight(result)) return pool
        const now = yield* Clock.currentTimeMillis
        // A connection the driver gave up on at its timeout says only that it was terminated.
        const reason =
          now - attemptStarted >= timeoutMillis
            ? `timeout: no answer within ${timeoutMillis / 1000} s (${describeReason(driverReason(result.left))})`
            : describeReason(driverReason(result.left))
        const waited = now - started
        if (waited + attemptSpacingMillis >= waitMillis) {
          pool.end().catch(() => undefined)
          return yield* new SqlError({
            cause: result.left,
            message: `cannot connect to PostgreSQL${attempts > 1 ? ` (after ${attempts} attempts)` : ""}: ${reason}`
          })
        }
        yield* Effect.logWarning(
          `storage: cannot connect to PostgreSQL yet (attempt ${attempts}): ${reason}; trying again for up to ${Math.ceil((waitMillis - waited) / 1000)} s`
        )
        yield* Effect.sleep(attemptSpacingMillis)
      }
    }),
    (pool) =>
      Effect.promise(() => pool.end().catch(() => undefined)).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  ).pipe(
    // Pool use for `/metrics` and OTLP (`accord_db_pool_connections`), sampled every second.
    Effect.tap(Instrumented.trackPool)
  )
}

const directStatements = (pool: pg.Pool): DirectStatementsService => ({
  run: (text, values, done) => {
    pool.query(text, values as Array<unknown>, (error: Error | undefined, result: pg.QueryResult | undefined) =>
      error ? done(error, []) : done(undefined, result?.rows ?? [])
    )
  }
})

/** How many statements one connection prepares; later texts run unnamed. */
const preparedPerConnection = 256

/** "cached plan must not change result type": a table a prepared statement reads has changed shape. */
const planResultChanged = "0A000"

type Callback = (error: (Error & { readonly code?: string }) | null, result: unknown) => void

/**
 * PostgreSQL's own `statement_timeout`: a little under the storage bound, so a database that is
 * slow but answers (a lock held, a long statement) ends the statement itself, which leaves the
 * connection usable, before the client's deadline (`boundedClient`) would close it.
 */
export const serverStatementTimeout = (boundMillis: number): number =>
  boundMillis - Math.min(500, Math.floor(boundMillis / 10))

/**
 * The failure of every statement on a connection abandoned at the storage bound (a timeout, by
 * its message: `SqlSupport.faultKind`).
 */
const abandoned = (boundMillis: number): Error =>
  new Error(`query timed out: no answer from the database within ${boundMillis / 1000} s (connection closed)`)

/**
 * A client released to the pool without an error but unusable is closed instead of pooled:
 * - while a statement it sent is still unanswered (its caller was interrupted: the SQL client
 *   cancels the statement and hands the connection back): its next statement would wait behind
 *   the unanswered one, and that answer could be read as the next statement's;
 * - after a statement failed with a connection fault (the server terminating the session,
 *   57P01): the server closes the connection right after it says so, but the pool would only
 *   learn it from the socket, possibly after handing the connection to another caller.
 */
const dropIfUnusable = (error: Error | undefined, client: pg.PoolClient): void => {
  const state = client as { readonly unanswered?: number; readonly lost?: boolean }
  if (error === undefined && (state.unanswered || state.lost)) void client.end()
}

/**
 * The `pg` client of the pool, bounded: every statement must be answered within `boundMillis`
 * (the storage bound), or its connection is destroyed. PostgreSQL's `statement_timeout` cannot
 * end a wait for a database that is frozen (stopped, or behind a network that drops everything):
 * nothing answers at all. The connection cannot be reused either, as the statement may still
 * run and answer later; so the socket is destroyed, which fails every statement on it, marks the
 * client not queryable, and the pool removes it (on its release with that error, or at once if
 * idle). The transaction it held, if any, never commits unless its `COMMIT` had been received.
 *
 * The one exception is a transaction that lifted its bound (`SqlSupport.unboundedTransaction`,
 * the migrations'): its statements wait as long as they take, until the transaction ends.
 *
 * It also runs every parameterized statement as a named prepared statement on its connection:
 * PostgreSQL parses and analyzes it once per connection and can reuse its plan, where an unnamed
 * statement is parsed, analyzed and planned on every execution. Accord's hot statements are few,
 * fixed texts (the batch statements take their rows as one `jsonb` parameter), so the first
 * `preparedPerConnection` texts cover them; statements without parameters (transaction control,
 * migrations) keep the simple protocol.
 *
 * When another process changes a table (a migration during a rolling deploy), PostgreSQL refuses
 * to run a prepared statement whose result columns would change; the statement did not run, so it
 * is prepared again under a new name and run once more (outside a transaction this succeeds; in
 * one, the transaction has already failed and its caller sees the error).
 */
const boundedClient = (boundMillis: number) =>
  class BoundedClient extends pg.Client {
    readonly #names = new Map<string, string>()
    #prepared = 0
    #unboundedTransaction = false
    /** Statements sent and not yet answered (read by {@link dropIfUnusable}). */
    unanswered = 0
    /** Whether a statement failed with a connection fault (read by {@link dropIfUnusable}). */
    lost = false

    #nameFor(text: string): string | undefined {
      const known = this.#names.get(text)
      if (known !== undefined || this.#prepared >= preparedPerConnection) return known
      const name = `accord_${this.#prepared++}`
      this.#names.set(text, name)
      return name
    }

    #run(config: unknown, values?: unknown, callback?: unknown): any {
      return (super.query as (...args: Array<unknown>) => any).call(this, config, values, callback)
    }

    /** `done`, called at most once: with the answer, or with {@link abandoned} at the deadline. */
    #bounded(config: unknown, done: Callback): Callback {
      if (this.#unboundedTransaction && this.getTransactionStatus() === "I") this.#unboundedTransaction = false
      if (config === unboundedTransaction) this.#unboundedTransaction = true
      this.unanswered++
      let answered = false
      const deadline = this.#unboundedTransaction
        ? undefined
        : setTimeout(() => {
            if (!answered) this.connection.stream.destroy(abandoned(boundMillis))
          }, boundMillis).unref()
      return (error, result) => {
        if (answered) return
        answered = true
        this.unanswered--
        clearTimeout(deadline)
        if (error && faultKind(driverReason(error)) === "connection") this.lost = true
        done(error, result)
      }
    }

    /** `COPY … FROM STDIN` with `data` as what it reads (`SqlSupport.copyFromStdin`). */
    #copy(text: string, data: unknown, done: Callback): void {
      const stream = this.#run(copyFrom(text)) as ReturnType<typeof copyFrom>
      stream.on("error", (error) => done(error, undefined))
      stream.on("finish", () => done(null, { rows: [], rowCount: stream.rowCount }))
      stream.end(typeof data === "string" ? data : String(data))
    }

    override query(config: unknown, values?: unknown, callback?: unknown): any {
      if (typeof values === "function") return this.#run(config, this.#bounded(config, values as Callback))
      if (typeof callback !== "function") return this.#run(config, values, callback)
      const done = this.#bounded(config, callback as Callback)
      if (typeof config === "string" && Array.isArray(values) && values.length === 1 && copyFromStdin.test(config)) {
        return this.#copy(config, values[0], done)
      }
      if (typeof config !== "string" || !Array.isArray(values) || values.length === 0) {
        return this.#run(config, values, done)
      }
      const name = this.#nameFor(config)
      if (name === undefined) return this.#run(config, values, done)
      return this.#run({ name, text: config, values }, (error: Parameters<Callback>[0], result: unknown) => {
        if (error?.code !== planResultChanged) return done(error, result)
        this.#names.delete(config)
        const renamed = this.#nameFor(config)
        this.#run(renamed === undefined ? { text: config, values } : { name: renamed, text: config, values }, done)
      })
    }
  }

/**
 * A `SqlClient` over embedded PGlite in `dataDir` (in memory when absent); on a data directory
 * `durability` defaults to `full`.
 */
export const layerPglite = (
  dataDir?: string,
  durability?: PgliteClient.Durability
): Layer.Layer<SqlClient.SqlClient, SqlError> => PgliteClient.layer({ dataDir, durability })

/** The `SqlClient` for the chosen storage: PostgreSQL for a URL, else embedded PGlite. */
export const layer = (storage: Storage): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  storage._tag === "Postgres" ? layerPg(storage.url, storage) : layerPglite(storage.dataDir, storage.durability)

/**
 * The `SqlClient` chosen from the environment: `DATABASE_URL` when set, else PGlite in
 * `ACCORD_DATA_DIR`.
 */
export const layerFromConfig: Layer.Layer<SqlClient.SqlClient, SqlError | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(storageConfig, layer)
)

/**
 * Readiness: the database answers a statement.
 */
export const ping: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.asVoid(sql`SELECT 1`)
)

/**
 * Whether any workspace exists (after the migrations): with none and no bootstrap variables, nobody
 * can use the admin API yet, and the start says how to create one.
 */
export const hasWorkspace: Effect.Effect<boolean, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    Effect.map(
      sql<{ readonly present: boolean }>`SELECT EXISTS (SELECT 1 FROM accord_workspaces) AS present`,
      ([row]) => row?.present === true
    )
)
