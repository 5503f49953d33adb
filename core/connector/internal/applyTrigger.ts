/**
 * The one compare-and-set loop of the connector domain: starting from the action in hand, compute
 * the step a trigger takes (`ActionState.transition`), let the caller decide what to write, write it
 * with `expectedVersion`, and after a concurrent change (`Stale`) read the action again and decide
 * again, for a bounded number of rounds. The dispatcher (acknowledgements, ambiguous deliveries,
 * abandonment), the completion intake and the reconciler (verdicts, abandonment) all write through it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ActionLedgerService, ActionRecord, CompletionClaim, TransitionResult } from "../../ports/ActionLedger.ts"
import type { NewOutboxItem } from "../../ports/Outbox.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { type ActionState, isActionState, type Transition, transition, type Trigger } from "../ActionState.ts"

/**
 * How many times a write is tried before the caller is told the action kept changing.
 */
export const applyRounds = 5

/**
 * An action whose state is one of the service's action states.
 */
export interface CurrentAction extends ActionRecord {
  readonly state: ActionState
}

/**
 * What one write changes, besides the version: the new state, the history entry (its `at` is the
 * write's time) and the optional parts `ActionLedger.transition` writes atomically with it.
 */
export interface TriggerWrite {
  readonly toState: ActionState
  readonly history: { readonly trigger: string; readonly detail: unknown }
  readonly acknowledgement?: unknown
  readonly sealedContinuation?: string
  readonly outbox?: NewOutboxItem
  readonly completion?: CompletionClaim
  readonly completeOutboxItem?: { readonly id: string; readonly owner: string }
}

/**
 * A write's result other than `Stale` (which the loop handles by trying again).
 */
export type Settled = Exclude<TransitionResult, { readonly _tag: "Stale" }>

/**
 * The caller's decision for one round: answer without writing, or write and turn the ledger's
 * result into the answer.
 */
export type Decision<A, E, R> =
  | { readonly _tag: "Answer"; readonly value: A }
  | {
      readonly _tag: "Write"
      readonly write: TriggerWrite
      readonly settle: (result: Settled) => Effect.Effect<A, E, R>
    }

export const answer = <A>(value: A): Decision<A, never, never> => ({ _tag: "Answer", value })

/**
 * The history detail every write records about its step: the states passed through, an appended
 * reversal, or why the state did not change.
 */
export const stepDetail = (step: Transition | undefined): Record<string, unknown> =>
  step === undefined
    ? {}
    : {
        ...(step._tag === "Move" && step.passedThrough.length > 0 ? { passedThrough: step.passedThrough } : {}),
        ...(step._tag === "Move" && step.appendReversal ? { reversal: true } : {}),
        ...(step._tag === "Stay" ? { unchanged: step.reason } : {})
      }

/**
 * Applies `trigger` (none: a history entry without a state machine step) to the action with
 * compare-and-set. `record` is the action in hand, used for the first round; without it the action
 * is read first. `decide` runs once per round on the current action and its step. `undefined` when
 * the action is gone (or not a service action) or kept changing for `applyRounds` rounds.
 */
export const applyTrigger = <A, E, R>(options: {
  readonly ledger: ActionLedgerService
  /** The clock to read each write's time from without an effect step (default: the context's `Clock`). */
  readonly clock?: Clock.Clock
  readonly actionRequestId: string
  readonly record?: ActionRecord
  readonly trigger?: Trigger
  readonly decide: (
    current: CurrentAction,
    step: Transition | undefined,
    context: { readonly round: number; readonly now: number }
  ) => Effect.Effect<Decision<A, E, R>, E | StorageError, R>
}): Effect.Effect<A | undefined, E | StorageError, R> =>
  Effect.gen(function* () {
    const { actionRequestId, ledger } = options
    for (let round = 0; round < applyRounds; round++) {
      const current =
        round === 0 && options.record !== undefined ? Option.some(options.record) : yield* ledger.get(actionRequestId)
      if (Option.isNone(current)) return undefined
      const action = current.value
      if (!isCurrentAction(action)) return undefined
      const step = options.trigger === undefined ? undefined : transition(action.state, options.trigger)
      const now = options.clock !== undefined ? options.clock.unsafeCurrentTimeMillis() : yield* Clock.currentTimeMillis
      const decision = yield* options.decide(action, step, { round, now })
      if (decision._tag === "Answer") return decision.value
      const { history, ...write } = decision.write
      const result = yield* ledger.transition({
        ...write,
        actionRequestId,
        expectedVersion: action.version,
        at: now,
        history: { at: now, ...history }
      })
      if (result._tag !== "Stale") return yield* decision.settle(result)
    }
    return undefined
  })

const isCurrentAction = (record: ActionRecord): record is CurrentAction => isActionState(record.state)
