import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as PgliteClient from "../../../adapters/pglite/PgliteClient.ts"

// Real clock: the isolation case sleeps inside a transaction while another fiber runs.
layer(PgliteClient.layer(), { excludeTestServices: true })("PgliteClient (in memory)", (it) => {
  it.effect("runs statements with parameters", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE params_t (id integer primary key, name text not null)`
      yield* sql`INSERT INTO params_t ${sql.insert([
        { id: 1, name: "a" },
        { id: 2, name: "b" }
      ])}`
      const rows = yield* sql<{ id: number; name: string }>`SELECT id, name FROM params_t WHERE id = ${2}`
      assert.deepStrictEqual(rows, [{ id: 2, name: "b" }])
      const values = yield* sql`SELECT id, name FROM params_t WHERE name = ${"a"}`.values
      assert.deepStrictEqual(values, [[1, "a"]])
    })
  )

  it.effect("runs multi-statement text without parameters, as pg does", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE multi_a (id int); CREATE TABLE multi_b (id int)`
      const rows = yield* sql`SELECT count(*) AS n FROM multi_a, multi_b`
      assert.deepStrictEqual(rows, [{ n: "0" }])
    })
  )

  it.effect("reads int8 as strings, like pg", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ big: unknown; small: unknown; arr: unknown }>`
        SELECT ${"9007199254740993"}::int8 AS big, 1::int8 AS small, ARRAY[1, 2]::int8[] AS arr`
      assert.deepStrictEqual(row, { big: "9007199254740993", small: "1", arr: ["1", "2"] })
    })
  )

  it.effect("round-trips jsonb passed as JSON.stringify(x)::jsonb", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const doc = { a: 1, nested: { list: [1, "two", null], flag: true }, text: 'quote " and \\ and é' }
      yield* sql`CREATE TABLE json_t (id int primary key, doc jsonb not null)`
      yield* sql`INSERT INTO json_t (id, doc) VALUES (1, ${JSON.stringify(doc)}::jsonb)`
      const [row] = yield* sql<{ doc: unknown }>`SELECT doc FROM json_t WHERE id = 1`
      assert.deepStrictEqual(row?.doc, doc)
    })
  )

  it.effect("maps errors to SqlError without parameter values in the message", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const error = yield* Effect.flip(sql`SELECT ${"hunter2-secret"}::int AS n`)
      assert.instanceOf(error, SqlError)
      assert.notInclude(error.message, "hunter2")
      assert.include(error.message, "22P02")
      assert.notProperty(error.cause, "params")
    })
  )

  it.effect("commits withTransaction", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE commit_t (id text primary key)`
      yield* sql.withTransaction(
        Effect.all([sql`INSERT INTO commit_t VALUES ('a')`, sql`INSERT INTO commit_t VALUES ('b')`])
      )
      const rows = yield* sql`SELECT id FROM commit_t ORDER BY id`
      assert.deepStrictEqual(rows, [{ id: "a" }, { id: "b" }])
    })
  )

  it.effect("rolls back a failing transaction", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE rollback_t (id text primary key)`
      const exit = yield* Effect.exit(
        sql.withTransaction(Effect.zipRight(sql`INSERT INTO rollback_t VALUES ('a')`, Effect.fail("boom")))
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(yield* sql`SELECT id FROM rollback_t`, [])
    })
  )

  it.effect("rolls back only the inner of nested transactions (savepoint)", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE nested_t (id text primary key)`
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`INSERT INTO nested_t VALUES ('outer')`
          yield* sql
            .withTransaction(Effect.zipRight(sql`INSERT INTO nested_t VALUES ('inner')`, Effect.fail("inner")))
            .pipe(Effect.ignore)
          yield* sql`INSERT INTO nested_t VALUES ('after')`
        })
      )
      assert.deepStrictEqual(yield* sql`SELECT id FROM nested_t ORDER BY id`, [{ id: "after" }, { id: "outer" }])
    })
  )

  it.effect("never runs another fiber's statement inside an open transaction", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE isolation_t (id text primary key)`
      const inserted = yield* Deferred.make<void>()
      const a = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO isolation_t VALUES ('a')`
            yield* Deferred.succeed(inserted, undefined)
            yield* Effect.sleep("100 millis")
            return yield* Effect.fail("a fails")
          })
        )
        .pipe(Effect.fork)
      yield* Deferred.await(inserted)
      // Outside any transaction: must wait for A to finish instead of joining A's transaction.
      const b = yield* Effect.fork(sql`INSERT INTO isolation_t VALUES ('b')`)
      assert.deepStrictEqual(yield* Fiber.await(a), Exit.fail("a fails"))
      yield* Fiber.join(b)
      assert.deepStrictEqual(yield* sql`SELECT id FROM isolation_t`, [{ id: "b" }])
    })
  )

  it.effect("releases the session when a transaction is interrupted", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const started = yield* Deferred.make<void>()
      const stuck = yield* Effect.fork(
        sql.withTransaction(Effect.zipRight(Deferred.succeed(started, undefined), Effect.never))
      )
      yield* Deferred.await(started)
      yield* Fiber.interrupt(stuck)
      assert.deepStrictEqual(yield* sql`SELECT 1 AS one`, [{ one: 1 }])
    })
  )

  it.effect("serializes 50 concurrent read-modify-write transactions", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE counter_t (id int primary key, n int not null)`
      yield* sql`INSERT INTO counter_t VALUES (1, 0)`
      const increment = sql.withTransaction(
        Effect.gen(function* () {
          const [row] = yield* sql<{ n: number }>`SELECT n FROM counter_t WHERE id = 1`
          yield* Effect.yieldNow()
          yield* sql`UPDATE counter_t SET n = ${row!.n + 1} WHERE id = 1`
        })
      )
      yield* Effect.all(
        Array.from({ length: 50 }, () => increment),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(yield* sql`SELECT n FROM counter_t`, [{ n: 50 }])
    })
  )

  it.effect("streams rows (buffered fallback)", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* Stream.runCollect(sql<{ n: number }>`SELECT generate_series(1, 3) AS n`.stream)
      assert.deepStrictEqual(Chunk.toReadonlyArray(rows), [{ n: 1 }, { n: 2 }, { n: 3 }])
    })
  )
})

describe("PgliteClient lifecycle", () => {
  it.effect("persists an on-disk database across close and reopen, creating the directory", () => {
    const root = mkdtempSync(join(tmpdir(), "accord-pglite-"))
    const dataDir = join(root, "nested", "pglite")
    const open = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
      Effect.scoped(Effect.flatMap(PgliteClient.make({ dataDir }), f)).pipe(Effect.provide(Reactivity.layer))
    return Effect.gen(function* () {
      yield* open((sql) =>
        Effect.zipRight(sql`CREATE TABLE kept (id text primary key)`, sql`INSERT INTO kept VALUES ('survives')`)
      )
      const rows = yield* open((sql) => sql`SELECT id FROM kept`)
      assert.deepStrictEqual(rows, [{ id: "survives" }])
    }).pipe(Effect.ensuring(Effect.sync(() => rmSync(root, { recursive: true, force: true }))))
  })

  it.effect("closes the database when its scope closes", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const client = yield* PgliteClient.make({}).pipe(Scope.extend(scope), Effect.provide(Reactivity.layer))
      yield* client`SELECT 1`
      assert.isFalse(client.pglite.closed)
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(client.pglite.closed)
      const error = yield* Effect.flip(client`SELECT 1`)
      assert.instanceOf(error, SqlError)
    })
  )
})
