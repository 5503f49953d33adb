import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  type ActionState,
  actionStates,
  journeyMayAdvance,
  transition,
  type Trigger
} from "../../core/connector/ActionState.ts"

const outcomes = ["succeeded", "failed", "unknown", "reversed"] as const

const trigger = (isPayment: boolean): fc.Arbitrary<Trigger> =>
  fc.oneof(
    fc.constant<Trigger>({ _tag: "AckAccepted" }),
    fc.constant<Trigger>({ _tag: "AckRejected" }),
    fc.constant<Trigger>({ _tag: "DeliveryAmbiguous" }),
    fc.record({ outcome: fc.constantFrom(...outcomes), evidenceMatched: fc.boolean() }).map((c): Trigger => ({
      _tag: "CompletionReceived",
      ...c,
      isPayment
    })),
    fc.constantFrom("verified", "inconclusive", "reversed").map((verdict): Trigger => ({
      _tag: "ObservationJudged",
      verdict: verdict as "verified" | "inconclusive" | "reversed",
      isPayment
    }))
  )

const anyTrigger = fc.boolean().chain(trigger)

const run = (triggers: ReadonlyArray<Trigger>) => {
  let state: ActionState = "dispatching"
  const visited: Array<{ readonly state: ActionState; readonly by: Trigger }> = []
  for (const t of triggers) {
    const result = transition(state, t)
    if (result._tag === "Move") {
      for (const through of result.passedThrough) visited.push({ state: through, by: t })
      state = result.to
      visited.push({ state, by: t })
    }
  }
  return { state, visited }
}

const succeeded = (isPayment: boolean, evidenceMatched: boolean): Trigger => ({
  _tag: "CompletionReceived",
  outcome: "succeeded",
  evidenceMatched,
  isPayment
})

describe("action state machine", () => {
  it.prop("is total: every state and trigger gives a result", [fc.constantFrom(...actionStates), anyTrigger], ([state, t]) => {
    const result = transition(state, t)
    assert.include(["Move", "Stay", "Illegal"], result._tag)
  })

  it.prop(
    "no sequence of triggers reaches verified without matched catalog evidence (non-payment) or a verified observation (payment)",
    [fc.boolean().chain((isPayment) => fc.array(trigger(isPayment), { maxLength: 12 }).map((ts) => ({ isPayment, ts })))],
    ([{ isPayment, ts }]) => {
      for (const step of run(ts).visited) {
        if (step.state !== "verified") continue
        if (isPayment) {
          assert.deepStrictEqual(step.by, { _tag: "ObservationJudged", verdict: "verified", isPayment: true })
        } else {
          assert.strictEqual(step.by._tag, "CompletionReceived")
          assert.isTrue(step.by._tag === "CompletionReceived" && step.by.evidenceMatched && step.by.outcome === "succeeded")
        }
      }
    }
  )

  it.prop(
    "a payment action is verified only after a succeeded completion and then a verified observation",
    [fc.array(trigger(true), { maxLength: 12 })],
    ([ts]) => {
      const { visited } = run(ts)
      const first = visited.findIndex((v) => v.state === "verified")
      if (first < 0) return
      const before = visited.slice(0, first).map((v) => v.state)
      assert.include(before, "pending")
    }
  )

  it.prop("accepted and a succeeded completion never let the journey advance", [fc.array(anyTrigger, { maxLength: 12 })], ([ts]) => {
    for (const step of run(ts).visited) {
      if (step.by._tag === "AckAccepted") assert.isFalse(journeyMayAdvance(step.state))
    }
    assert.isFalse(journeyMayAdvance("accepted"))
    assert.isFalse(journeyMayAdvance("pending"))
    for (const state of actionStates) assert.strictEqual(journeyMayAdvance(state), state === "verified")
  })

  it.prop("a payment completion never advances the journey by itself", [fc.constantFrom(...actionStates), fc.constantFrom(...outcomes), fc.boolean()], ([state, outcome, evidenceMatched]) => {
    const result = transition(state, { _tag: "CompletionReceived", outcome, evidenceMatched, isPayment: true })
    if (result._tag === "Move") assert.notStrictEqual(result.to, "verified")
  })

  describe("the spec's table, row by row", () => {
    it("execution sent, signed ack accepted (202) -> accepted", () => {
      assert.deepStrictEqual(transition("dispatching", { _tag: "AckAccepted" }), {
        _tag: "Move",
        to: "accepted",
        passedThrough: [],
        queueReconciliation: false,
        appendReversal: false
      })
    })
    it("execution sent, signed ack rejected -> rejected", () => {
      const r = transition("dispatching", { _tag: "AckRejected" })
      assert.isTrue(r._tag === "Move" && r.to === "rejected")
    })
    it("timeout, reset, invalid response after it may have reached the endpoint -> unknown outcome", () => {
      const r = transition("dispatching", { _tag: "DeliveryAmbiguous" })
      assert.isTrue(r._tag === "Move" && r.to === "unknown_outcome")
      assert.strictEqual(transition("unknown_outcome", { _tag: "DeliveryAmbiguous" })._tag, "Stay")
      const later = transition("unknown_outcome", { _tag: "AckAccepted" })
      assert.isTrue(later._tag === "Move" && later.to === "accepted")
    })
    it("accepted, completion succeeded without matched evidence -> pending", () => {
      const r = transition("accepted", succeeded(false, false))
      assert.isTrue(r._tag === "Move" && r.to === "pending")
    })
    it("pending, matched catalog evidence -> verified", () => {
      const r = transition("pending", succeeded(false, true))
      assert.isTrue(r._tag === "Move" && r.to === "verified")
    })
    it("accepted, completion succeeded with matched evidence -> verified through pending", () => {
      const r = transition("accepted", succeeded(false, true))
      assert.isTrue(r._tag === "Move" && r.to === "verified")
      assert.deepStrictEqual(r._tag === "Move" ? r.passedThrough : [], ["pending"])
    })
    it("accepted, completion failed -> failed (failure reported)", () => {
      const r = transition("accepted", { _tag: "CompletionReceived", outcome: "failed", evidenceMatched: false, isPayment: false })
      assert.isTrue(r._tag === "Move" && r.to === "failed")
    })
    it("accepted, completion unknown -> unresolved", () => {
      const r = transition("accepted", { _tag: "CompletionReceived", outcome: "unknown", evidenceMatched: false, isPayment: false })
      assert.isTrue(r._tag === "Move" && r.to === "unresolved")
    })
    it("payment action, completion succeeded -> pending with a reconciliation read queued, even with evidence", () => {
      const r = transition("accepted", succeeded(true, true))
      assert.isTrue(r._tag === "Move" && r.to === "pending" && r.queueReconciliation)
    })
    it("payment action, observation inconclusive -> stays pending, not promoted", () => {
      const r = transition("pending", { _tag: "ObservationJudged", verdict: "inconclusive", isPayment: true })
      assert.strictEqual(r._tag, "Stay")
    })
    it("payment action, signed matching observation -> verified", () => {
      const r = transition("pending", { _tag: "ObservationJudged", verdict: "verified", isPayment: true })
      assert.isTrue(r._tag === "Move" && r.to === "verified")
    })
    it("verified payment action, completion reversed -> unchanged until read, read queued", () => {
      const r = transition("verified", { _tag: "CompletionReceived", outcome: "reversed", evidenceMatched: true, isPayment: true })
      assert.deepStrictEqual(r, { _tag: "Stay", reason: "reversal_awaiting_read", queueReconciliation: true })
    })
    it("verified payment action, read confirms the reversal -> reversed, reversal appended", () => {
      const r = transition("verified", { _tag: "ObservationJudged", verdict: "reversed", isPayment: true })
      assert.isTrue(r._tag === "Move" && r.to === "reversed" && r.appendReversal)
    })
  })

  describe("Accord's choices where the spec is silent", () => {
    it("a completion while the acknowledgement is unknown proves the request was owned", () => {
      const r = transition("unknown_outcome", succeeded(false, true))
      assert.isTrue(r._tag === "Move" && r.to === "verified")
      assert.deepStrictEqual(r._tag === "Move" ? r.passedThrough : [], ["accepted", "pending"])
    })
    it("a completion for a rejected request is refused", () => {
      assert.strictEqual(transition("rejected", succeeded(false, true))._tag, "Illegal")
    })
    it("a failed completion after verification changes nothing", () => {
      const r = transition("verified", { _tag: "CompletionReceived", outcome: "failed", evidenceMatched: false, isPayment: false })
      assert.strictEqual(r._tag, "Stay")
    })
    it("an observation for a non-payment action is refused", () => {
      assert.strictEqual(transition("pending", { _tag: "ObservationJudged", verdict: "verified", isPayment: false })._tag, "Illegal")
    })
    it("an observation before any completion is refused", () => {
      assert.strictEqual(transition("accepted", { _tag: "ObservationJudged", verdict: "verified", isPayment: true })._tag, "Illegal")
    })
  })
})
