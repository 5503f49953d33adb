/**
 * What the workspace-led keys (migration 0028) cost on PostgreSQL, beside the schema before them in
 * the same run: two schemas of one database, one migrated to 0027 and one to 0028, take the same
 * bulk insert of actions with a history entry each (every index of both tables maintained), then
 * the same lookups of an action by its id alone (`ActionLedger.get`'s statement), in alternating
 * order per round. Round 0 warms up and is not counted. Needs DATABASE_URL; the schemas are
 * `accord_keys_bench_<random>_0027`/`_0028`, dropped afterwards.
 */
import { randomUUID } from "node:crypto"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Database from "../adapters/sql/Database.ts"
import * as Migrations from "../adapters/sql/Migrations.ts"
import { migrations } from "../adapters/sql/schema/Migrations.ts"

const databaseUrl = process.env.DATABASE_URL || undefined
const rows = Number(process.env.BENCH_ROWS ?? 20_000)
const lookups = Number(process.env.BENCH_LOOKUPS ?? 2_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 4)

const versions = ["0027", "0028"] as const
type Version = (typeof versions)[number]

const upTo = (last: string): Migrations.Migrations =>
  Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= last))

const inSchema = (url: string, schema: string) => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-csearch_path=${schema}`)
  return Redacted.make(parsed.toString())
}

const clientOf = (url: Redacted.Redacted<string>) =>
  Effect.map(Layer.build(Database.layerPg(url)), (context) => Context.get(context, SqlClient.SqlClient))

/** One round on one schema: the inserts' time and the lookups' time, in milliseconds. */
const round = (sql: SqlClient.SqlClient, version: Version, n: number) =>
  Effect.gen(function* () {
    // Before 0028 the history has no workspace column; after it, the same rows name their workspace.
    const [column, value] = version === "0027" ? ["", ""] : ["workspace_id, ", "'ws-' || (g % 50), "]
    const t0 = performance.now()
    yield* sql.unsafe(`INSERT INTO accord_actions (action_request_id, workspace_id, account_id, connection_id, revision,
        provider_idempotency_key, state, request, created_at, updated_at, version)
      SELECT 'a-${n}-' || g, 'ws-' || (g % 50), 'acct', 'c', 1, 'k-${n}-' || g, 'accepted', '{}'::jsonb, g, g, 1
      FROM generate_series(1, ${rows}) g`)
    yield* sql.unsafe(`INSERT INTO accord_action_history (${column}action_request_id, seq, at, trigger, from_state, to_state,
        detail)
      SELECT ${value}'a-${n}-' || g, 1, g, 'intake', NULL, 'accepted', '{}'::jsonb FROM generate_series(1, ${rows}) g`)
    const t1 = performance.now()
    for (let i = 1; i <= lookups; i += 1) {
      yield* sql`SELECT * FROM accord_actions WHERE action_request_id = ${`a-${n}-${1 + ((i * 7) % rows)}`}`
    }
    return { insert: t1 - t0, lookup: performance.now() - t1 }
  })

const program = (url: string) =>
  Effect.gen(function* () {
    const root = yield* clientOf(Redacted.make(url))
    const prefix = `accord_keys_bench_${randomUUID().replaceAll("-", "").slice(0, 8)}`
    const clients = {} as Record<Version, SqlClient.SqlClient>
    for (const version of versions) {
      const schema = `${prefix}_${version}`
      yield* Effect.acquireRelease(root`CREATE SCHEMA ${root(schema)}`, () =>
        Effect.orDie(root`DROP SCHEMA ${root(schema)} CASCADE`)
      )
      const sql = yield* clientOf(inSchema(url, schema))
      yield* Effect.provideService(
        Migrations.run(version === "0027" ? upTo("0027_imports") : migrations),
        SqlClient.SqlClient,
        sql
      )
      clients[version] = sql
    }
    const totals = { "0027": { insert: 0, lookup: 0 }, "0028": { insert: 0, lookup: 0 } }
    for (let n = 0; n < rounds; n += 1) {
      for (const version of n % 2 === 0 ? versions : [...versions].reverse()) {
        const took = yield* round(clients[version], version, n)
        if (n > 0) {
          totals[version].insert += took.insert
          totals[version].lookup += took.lookup
        }
      }
    }
    const line = (what: string, key: "insert" | "lookup") =>
      console.log(
        `${what}: 0027 schema ${totals["0027"][key].toFixed(0)} ms, 0028 schema ${totals["0028"][key].toFixed(0)} ms` +
          ` (${(totals["0028"][key] / totals["0027"][key]).toFixed(2)}x)`
      )
    console.log(`rounds 1-${rounds - 1} of ${rows} actions with a history entry each, and ${lookups} lookups by id:`)
    line("inserts", "insert")
    line("lookups", "lookup")
    for (const version of versions) {
      const plan = yield* clients[version].unsafe<Record<string, string>>(
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM accord_actions WHERE action_request_id = 'a-1-7'"
      )
      console.log(`${version} schema, lookup plan: ${plan.map((row) => Object.values(row).join("")).join(" / ")}`)
    }
  })

if (databaseUrl === undefined) {
  console.log("bench:keys needs DATABASE_URL (PostgreSQL)")
} else {
  Effect.runPromise(Effect.scoped(program(databaseUrl))).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}
