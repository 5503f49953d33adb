/**
 * Database pool use on PostgreSQL (`accord_db_pool_connections{state}`), sampled every second while
 * the pool is open: a statement in progress shows as a connection that is not idle.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Prometheus from "../../../adapters/telemetry/Prometheus.ts"
import { databaseUrl, layerFreshSchema, warnIfSkipped } from "../../support/postgres.ts"

const sample = (text: string, line: string): number | undefined => {
  const found = text.split("\n").find((candidate) => candidate.startsWith(line + " "))
  return found === undefined ? undefined : Number(found.slice(line.length + 1))
}

describe("database pool metrics", () => {
  warnIfSkipped("database pool metrics on PostgreSQL")
  it.live.skipIf(databaseUrl === undefined)(
    "PostgreSQL: total, idle and waiting connections appear on the scrape",
    () =>
      Effect.gen(function* () {
        const context = yield* Layer.build(layerFreshSchema(databaseUrl!))
        const sql = yield* Effect.provide(SqlClient.SqlClient, context)
        // Two statements held open for a while: two connections in use while the sampler runs.
        const busy = yield* Effect.fork(
          Effect.all([sql`SELECT pg_sleep(2.6)`, sql`SELECT pg_sleep(2.6)`], { concurrency: 2 })
        )
        yield* Effect.sleep("2200 millis")
        const during = yield* Prometheus.scrape
        yield* Fiber.join(busy)
        const total = sample(during, `accord_db_pool_connections{state="total"}`)
        const idle = sample(during, `accord_db_pool_connections{state="idle"}`)
        assert.isDefined(total, during)
        assert.isDefined(sample(during, `accord_db_pool_connections{state="waiting"}`), during)
        assert.isAtLeast(total! - idle!, 2, during)
      }).pipe(Effect.scoped),
    60_000
  )
})
