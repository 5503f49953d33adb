/**
 * When a polling runtime should read its action's status again (`pollAfterSeconds`): never once
 * the action is final, soon after a change, and later the longer the action has waited, within its
 * state's floor and the cap.
 */
import { assert, describe, it } from "@effect/vitest"
import { maxPollAfterSeconds, pollAfterSeconds } from "../../../core/approval/ActionStatus.ts"
import { actionStates, isTerminal } from "../../../core/connector/ActionState.ts"

describe("pollAfterSeconds", () => {
  it("no hint once the action is final: verified or terminal", () => {
    for (const state of actionStates)
      assert.strictEqual(
        pollAfterSeconds(state, 0) === undefined,
        state === "verified" || isTerminal(state),
        `${state}`
      )
  })

  it("soon after a change: the state's floor, at least a second", () => {
    assert.strictEqual(pollAfterSeconds("dispatching", 0), 1)
    assert.strictEqual(pollAfterSeconds("accepted", 0), 1)
    assert.isAbove(pollAfterSeconds("unknown_outcome", 0)!, pollAfterSeconds("accepted", 0)!)
    assert.isAbove(pollAfterSeconds("evidence_overdue", 0)!, pollAfterSeconds("pending", 0)!)
  })

  it("grows with the time the action has waited in its state, up to the cap", () => {
    assert.strictEqual(pollAfterSeconds("accepted", 40_000), 10)
    assert.isBelow(pollAfterSeconds("accepted", 4_000)!, pollAfterSeconds("accepted", 40_000)!)
    assert.strictEqual(pollAfterSeconds("accepted", 24 * 60 * 60 * 1000), maxPollAfterSeconds)
    assert.strictEqual(pollAfterSeconds("accepted", -5_000), 1, "a clock behind the stored time counts as no wait")
  })
})
