/**
 * What the suppression check costs the ingest path: the accept step's synchronous work for one
 * event (`Ingest.prepareEvent`: screening, contract, relevance, normalization), alone and followed
 * by the suppression lookup (`Suppression.make`'s `isSuppressed`) against a workspace holding
 * `BENCH_SUPPRESSED` (10,000) suppressed accounts and as many users; run in alternating slices in
 * the same process, so both sides meet the same load on a shared machine. Printed: ns per event of
 * each side (median over `BENCH_ROUNDS` rounds of 10 paired slices, 7) and the median of the
 * paired slices' ratios: on a shared machine a pair, run milliseconds apart, is steadier than two
 * medians.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { prepareEvent } from "../core/ingest/Ingest.ts"
import * as Suppression from "../core/ingest/Suppression.ts"
import * as MemorySuppressions from "../adapters/memory/SuppressionStore.ts"
import { noCounts, SuppressionStore } from "../core/ports/SuppressionStore.ts"

const suppressed = Number(process.env["BENCH_SUPPRESSED"] ?? 10_000)
const rounds = Number(process.env["BENCH_ROUNDS"] ?? 7)
const perSlice = 20_000
const workspaceId = "ws-bench"
const now = Date.now()

const body = {
  event_name: "checkout_completed",
  account_id: "acct_live_1",
  user_id: "user_live_1",
  timestamp: new Date(now - 60_000).toISOString(),
  event_id: "checkout_completed:cs_123",
  value: 49,
  properties: { plan: "pro", seat_count: 3 }
}

const set = Effect.runSync(
  Effect.gen(function* () {
    const store = yield* SuppressionStore
    for (let i = 0; i < suppressed; i++) {
      for (const kind of ["account", "user"] as const) {
        yield* store.record({
          workspaceId,
          subject: { kind, id: `${kind}_${i}` },
          at: now,
          by: "bench",
          removed: noCounts
        })
      }
    }
    return yield* Suppression.make
  }).pipe(Effect.provide(Layer.sync(SuppressionStore, MemorySuppressions.make)))
)

let sink = 0
const prepareOnly = () => {
  for (let i = 0; i < perSlice; i++) {
    const prepared = prepareEvent(body, { id: `row-${i}`, workspaceId, now })
    if (Either.isRight(prepared)) sink++
  }
}
const prepareAndCheck = () => {
  for (let i = 0; i < perSlice; i++) {
    const prepared = prepareEvent(body, { id: `row-${i}`, workspaceId, now })
    if (Either.isRight(prepared)) {
      const event = prepared.right
      if (!set.isSuppressed(event.stored.workspaceId, event.stored.accountId, event.event.user_id)) sink++
    }
  }
}

const timed = (run: () => void): number => {
  const start = process.hrtime.bigint()
  run()
  return Number(process.hrtime.bigint() - start) / perSlice
}
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

// warm both paths
for (let i = 0; i < 5; i++) {
  prepareOnly()
  prepareAndCheck()
}
const alone: Array<number> = []
const checked: Array<number> = []
const ratios: Array<number> = []
for (let round = 0; round < rounds; round++) {
  for (let slice = 0; slice < 10; slice++) {
    // the order alternates, so neither side always runs first after the other
    const first = slice % 2 === 0
    const a = first ? timed(prepareOnly) : 0
    const b = timed(prepareAndCheck)
    const a2 = first ? a : timed(prepareOnly)
    alone.push(a2)
    checked.push(b)
    ratios.push(b / a2)
  }
}
const base = median(alone)
const withCheck = median(checked)
console.log(
  `suppression check, ${suppressed} suppressed accounts and users in the workspace, ${rounds} rounds of 10 paired slices, node ${process.version}`
)
console.log(`  baseline: prepareEvent alone          ${base.toFixed(0)} ns/event (1.00x)`)
console.log(
  `  prepareEvent + suppression lookup     ${withCheck.toFixed(0)} ns/event (median of paired slices ${median(ratios).toFixed(3)}x)`
)
if (sink === 0) console.log("(no event prepared)")
