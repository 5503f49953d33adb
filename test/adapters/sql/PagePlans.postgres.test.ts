/**
 * A page statement is planned once per connection, not once per page: its `LIMIT` is a literal
 * (`SqlSupport.page`), so PostgreSQL costs the prepared statement's generic plan right and runs it
 * after the first executions. With `LIMIT $n` every page of the partitioned events table was
 * planned again over every partition (docs/decisions.md, "Page limits").
 *
 * One connection (pool size 1), so `pg_prepared_statements` (which shows the session's own) sees
 * every execution; the pages asked for are those the events route asks (its page plus one row).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Database from "../../../adapters/sql/Database.ts"
import * as EventStoreSql from "../../../adapters/sql/EventStore.ts"
import * as Migrations from "../../../adapters/sql/Migrations.ts"
import { migrations } from "../../../adapters/sql/schema/Migrations.ts"
import { EventStore } from "../../../core/ports/EventStore.ts"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../../support/postgres.ts"
import { uid } from "../../support/storage.ts"

warnIfSkipped("page statement plans")

const T = Date.UTC(2026, 0, 15)

describe.skipIf(databaseUrl === undefined)("page statements on PostgreSQL", () => {
  const layer = Layer.unwrapScoped(
    Effect.map(freshSchemaUrl(databaseUrl!), (schema) =>
      EventStoreSql.layer.pipe(
        Layer.provideMerge(Layer.provideMerge(Migrations.layer(migrations), Database.layerPg(schema, { poolSize: 1 })))
      )
    )
  )

  it.layer(layer)((it) => {
    it.effect("a page of events runs one generic plan after its first executions, and keeps its rows", () =>
      Effect.gen(function* () {
        const store = yield* EventStore
        const sql = yield* SqlClient.SqlClient
        const workspaceId = uid("ws-")
        // Enough rows that a plan for a tenth of them (what `LIMIT $n` is costed for) costs more than
        // planning the page again: PostgreSQL then never picks that generic plan.
        yield* store.append([
          {
            id: "evt-template",
            workspaceId,
            eventId: null,
            accountId: "acct_0",
            eventName: "feature_used",
            occurredAt: T,
            receivedAt: T,
            payloadHash: "a".repeat(64),
            body: {}
          }
        ])
        yield* sql`INSERT INTO accord_events (id, workspace_id, event_id, account_id, event_name, occurred_at,
            received_at, payload_hash, body)
          SELECT 'evt-' || g, ${workspaceId}, NULL, 'acct_' || (g % 3), 'feature_used', ${T}::int8 + g * 60000,
            ${T}, ${"a".repeat(64)}, '{}'::jsonb
          FROM generate_series(1, 30000) AS g`
        yield* sql`ANALYZE accord_events`
        for (let i = 0; i < 12; i++) {
          const page = yield* store.list({ workspaceId, accountId: `acct_${i % 3}`, limit: 51 })
          assert.strictEqual(page.length, 51)
          assert.strictEqual(page[0]!.accountId, `acct_${i % 3}`)
        }
        assert.strictEqual((yield* store.list({ workspaceId, limit: 51 })).length, 51)
        const [plans] = yield* sql<{ readonly generic_plans: string; readonly custom_plans: string }>`
          SELECT generic_plans, custom_plans FROM pg_prepared_statements
          WHERE statement LIKE '%FROM accord_events WHERE%account_id = $2%ORDER BY occurred_at DESC%'`
        assert.isDefined(
          plans,
          `the page statement was not prepared: ${(yield* sql<{ readonly statement: string }>`SELECT statement FROM pg_prepared_statements`).map((r) => r.statement).join(" | ")}`
        )
        // PostgreSQL plans the first five executions for their values, then compares.
        assert.isAtLeast(Number(plans!.generic_plans), 12 - 5, `custom plans: ${plans!.custom_plans}`)
      })
    )
  })
})
