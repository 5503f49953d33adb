/**
 * The one compare-and-set loop: the first round uses the action in hand, a concurrent change makes
 * it read again and decide again, and it gives up after `applyRounds` rounds.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ActionState } from "../../../../core/connector/ActionState.ts"
import { answer, applyRounds, applyTrigger, stepDetail } from "../../../../core/connector/internal/applyTrigger.ts"
import { make as makeMemory } from "../../../../adapters/memory/ActionLedger.ts"
import { MemoryOutboxTable } from "../../../../adapters/memory/Outbox.ts"
import type { ActionLedgerService, ActionRecord } from "../../../../core/ports/ActionLedger.ts"
import type { StorageError } from "../../../../core/ports/StorageError.ts"

const T = 1_700_000_000_000

/** A memory ledger holding one `dispatching` action, counting reads. */
const setup = Effect.gen(function* () {
  const base = makeMemory(new MemoryOutboxTable())
  let reads = 0
  const ledger: ActionLedgerService = { ...base, get: (id) => Effect.suspend(() => (reads++, base.get(id))) }
  yield* base.create({
    record: {
      actionRequestId: "act_1",
      workspaceId: "ws",
      accountId: "acct",
      connectionId: "conn",
      revision: 0,
      providerIdempotencyKey: "key_1",
      state: "dispatching",
      request: null,
      acknowledgement: null,
      sealedContinuation: null,
      createdAt: T
    },
    history: { at: T, trigger: "intake", detail: null }
  })
  const record = Option.getOrThrow(yield* base.get("act_1"))
  return { base, ledger, record, reads: () => reads }
})

/** Writes the step's target state (or keeps the state) with a `test` history entry. */
const write = (
  ledger: ActionLedgerService,
  record: ActionRecord | undefined,
  onRound?: (round: number) => Effect.Effect<void, StorageError>
) =>
  applyTrigger<ActionState, never, never>({
    ledger,
    actionRequestId: "act_1",
    ...(record !== undefined ? { record } : {}),
    trigger: { _tag: "AckAccepted" },
    decide: (current, step, { round }) =>
      Effect.gen(function* () {
        if (onRound !== undefined) yield* onRound(round)
        if (step?._tag !== "Move") return answer(current.state)
        const toState = step.to
        return {
          _tag: "Write" as const,
          write: { toState, history: { trigger: "test", detail: { round, ...stepDetail(step) } } },
          settle: () => Effect.succeed(toState)
        }
      })
  })

describe("applyTrigger", () => {
  it.effect("the first round uses the action in hand: one write, no read", () =>
    Effect.gen(function* () {
      const { ledger, reads, record } = yield* setup
      assert.strictEqual(yield* write(ledger, record), "accepted")
      assert.strictEqual(reads(), 0)
      const history = yield* ledger.history("act_1")
      assert.deepStrictEqual(
        history.map((h) => [h.trigger, h.fromState, h.toState, h.at]),
        [
          ["intake", null, "dispatching", T],
          ["test", "dispatching", "accepted", 0]
        ]
      )
    })
  )

  it.effect("without an action in hand it reads first", () =>
    Effect.gen(function* () {
      const { ledger, reads } = yield* setup
      assert.strictEqual(yield* write(ledger, undefined), "accepted")
      assert.strictEqual(reads(), 1)
    })
  )

  it.effect("after a concurrent change it reads again and decides on the new state", () =>
    Effect.gen(function* () {
      const { base, ledger, reads, record } = yield* setup
      // Another writer moves the action to unknown_outcome between the read and the write.
      const concurrent = (round: number) =>
        round === 0
          ? Effect.asVoid(
              base.transition({
                actionRequestId: "act_1",
                expectedVersion: 1,
                toState: "unknown_outcome",
                at: T,
                history: { at: T, trigger: "other", detail: null }
              })
            )
          : Effect.void
      assert.strictEqual(yield* write(ledger, record, concurrent), "accepted")
      assert.strictEqual(reads(), 1)
      const last = (yield* ledger.history("act_1")).at(-1)!
      assert.deepStrictEqual([last.fromState, last.toState, last.detail], ["unknown_outcome", "accepted", { round: 1 }])
    })
  )

  it.effect("an answer writes nothing", () =>
    Effect.gen(function* () {
      const { ledger, record } = yield* setup
      const accepted = { ...record, state: "verified" }
      assert.strictEqual(yield* write(ledger, accepted), "verified")
      assert.strictEqual((yield* ledger.history("act_1")).length, 1)
    })
  )

  it.effect(`gives up after ${applyRounds} rounds of concurrent changes, and on a missing action`, () =>
    Effect.gen(function* () {
      const { ledger, record, reads } = yield* setup
      const alwaysStale: ActionLedgerService = { ...ledger, transition: () => Effect.succeed({ _tag: "Stale" }) }
      assert.strictEqual(yield* write(alwaysStale, record), undefined)
      assert.strictEqual(reads(), applyRounds - 1)
      const empty = makeMemory(new MemoryOutboxTable())
      assert.strictEqual(yield* write(empty, undefined), undefined)
    })
  )

  it("stepDetail records passed-through states, a reversal, or why nothing changed", () => {
    assert.deepStrictEqual(stepDetail(undefined), {})
    assert.deepStrictEqual(
      stepDetail({
        _tag: "Move",
        to: "verified",
        passedThrough: ["accepted", "pending"],
        queueReconciliation: false,
        appendReversal: false
      }),
      { passedThrough: ["accepted", "pending"] }
    )
    assert.deepStrictEqual(
      stepDetail({ _tag: "Move", to: "reversed", passedThrough: [], queueReconciliation: false, appendReversal: true }),
      { reversal: true }
    )
    assert.deepStrictEqual(stepDetail({ _tag: "Stay", reason: "already_verified", queueReconciliation: false }), {
      unchanged: "already_verified"
    })
  })
})
