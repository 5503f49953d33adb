/**
 * The placement of every table on a distributed PostgreSQL (docs/scaling.md's table), and, for a
 * run against Citus (`ACCORD_TEST_CITUS=1`, with `DATABASE_URL` naming its coordinator), the
 * statements that place a migrated schema's tables so: each `distributed` table by `workspace_id`,
 * co-located with `accord_workspaces`, each `reference` table copied to every node. A table is
 * placed after every table its foreign keys reference, as Citus requires.
 */
import { readFileSync } from "node:fs"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Whether the PostgreSQL of this run is a Citus coordinator whose test schemas are distributed. */
export const enabled: boolean = process.env["ACCORD_TEST_CITUS"] === "1"

/** docs/scaling.md's placement table: `| \`accord_x\` | distributed | … |` rows, by table. */
export const documentedPlacements = (): ReadonlyMap<string, "distributed" | "reference"> => {
  const text = readFileSync(new URL("../../docs/scaling.md", import.meta.url), "utf8")
  const rows = [...text.matchAll(/^\| `(accord_[a-z_]+)` \| (distributed|reference) \|/gm)]
  return new Map(rows.map((row) => [row[1]!, row[2] as "distributed" | "reference"]))
}

/** Places every documented table of the current schema, the referenced ones first. */
export const distribute = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const placements = documentedPlacements()
  const references = yield* sql<{ readonly child: string; readonly parent: string }>`
    SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent
    FROM pg_constraint c
    WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace AND c.conrelid <> c.confrelid`
  const placed = new Set<string>()
  const place = (table: string): Effect.Effect<void, SqlError> =>
    Effect.gen(function* () {
      if (placed.has(table)) return
      placed.add(table)
      for (const reference of references) if (reference.child === table) yield* place(reference.parent)
      const placement = placements.get(table)
      if (placement === "reference") yield* sql`SELECT create_reference_table(${table})`
      else if (placement === "distributed" && table === "accord_workspaces")
        yield* sql`SELECT create_distributed_table(${table}, 'workspace_id')`
      else if (placement === "distributed") {
        yield* place("accord_workspaces")
        yield* sql`SELECT create_distributed_table(${table}, 'workspace_id', colocate_with => 'accord_workspaces')`
      }
    })
  for (const table of placements.keys()) yield* place(table)
})

/** After the migrations, on a Citus run: the current schema's tables placed (`distribute`). */
export const layerDistribute: Layer.Layer<never, SqlError, SqlClient.SqlClient> = enabled
  ? Layer.effectDiscard(distribute)
  : Layer.empty
