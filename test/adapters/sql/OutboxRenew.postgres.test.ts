/**
 * The lease heartbeat on PostgreSQL never waits for a row another writer holds. Waiting, with rows
 * of its own already updated, the renewal (`Outbox.renew`, every third of a lease) deadlocked
 * against the batched transitions that complete the same outbox rows in another order: PostgreSQL
 * found that deadlock five times in eighteen dispatch benchmark runs, stalled both statements for
 * its `deadlock_timeout` and aborted one (docs/decisions.md, "Renewal never waits").
 *
 * Here a transaction holds one leased item's row, as a completion in flight does, while the other
 * item is free. The renewal must answer at once with the free item only, not wait: a renewal seen
 * waiting for the holder's transaction fails the test (and the holder is let go either way).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as SqlStorage from "../../../adapters/sql/Storage.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import { databaseUrl, layerFreshSchema, warnIfSkipped } from "../../support/postgres.ts"
import { cipherLayer, uid } from "../../support/storage.ts"

warnIfSkipped("outbox renewal locks")

const T = 1_700_000_000_000

describe.skipIf(databaseUrl === undefined)("Outbox.renew on PostgreSQL", () => {
  const layer = () =>
    SqlStorage.layer.pipe(Layer.provideMerge(Layer.merge(layerFreshSchema(databaseUrl!), cipherLayer)))

  it.live(
    "renews the free items at once and skips one another transaction holds",
    () =>
      Effect.gen(function* () {
        const outbox = yield* Outbox
        const sql = yield* SqlClient.SqlClient
        const kind = uid("kind-")
        const heldId = uid("item-")
        const freeId = uid("item-")
        yield* outbox.enqueue({
          id: heldId,
          kind,
          dedupeKey: uid("held-"),
          payload: {},
          nextAttemptAt: T,
          createdAt: T
        })
        yield* outbox.enqueue({
          id: freeId,
          kind,
          dedupeKey: uid("free-"),
          payload: {},
          nextAttemptAt: T + 1,
          createdAt: T
        })
        const leased = yield* outbox.lease({ kinds: [kind], owner: "w1", now: T + 10, leaseMillis: 1_000, limit: 10 })
        assert.deepStrictEqual(
          leased.map((item) => item.id),
          [heldId, freeId]
        )

        // Another writer locks `held`'s row and keeps its transaction open until told.
        const locked = yield* Deferred.make<number>()
        const release = yield* Deferred.make<void>()
        const holder = yield* Effect.fork(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`SELECT id FROM accord_outbox WHERE id = ${heldId} FOR UPDATE`
              const [row] = yield* sql<{ readonly pid: number }>`SELECT pg_backend_pid() AS pid`
              yield* Deferred.succeed(locked, row!.pid)
              yield* Deferred.await(release)
            })
          )
        )
        const holderPid = yield* Deferred.await(locked)

        const renewing = yield* Effect.fork(
          outbox.renew({ ids: [heldId, freeId], owner: "w1", now: T + 500, leaseMillis: 1_000 })
        )
        // A renewal waiting for the holder is a backend the holder blocks.
        const waitingForHolder = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE ${holderPid} = ANY(pg_blocking_pids(pid))`.pipe(
          Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (rows) => rows[0]!.n > 0 })
        )
        const outcome = yield* Effect.raceFirst(
          Effect.map(Fiber.join(renewing), (renewed) => ({ _tag: "answered" as const, renewed })),
          Effect.as(waitingForHolder, { _tag: "waited" as const })
        ).pipe(Effect.ensuring(Deferred.succeed(release, undefined)))
        yield* Fiber.join(holder)

        assert.deepStrictEqual(outcome, { _tag: "answered", renewed: [freeId] })
        const expiry = (id: string) =>
          Effect.map(
            sql<{ readonly e: string }>`SELECT lease_expires_at::text AS e FROM accord_outbox WHERE id = ${id}`,
            (rows) => Number(rows[0]!.e)
          )
        assert.strictEqual(yield* expiry(freeId), T + 1_500)
        assert.strictEqual(yield* expiry(heldId), T + 1_010)
        // Once the holder is gone, the next beat renews the skipped item too.
        const again = yield* outbox.renew({ ids: [heldId, freeId], owner: "w1", now: T + 600, leaseMillis: 1_000 })
        assert.deepStrictEqual([...again].sort(), [heldId, freeId].sort())
        assert.strictEqual(yield* expiry(heldId), T + 1_600)
      }).pipe(Effect.provide(layer())),
    30_000
  )
})
