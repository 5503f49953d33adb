/**
 * Resolves racing each other authorize at most one action: 50 concurrent
 * approves of one prepared approval, and 50 mixed approves and denies, on PostgreSQL (and PGlite).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ApprovalStore } from "../../../core/ports/ApprovalStore.ts"
import { storageVariants } from "../../support/storage.ts"
import { connect } from "../connector/dispatch/support.ts"
import { actionsFor, approveAs, ask, denyAs, layerFor, owner, prepareAs, requester } from "./support.ts"

const outcome = <A, E extends { readonly _tag: string; readonly reason?: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.match(effect, { onFailure: (e) => e.reason ?? e._tag, onSuccess: () => "won" })

for (const storage of storageVariants.filter((v) => v.name !== "memory")) {
  describe.skipIf(!storage.available)(`approval resolves racing (${storage.name})`, () => {
    it.live(
      "50 concurrent approves: exactly one authorizes, the rest are already resolved",
      () =>
        Effect.gen(function* () {
          yield* connect("https://customer.example/connector")
          const billing = yield* owner()
          const approval = yield* ask(yield* requester())
          const review = yield* prepareAs(billing, approval)
          const results = yield* Effect.all(
            Array.from({ length: 50 }, () => outcome(approveAs(billing, approval, review))),
            { concurrency: 50 }
          )
          assert.strictEqual(results.filter((r) => r === "won").length, 1, JSON.stringify(results))
          assert.deepStrictEqual([...new Set(results.filter((r) => r !== "won"))], ["approval_already_resolved"])
          assert.strictEqual(yield* actionsFor(), 1)
          assert.strictEqual(
            Option.getOrThrow(yield* (yield* ApprovalStore).get(approval.approvalId)).state,
            "approved"
          )
        }).pipe(Effect.provide(layerFor(storage))),
      60_000
    )

    it.live(
      "25 approves racing 25 denies: one wins; an action exists exactly when an approve won",
      () =>
        Effect.gen(function* () {
          yield* connect("https://customer.example/connector")
          const billing = yield* owner()
          const approval = yield* ask(yield* requester())
          const review = yield* prepareAs(billing, approval)
          const racers = Array.from({ length: 50 }, (_, i) =>
            i % 2 === 0
              ? Effect.map(outcome(approveAs(billing, approval, review)), (r) => (r === "won" ? "approved" : r))
              : Effect.map(outcome(denyAs(billing, approval)), (r) => (r === "won" ? "denied" : r))
          )
          const results = yield* Effect.all(racers, { concurrency: 50 })
          const winners = results.filter((r) => r === "approved" || r === "denied")
          assert.strictEqual(winners.length, 1, JSON.stringify(results))
          const state = Option.getOrThrow(yield* (yield* ApprovalStore).get(approval.approvalId)).state
          assert.strictEqual(state, winners[0])
          assert.strictEqual(yield* actionsFor(), state === "approved" ? 1 : 0)
        }).pipe(Effect.provide(layerFor(storage))),
      60_000
    )
  })
}
