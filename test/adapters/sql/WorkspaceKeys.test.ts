/**
 * The schema distributes by workspace (docs/scaling.md): after every migration, on PGlite and on
 * PostgreSQL, each primary key and unique index of a table with a `workspace_id` column leads with
 * it, read from the catalog; every table is named in docs/scaling.md with its placement; the
 * statements that find a row without naming its workspace still read an index; and the migration
 * that rebuilt the keys keeps the rows of a database that held data before it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Migrations from "../../../adapters/sql/Migrations.ts"
import { migrations } from "../../../adapters/sql/schema/Migrations.ts"
import { documentedPlacements } from "../../support/citus.ts"
import { layerEmpty } from "../../support/pgliteTemplate.ts"
import { databaseUrl, layerFreshSchema, warnIfSkipped } from "../../support/postgres.ts"

/**
 * Tables whose keys are not checked, each with why; none today. An exemption must name a table that
 * exists, so a rename never leaves a table unchecked.
 */
const exempt: ReadonlyMap<string, string> = new Map()

/** The tables without `workspace_id`: reference tables on a distributed PostgreSQL (docs/scaling.md). */
const referenceTables: ReadonlyArray<string> = [
  "accord_capabilities",
  "accord_completions",
  "accord_master_key_check",
  "accord_meta",
  "accord_migrations",
  "accord_nonces",
  "accord_outbox",
  "accord_secrets"
]

interface TableRow {
  readonly name: string
  readonly has_workspace: boolean
}

/** This schema's tables (partitions are their parent's), with whether they hold `workspace_id`. */
const tables = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<TableRow>`
    SELECT c.relname AS name, EXISTS (
      SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped
    ) AS has_workspace
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
    ORDER BY c.relname`.withoutTransform
)

interface UniqueRow {
  readonly table_name: string
  readonly index_name: string
  readonly leading: string | null
}

/**
 * Every unique index (primary keys and unique constraints are backed by one) of a table with
 * `workspace_id` whose first column is not `workspace_id` (an expression's first column is none).
 */
const keysNotLedByWorkspace = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<UniqueRow>`
    SELECT t.relname AS table_name, i.relname AS index_name, a.attname AS leading
    FROM pg_index x
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace
      LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
    WHERE n.nspname = current_schema() AND x.indisunique AND NOT t.relispartition
      AND EXISTS (SELECT 1 FROM pg_attribute w WHERE w.attrelid = t.oid AND w.attname = 'workspace_id' AND NOT w.attisdropped)
      AND a.attname IS DISTINCT FROM 'workspace_id'
    ORDER BY t.relname, i.relname`.withoutTransform
)

/**
 * The statements that find a row without its workspace, in the stores' shape, and the index each
 * must read once sequential scans are priced out. The index is named: with sequential scans off, a
 * key led by `workspace_id` could still be scanned whole for a condition on its second column.
 */
const lookupsWithoutWorkspace: ReadonlyArray<readonly [statement: string, index: string]> = [
  ["SELECT * FROM accord_api_keys WHERE secret_hash = 'h'", "accord_api_keys_secret_hash"],
  ["SELECT * FROM accord_runtime_sessions WHERE token_hash = 'h'", "accord_runtime_sessions_token_hash"],
  ["SELECT * FROM accord_runtime_sessions WHERE session_id = 's'", "accord_runtime_sessions_session"],
  ["SELECT * FROM accord_approvals WHERE approval_id = 'a'", "accord_approvals_approval"],
  ["SELECT * FROM accord_actions WHERE action_request_id = 'a'", "accord_actions_action"],
  ["SELECT * FROM accord_actions WHERE provider_idempotency_key = 'k'", "accord_actions_provider_idempotency_key"],
  [
    `SELECT h.* FROM accord_actions a
       JOIN accord_action_history h ON h.workspace_id = a.workspace_id AND h.action_request_id = a.action_request_id
     WHERE a.action_request_id = 'a' ORDER BY h.seq`,
    "accord_action_history_pkey"
  ],
  ["SELECT * FROM accord_connections WHERE connection_id = 'c'", "accord_connections_connection"],
  [
    "SELECT * FROM accord_connection_revisions WHERE connection_id = 'c' ORDER BY revision DESC LIMIT 1",
    "accord_connection_revisions_connection"
  ],
  [
    "SELECT seq FROM accord_connection_audit WHERE connection_id = 'c' ORDER BY seq",
    "accord_connection_audit_connection"
  ]
]

const planOf = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* sql.unsafe("SET LOCAL enable_seqscan = off")
        const rows = yield* sql.unsafe<Record<string, string>>(`EXPLAIN ${statement}`)
        return rows.map((row) => Object.values(row).join("")).join("\n")
      })
    )
  )

/** The migrations up to and including `last`. */
const upTo = (last: string): Migrations.Migrations =>
  Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= last))

/** Rows in every table 0028 rebuilds, for two workspaces, as a database before it held them. */
const plantBefore0028 = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.forEach(
    ["ws-a", "ws-b"],
    (ws) =>
      Effect.gen(function* () {
        yield* sql`INSERT INTO accord_workspaces (workspace_id, created_at) VALUES (${ws}, 1)`
        yield* sql`INSERT INTO accord_api_keys (id, workspace_id, scope, name, secret_hash, created_at)
          VALUES (${`key-${ws}`}, ${ws}, 'admin', 'first', ${`hash-${ws}`}, 2)`
        yield* sql`INSERT INTO accord_connections (connection_id, workspace_id, created_at)
          VALUES (${`conn-${ws}`}, ${ws}, 3)`
        yield* sql`INSERT INTO accord_connection_revisions (connection_id, revision, endpoint, state, created_at)
          VALUES (${`conn-${ws}`}, 0, 'https://a.example/x', 'replaced', 4),
                 (${`conn-${ws}`}, 1, 'https://b.example/x', 'active', 5)`
        yield* sql`INSERT INTO accord_connection_audit (connection_id, revision, at, event, detail)
          VALUES (${`conn-${ws}`}, 0, 6, 'retired', '{"reason":"replaced"}'::jsonb)`
        yield* sql`INSERT INTO accord_actions (action_request_id, workspace_id, account_id, connection_id, revision,
            provider_idempotency_key, state, request, created_at, updated_at, version)
          VALUES (${`act-${ws}`}, ${ws}, 'acct_1', ${`conn-${ws}`}, 1, ${`pik-${ws}`}, 'accepted', '{"a":1}'::jsonb, 7, 8, 2)`
        yield* sql`INSERT INTO accord_action_history (action_request_id, seq, at, trigger, from_state, to_state, detail)
          VALUES (${`act-${ws}`}, 1, 7, 'intake', NULL, 'dispatching', '{}'::jsonb),
                 (${`act-${ws}`}, 2, 8, 'acknowledgement', 'dispatching', 'accepted', '{}'::jsonb)`
        yield* sql`INSERT INTO accord_runtime_sessions (session_id, workspace_id, account_id, subject, role, authorities,
            token_hash, issued_by, created_at, expires_at)
          VALUES (${`rs-${ws}`}, ${ws}, 'acct_1', 'user_1', 'owner', '[]'::jsonb, ${`token-${ws}`}, 'admin', 9, 10)`
        yield* sql`INSERT INTO accord_approvals (approval_id, workspace_id, account_id, token_hash, requester, request,
            state, revision, expires_at, created_at)
          VALUES (${`ap-${ws}`}, ${ws}, 'acct_1', ${`ap-token-${ws}`}, '{}'::jsonb, '{}'::jsonb, 'pending', 0, 11, 12)`
      }),
    { discard: true }
  )
)

/** What 0028 adds to each table it rebuilds: the columns a row held before it are compared. */
const rebuilt: ReadonlyMap<string, ReadonlyArray<string>> = new Map([
  ["accord_api_keys", []],
  ["accord_connections", []],
  ["accord_connection_revisions", ["workspace_id"]],
  ["accord_connection_audit", ["workspace_id"]],
  ["accord_actions", []],
  ["accord_action_history", ["workspace_id"]],
  ["accord_runtime_sessions", []],
  ["accord_approvals", []]
])

const rowsOf = (table: string, without: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql.unsafe<{ readonly row: string }>(
        `SELECT (to_jsonb(t)${without.map((column) => ` - '${column}'`).join("")})::text AS row
         FROM ${table} t ORDER BY 1`
      ),
      (rows) => rows.map((r) => r.row)
    )
  )

const snapshot = (added: boolean) =>
  Effect.forEach([...rebuilt], ([table, columns]) => rowsOf(table, added ? columns : []))

const suite = (fresh: () => Layer.Layer<SqlClient.SqlClient, SqlError>) => {
  it.effect(
    "every key of a table with workspace_id leads with it; the others are reference tables, all in docs/scaling.md",
    () =>
      Effect.gen(function* () {
        yield* Migrations.run(migrations)
        const all = yield* tables
        const violations = (yield* keysNotLedByWorkspace).filter((row) => !exempt.has(row.table_name))
        assert.deepStrictEqual(violations, [])
        // An exemption names a table that exists: a rename must not leave a table unchecked.
        for (const table of exempt.keys()) assert.isTrue(all.some((t) => t.name === table && t.has_workspace))
        assert.deepStrictEqual(
          all.filter((t) => !t.has_workspace).map((t) => t.name),
          referenceTables
        )
        const documented = documentedPlacements()
        assert.deepStrictEqual(
          all.map((t) => [t.name, documented.get(t.name) ?? "missing from docs/scaling.md"]),
          all.map((t) => [t.name, t.has_workspace ? "distributed" : "reference"])
        )
        assert.deepStrictEqual(
          [...documented.keys()].filter((name) => !all.some((t) => t.name === name)),
          [],
          "docs/scaling.md names a table the schema does not have"
        )
      }).pipe(Effect.provide(fresh()))
  )

  it.effect("the lookups by an id or a hash alone read an index", () =>
    Effect.gen(function* () {
      yield* Migrations.run(migrations)
      for (const [statement, index] of lookupsWithoutWorkspace) {
        const plan = yield* planOf(statement)
        assert.match(
          plan,
          new RegExp(`(Index (Only )?Scan (Backward )?using|Bitmap Index Scan on) ${index} `),
          `${statement}\n${plan}`
        )
        assert.notInclude(plan, "Seq Scan", `${statement}\n${plan}`)
      }
    }).pipe(Effect.provide(fresh()))
  )

  it.effect("0028 keeps every row of a database migrated to 0027 and gives each child its parent's workspace", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      assert.strictEqual((yield* Migrations.run(upTo("0027_imports"))).at(-1)?.name, "imports")
      yield* plantBefore0028
      const before = yield* snapshot(false)
      assert.deepStrictEqual(
        (yield* Migrations.run(upTo("0028_workspace_keys"))).map((m) => m.name),
        ["workspace_keys"]
      )
      assert.deepStrictEqual(yield* snapshot(true), before)

      const orphans = yield* sql<{ readonly n: number }>`
        SELECT (SELECT count(*) FROM accord_connection_revisions r JOIN accord_connections c USING (connection_id)
                 WHERE r.workspace_id <> c.workspace_id)
             + (SELECT count(*) FROM accord_connection_audit e JOIN accord_connections c USING (connection_id)
                 WHERE e.workspace_id <> c.workspace_id)
             + (SELECT count(*) FROM accord_action_history h JOIN accord_actions a USING (action_request_id)
                 WHERE h.workspace_id <> a.workspace_id) AS n`
      assert.strictEqual(Number(orphans[0]!.n), 0)
      assert.deepStrictEqual(
        yield* sql<{ readonly workspace_id: string }>`
          SELECT workspace_id FROM accord_action_history WHERE action_request_id = 'act-ws-b'`.withoutTransform,
        [{ workspace_id: "ws-b" }, { workspace_id: "ws-b" }]
      )

      // The audit trail is append-only again once the copy is done.
      const changed = yield* Effect.exit(sql`UPDATE accord_connection_audit SET event = 'forged'`)
      assert.isTrue(Exit.isFailure(changed))
      // A child names its parent with the workspace: one in another workspace is refused.
      const crossed = yield* Effect.exit(
        sql`INSERT INTO accord_action_history (workspace_id, action_request_id, seq, at, trigger, from_state, to_state, detail)
            VALUES ('ws-a', 'act-ws-b', 3, 9, 'intake', NULL, 'accepted', '{}'::jsonb)`
      )
      assert.isTrue(Exit.isFailure(crossed))
      // Uniqueness is per workspace: a second key with one workspace's hash is refused there only.
      const again = yield* Effect.exit(
        sql`INSERT INTO accord_api_keys (id, workspace_id, scope, secret_hash, created_at)
            VALUES ('key-2', 'ws-a', 'admin', 'hash-ws-a', 13)`
      )
      assert.isTrue(Exit.isFailure(again))
      yield* sql`INSERT INTO accord_api_keys (id, workspace_id, scope, secret_hash, created_at)
          VALUES ('key-ws-a', 'ws-b', 'admin', 'hash-ws-a', 13)`
    }).pipe(Effect.provide(fresh()))
  )
}

describe("workspace-led keys on PGlite", { timeout: 120_000 }, () => {
  suite(layerEmpty)
})

warnIfSkipped("workspace-led keys on PostgreSQL")

describe.skipIf(databaseUrl === undefined)("workspace-led keys on PostgreSQL", { timeout: 120_000 }, () => {
  suite(() => layerFreshSchema(databaseUrl!))
})
