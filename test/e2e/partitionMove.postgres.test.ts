/**
 * A backfilled month moved out of the default partition while the server ingests more events of
 * that month, on PostgreSQL (skipped without DATABASE_URL): the retention sweep moves the month
 * into a partition of its own while 200 events of the same month arrive over HTTP; every one is
 * answered 202, and afterwards the month's partition holds all of them and the default partition
 * none. Whether an insert raced the attach (PostgreSQL then refuses it and ingest writes it again
 * on its own) depends on timing; what is asserted holds either way.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { monthOf } from "../../adapters/sql/EventPartitions.ts"
import { EventStore, type StoredEvent } from "../../core/ports/EventStore.ts"
import { workspaceId } from "../core/connector/dispatch/support.ts"
import { request } from "../support/http.ts"
import { warnIfSkipped } from "../support/postgres.ts"
import { storageVariants, uid } from "../support/storage.ts"
import { admin, bootService } from "./support.ts"

warnIfSkipped("a backfilled month moved while ingest goes on")
const postgres = storageVariants.find((v) => v.name === "postgres")!

/** March 2004: a month no other test of this file writes to, long before any prepared one. */
const march2004 = Date.UTC(2004, 2, 1)

const seeded = (i: number): StoredEvent => ({
  id: uid("evt-"),
  workspaceId,
  eventId: `seed:${i}`,
  accountId: `acct_${i % 50}`,
  eventName: "feature_used",
  occurredAt: march2004 + i * 60_000,
  receivedAt: march2004 + i * 60_000,
  payloadHash: "a".repeat(64),
  body: { event_name: "feature_used" }
})

describe.skipIf(!postgres.available)("a backfilled month moved while ingest goes on (postgres)", () => {
  it.live(
    "every event of the month sent during the move is answered 202 and ends in the month's partition",
    () =>
      Effect.gen(function* () {
        const context = yield* Layer.build(postgres.sqlLayer!())
        const sql = Context.get(context, SqlClient.SqlClient)
        const store = Context.get(context, EventStore)
        const service = yield* bootService({ storage: { ...postgres, layer: () => Layer.succeedContext(context) } })
        const key = yield* request(`${service.ws}/api-keys`, {
          method: "POST",
          headers: admin,
          body: JSON.stringify({ scope: "ingest" })
        })
        assert.strictEqual(key.status, 201, key.text)
        const secret = (key.json as { secret: string }).secret
        // Enough rows that moving them takes a while.
        const seedCount = 20_000
        for (let from = 0; from < seedCount; from += 2_000) {
          yield* store.append(Array.from({ length: 2_000 }, (_, i) => seeded(from + i)))
        }
        const month = monthOf(march2004)
        const sweep = yield* Effect.fork(store.sweep({ now: Date.now(), defaultRetention: "forever" }))
        const replies = yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          (i) =>
            request(`${service.base}/api/events/ingest`, {
              method: "POST",
              headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
              body: JSON.stringify({
                event_name: "feature_used",
                account_id: `acct_${i % 50}`,
                event_id: `during-move:${i}`,
                timestamp: new Date(march2004 + 86_400_000 * 20 + i * 1_000).toISOString(),
                semantic_type: "usage",
                event_kind: "product_action",
                value: 1,
                properties: { feature_key: "reports" }
              })
            }),
          { concurrency: 8 }
        )
        const swept = yield* Fiber.join(sweep)
        assert.include(swept.createdPartitions, month.name)
        assert.deepStrictEqual(
          replies.filter((reply) => reply.status !== 202).map((reply) => `${reply.status} ${reply.text}`),
          []
        )
        const [inMonth] = yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM ${sql(month.name)}
          WHERE workspace_id = ${workspaceId}`
        assert.strictEqual(Number(inMonth!.n), seedCount + 200)
        const [leftBehind] = yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM accord_events_default
          WHERE occurred_at >= ${month.start} AND occurred_at < ${month.end}`
        assert.strictEqual(Number(leftBehind!.n), 0)
      }).pipe(Effect.scoped),
    120_000
  )
})
