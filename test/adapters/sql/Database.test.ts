import { randomUUID } from "node:crypto"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Database from "../../../adapters/sql/Database.ts"
import * as Migrations from "../../../adapters/sql/Migrations.ts"
import { driverReason, unboundedTransaction } from "../../../adapters/sql/SqlSupport.ts"
import { sqlTransaction } from "../../../adapters/sql/Transactor.ts"
import { migrations as schema } from "../../../adapters/sql/schema/Migrations.ts"
import { configFrom } from "../../support/http.ts"
import { databaseUrl, warnIfSkipped } from "../../support/postgres.ts"

warnIfSkipped("database and migrations on PostgreSQL")

/** The first migration alone: these tests are about the migration mechanism, not the schema. */
const migrations: Migrations.Migrations = { "0001_init": schema["0001_init"]! }

/** A migration that leaves one row per application, to count how often it ran. */
const withProbe: Migrations.Migrations = {
  ...migrations,
  "0002_probe": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.zipRight(sql`CREATE TABLE probe (n int not null)`, sql`INSERT INTO probe VALUES (1)`)
  )
}

/**
 * The migration contract, run on every storage. `fresh()` is an empty database; `twoClients()`
 * two independent clients (two "processes") on one empty database.
 */
const suite = (options: {
  readonly fresh: () => Layer.Layer<SqlClient.SqlClient, SqlError>
  readonly twoClients: () => Effect.Effect<
    readonly [Layer.Layer<SqlClient.SqlClient>, Layer.Layer<SqlClient.SqlClient>],
    SqlError,
    Scope.Scope
  >
}) => {
  it.effect("runs the migrations once; a second run applies nothing", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      assert.deepStrictEqual(yield* Migrations.appliedVersions, [])
      assert.deepStrictEqual(yield* Migrations.run(migrations), [{ id: 1, name: "init" }])
      assert.deepStrictEqual(yield* Migrations.run(migrations), [])
      assert.deepStrictEqual(yield* Migrations.appliedVersions, [{ id: 1, name: "init" }])
      yield* sql`INSERT INTO accord_meta (key, value) VALUES (${"k"}, ${"v"})`
      assert.deepStrictEqual(yield* sql`SELECT key, value FROM accord_meta`, [{ key: "k", value: "v" }])
      yield* Database.ping
    }).pipe(Effect.provide(options.fresh()))
  )

  it.effect("applies only the new migrations on a later start", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* Migrations.run(migrations), [{ id: 1, name: "init" }])
      assert.deepStrictEqual(yield* Migrations.run(withProbe), [{ id: 2, name: "probe" }])
      assert.deepStrictEqual(yield* Migrations.appliedVersions, [
        { id: 1, name: "init" },
        { id: 2, name: "probe" }
      ])
    }).pipe(Effect.provide(options.fresh()))
  )

  it.effect("rolls back every migration of a run when one fails", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const failing = { ...migrations, "0002_broken": Effect.asVoid(sql`SELECT * FROM no_such_table`) }
      const exit = yield* Effect.exit(Migrations.run(failing))
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(yield* Migrations.appliedVersions, [])
      assert.deepStrictEqual(yield* sql`SELECT to_regclass('accord_meta') IS NULL AS absent`, [{ absent: true }])
    }).pipe(Effect.provide(options.fresh()))
  )

  it.scoped("applies each migration once when two clients start together on an empty database", () =>
    Effect.gen(function* () {
      const [first, second] = yield* options.twoClients()
      const results = yield* Effect.all(
        [Effect.provide(Migrations.run(withProbe), first), Effect.provide(Migrations.run(withProbe), second)],
        { concurrency: 2 }
      )
      assert.sameDeepMembers(
        results.map((applied) => applied.length),
        [0, 2]
      )
      const probes = yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT count(*) AS n FROM probe`),
        first
      )
      assert.deepStrictEqual(probes, [{ n: "1" }])
    })
  )
}

describe("Migrations on PGlite", () => {
  suite({
    fresh: () => Database.layerPglite("memory://"),
    // One PGlite is one process's database: two starts share its client (and its session lock).
    twoClients: () =>
      Effect.map(Layer.build(Database.layerPglite()), (context) => {
        const client = Layer.succeedContext(context)
        return [client, client] as const
      })
  })
})

/** `search_path` set through the startup `options` parameter, so each run gets its own schema. */
const inSchema = (url: string, schema: string): Redacted.Redacted<string> => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-csearch_path=${schema}`)
  return Redacted.make(parsed.toString())
}

/** Creates a unique schema for the layer's lifetime and drops it afterwards. */
const freshSchema = (url: string): Layer.Layer<never, SqlError> & { readonly url: Redacted.Redacted<string> } => {
  const schema = `accord_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  const layer = Layer.scopedDiscard(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.acquireRelease(sql`CREATE SCHEMA ${sql(schema)}`, () =>
        Effect.orDie(sql`DROP SCHEMA ${sql(schema)} CASCADE`)
      )
    )
  ).pipe(Layer.provide(Database.layerPg(Redacted.make(url))))
  return Object.assign(layer, { url: inSchema(url, schema) })
}

describe.skipIf(!databaseUrl)("Migrations on PostgreSQL", () => {
  const url = databaseUrl ?? ""
  suite({
    fresh: () => {
      const schema = freshSchema(url)
      return Database.layerPg(schema.url).pipe(Layer.provide(schema))
    },
    twoClients: () =>
      Effect.gen(function* () {
        const schema = freshSchema(url)
        yield* Layer.build(schema)
        const first = yield* Layer.build(Database.layerPg(schema.url))
        const second = yield* Layer.build(Database.layerPg(schema.url))
        return [Layer.succeedContext(first), Layer.succeedContext(second)] as const
      })
  })
})

describe.skipIf(!databaseUrl)("PostgreSQL client: prepared statements", () => {
  const layer = Database.layerPg(Redacted.make(databaseUrl ?? ""))
  /** The statements prepared on the connection the surrounding transaction holds. */
  const preparedHere = Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{
        statement: string
      }>`SELECT statement FROM pg_prepared_statements WHERE statement NOT LIKE ${"%pg_prepared_statements%"}`,
      (rows) => rows.map((r) => r.statement)
    )
  )

  it.effect("runs a parameterized statement as a named prepared statement, once per connection text", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const marker = `probe_${randomUUID().replaceAll("-", "")}`
      const [before, after] = yield* sql.withTransaction(
        Effect.gen(function* () {
          const before = yield* preparedHere
          for (const n of [1, 2, 3]) {
            assert.deepStrictEqual(yield* sql<{ n: number; m: string }>`SELECT ${n}::int AS n, ${marker}::text AS m`, [
              { n, m: marker }
            ])
          }
          return [before, yield* preparedHere] as const
        })
      )
      const added = after.filter((s) => !before.includes(s))
      assert.strictEqual(added.filter((s) => s.includes("AS n")).length, 1)
    }).pipe(Effect.provide(layer))
  )

  it.effect("keeps statements without parameters unnamed, and still answers past the per-connection cap", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const answers = yield* sql.withTransaction(
        Effect.gen(function* () {
          assert.deepStrictEqual(yield* sql`SELECT 41 + 1 AS plain`, [{ plain: 42 }])
          assert.isFalse((yield* preparedHere).some((s) => s.includes("plain")))
          // 300 distinct texts on one connection: past its cap of 256 the rest run unnamed.
          const answers = yield* Effect.forEach(
            Array.from({ length: 300 }, (_, i) => i),
            (i) => Effect.map(sql.unsafe<{ v: number }>(`SELECT $1::int + ${i} AS v`, [1]), (rows) => rows[0]!.v)
          )
          assert.isAtMost((yield* preparedHere).length, 256)
          return answers
        })
      )
      assert.deepStrictEqual(
        answers,
        Array.from({ length: 300 }, (_, i) => i + 1)
      )
    }).pipe(Effect.provide(layer))
  )

  it.effect(
    "a prepared statement keeps answering after another connection changes the table it reads (a migration elsewhere)",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const table = `probe_${randomUUID().replaceAll("-", "")}`
        yield* sql.unsafe(`CREATE TABLE ${table} (a int)`)
        yield* sql.unsafe(`INSERT INTO ${table} VALUES (1)`)
        const result = yield* Effect.exit(
          Effect.scoped(
            Effect.gen(function* () {
              const connection = yield* sql.reserve
              const text = `SELECT * FROM ${table} WHERE a = $1`
              assert.deepStrictEqual(yield* connection.execute(text, [1], undefined), [{ a: 1 }])
              assert.deepStrictEqual(yield* connection.execute(text, [1], undefined), [{ a: 1 }])
              yield* sql.unsafe(`ALTER TABLE ${table} ADD COLUMN b int NOT NULL DEFAULT 7`)
              assert.deepStrictEqual(yield* connection.execute(text, [1], undefined), [{ a: 1, b: 7 }])
              assert.deepStrictEqual(yield* connection.execute(text, [1], undefined), [{ a: 1, b: 7 }])
            })
          )
        )
        yield* sql.unsafe(`DROP TABLE ${table}`)
        assert.isTrue(Exit.isSuccess(result), String(result))
      }).pipe(Effect.provide(layer))
  )

  it.effect("a statement that fails to prepare leaves the connection usable and the text retryable", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const failed = yield* Effect.exit(sql`SELECT ${1}::int FROM no_such_table_here`)
            assert.isTrue(Exit.isFailure(failed))
          })
        )
        .pipe(Effect.exit)
      for (let i = 0; i < 3; i++) {
        assert.isTrue(Exit.isFailure(yield* Effect.exit(sql`SELECT ${1}::int FROM no_such_table_here`)))
        assert.deepStrictEqual(yield* sql`SELECT ${i}::int AS i`, [{ i }])
      }
    }).pipe(Effect.provide(layer))
  )
})

describe.skipIf(!databaseUrl)("PostgreSQL client: the storage bound", () => {
  const layer = Database.layerPg(Redacted.make(databaseUrl ?? ""), { timeoutMillis: 1_000 })

  it.effect("PostgreSQL ends a statement itself just under the bound, and the connection stays usable", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const [setting] = yield* sql<{ readonly statement_timeout: string }>`SHOW statement_timeout`
      assert.strictEqual(setting?.statement_timeout, "900ms")
      const slow = yield* Effect.flip(sql`SELECT pg_sleep(2)`)
      assert.deepStrictEqual(driverReason(slow), {
        code: "57014",
        message: "canceling statement due to statement timeout"
      })
      assert.deepStrictEqual(yield* sql`SELECT 1 AS one`, [{ one: 1 }])
    }).pipe(Effect.provide(layer))
  )

  it.effect("a transaction that lifts its bound (the migrations') waits as long as its statements take", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const slept = yield* sqlTransaction(
        sql,
        Effect.zipRight(sql.unsafe(unboundedTransaction), sql`SELECT 1 AS slept FROM pg_sleep(1.3)`)
      )
      assert.deepStrictEqual(slept, [{ slept: 1 }])
      // The lift ended with its transaction.
      assert.isTrue(Exit.isFailure(yield* Effect.exit(sql`SELECT pg_sleep(2)`)))
    }).pipe(Effect.provide(layer))
  )
})

describe.skipIf(!databaseUrl)("PostgreSQL client: the pool size", () => {
  it.effect("never opens more connections than its pool size: statements beyond it wait for a free one", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const pids = yield* Effect.all(
        Array.from({ length: 6 }, () => sql<{ readonly pid: number }>`SELECT pg_backend_pid() AS pid, pg_sleep(0.1)`),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(pids.length, 6)
      assert.strictEqual(new Set(pids.map(([row]) => row!.pid)).size, 2)
    }).pipe(Effect.provide(Layer.fresh(Database.layerPg(Redacted.make(databaseUrl ?? ""), { poolSize: 2 }))))
  )
})

describe("storage selection", () => {
  const read = (env: Record<string, string>) =>
    Effect.withConfigProvider(Database.storageConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))

  it.effect(
    "uses PostgreSQL when DATABASE_URL is set, PGlite in ACCORD_DATA_DIR/pglite otherwise, durable unless relaxed",
    () =>
      Effect.gen(function* () {
        const pg = yield* read({ DATABASE_URL: "postgres://accord:s3cret@db.internal:5433/accord?sslmode=require" })
        assert.strictEqual(pg._tag, "Postgres")
        const embedded = { _tag: "Pglite", dataDir: ".accord-data/pglite", durability: "full" } as const
        assert.deepStrictEqual(yield* read({}), embedded)
        assert.deepStrictEqual(yield* read({ DATABASE_URL: "" }), embedded)
        assert.deepStrictEqual(yield* read({ ACCORD_DATA_DIR: "/var/lib/accord" }), {
          _tag: "Pglite",
          dataDir: "/var/lib/accord/pglite",
          durability: "full"
        })
        assert.deepStrictEqual(yield* read({ ACCORD_PGLITE_DURABILITY: "relaxed" }), {
          ...embedded,
          durability: "relaxed"
        })
      })
  )

  it.effect("the server's settings carry the storage bound, the start's wait and the pool size to PostgreSQL", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({
        DATABASE_URL: "postgres://accord@db.internal:5432/accord",
        ACCORD_STORAGE_TIMEOUT: "2s",
        ACCORD_DATABASE_WAIT: "30s",
        ACCORD_DATABASE_POOL_SIZE: "4"
      })
      const storage = Database.storageFrom(config)
      assert.strictEqual(storage._tag, "Postgres")
      if (storage._tag !== "Postgres") return
      assert.deepStrictEqual([storage.timeoutMillis, storage.waitMillis, storage.poolSize], [2_000, 30_000, 4])
    })
  )

  it("describes the storage without credentials", () => {
    const description = Database.describeStorage({
      _tag: "Postgres",
      url: Redacted.make("postgres://accord:s3cret@db.internal:5433/accord?sslmode=require")
    })
    assert.strictEqual(description, "PostgreSQL at db.internal:5433/accord")
    assert.notInclude(description, "s3cret")
    assert.include(
      Database.describeStorage({ _tag: "Pglite", dataDir: "/var/lib/accord/pglite" }),
      "/var/lib/accord/pglite"
    )
    assert.include(Database.describeStorage({ _tag: "Pglite", dataDir: "memory://" }), "in memory")
  })
})
