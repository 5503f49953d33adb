import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import {
  type ActionState,
  actionStates,
  isTerminal,
  journeyMayAdvance,
  transition,
  type Trigger
} from "../../../core/connector/ActionState.ts"
import {
  completionTrigger,
  type EvidenceBinding,
  evidenceObservers,
  evidenceStanding,
  matchEvidence
} from "../../../core/connector/Evidence.ts"
import { CatalogEvidenceType, Completion } from "../../../core/protocol/messages/Completion.ts"

const outcomes = ["succeeded", "failed", "unknown", "reversed"] as const

/** Every trigger but a completion: acknowledgements, an ambiguous delivery, reconciliation verdicts. */
const otherTrigger = (isPayment: boolean): fc.Arbitrary<Trigger> =>
  fc.oneof(
    fc.constant<Trigger>({ _tag: "AckAccepted" }),
    fc.constant<Trigger>({ _tag: "AckRejected" }),
    fc.constant<Trigger>({ _tag: "DeliveryAmbiguous" }),
    fc.constantFrom("verified", "inconclusive", "reversed").map(
      (verdict): Trigger => ({
        _tag: "ObservationJudged",
        verdict: verdict as "verified" | "inconclusive" | "reversed",
        isPayment
      })
    )
  )

/** Any trigger, a completion given only as its outcome and an evidence verdict (for totality). */
const trigger = (isPayment: boolean): fc.Arbitrary<Trigger> =>
  fc.oneof(
    otherTrigger(isPayment),
    fc.record({ outcome: fc.constantFrom(...outcomes), evidenceMatched: fc.boolean() }).map(
      (c): Trigger => ({
        _tag: "CompletionReceived",
        ...c,
        isPayment
      })
    )
  )

/** Any trigger, the payment gate's `Blocked` and the evidence watcher's `EvidenceObserved` included. */
const anyTrigger = fc.oneof(
  fc.boolean().chain(trigger),
  fc.boolean().map((isPayment): Trigger => ({ _tag: "EvidenceObserved", isPayment })),
  fc.constant<Trigger>({ _tag: "EvidenceWindowPassed" }),
  fc
    .constantFrom("payment_capability_missing", "payment_mode_not_enabled", "revision_not_current")
    .map((reason): Trigger => ({ _tag: "Blocked", reason }))
)

/** The catalog evidence types (pinned to the spec's eight in messages.test.ts). */
const catalog: ReadonlyArray<string> = CatalogEvidenceType.literals

const hex64 = fc
  .array(fc.constantFrom(..."0123456789abcdef"), { minLength: 64, maxLength: 64 })
  .map((digits) => digits.join(""))
const accountIds = fc.stringMatching(/^[A-Za-z0-9_]{1,24}$/)

const bindings: fc.Arbitrary<EvidenceBinding> = fc.record({
  workspaceId: fc.uuid(),
  accountId: accountIds,
  actionRequestId: fc.uuid(),
  providerIdempotencyKey: hex64.map((hex) => `pva_${hex}`)
})

/** Mostly the action's own value, sometimes another one. */
const mostly = <A>(own: A, other: fc.Arbitrary<A>): fc.Arbitrary<A> =>
  fc.oneof({ weight: 8, arbitrary: fc.constant(own) }, { weight: 1, arbitrary: other })

/** Evidence sources: catalog types, near misses of them, and arbitrary codes. */
const sources = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...catalog) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "Provider_event",
      "provider-event",
      "entitlement_states",
      "authenticated_completion.v2",
      "browser_success_screen",
      "webhook",
      "verified"
    )
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_.:-]{1,64}$/) }
)

/** `evidence.accountId`: the action's account, another one, a number, null, or absent. */
const accountEvidence = (own: string): fc.Arbitrary<Record<string, string | number | null>> =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant({ accountId: own }) },
    { weight: 1, arbitrary: accountIds.map((accountId) => ({ accountId })) },
    { weight: 1, arbitrary: fc.integer().map((accountId) => ({ accountId })) },
    { weight: 1, arbitrary: fc.constant({ accountId: null }) },
    { weight: 1, arbitrary: fc.constant({}) }
  )

const decodeCompletion = Schema.decodeUnknownSync(Completion)

/** A real completion body (decoded with the Completion schema) that may or may not fit the action. */
const completions = (b: EvidenceBinding): fc.Arbitrary<Completion> =>
  fc
    .record({
      workspaceId: mostly(b.workspaceId, fc.uuid()),
      actionRequestId: mostly(b.actionRequestId, fc.uuid()),
      providerIdempotencyKey: mostly(
        b.providerIdempotencyKey,
        hex64.map((hex) => `pva_${hex}`)
      ),
      outcome: fc.constantFrom(...outcomes),
      source: sources,
      account: accountEvidence(b.accountId),
      completionId: fc.stringMatching(/^[\x21-\x7e]{1,40}$/),
      providerReference: fc.string({ minLength: 1, maxLength: 40 })
    })
    .map((c) =>
      decodeCompletion({
        type: "service.customer_action.completion",
        protocolVersion: 1,
        workspaceId: c.workspaceId,
        actionRequestId: c.actionRequestId,
        providerIdempotencyKey: c.providerIdempotencyKey,
        providerReference: c.providerReference,
        completionId: c.completionId,
        completedAt: "2026-11-22T10:00:00.000Z",
        outcome: c.outcome,
        evidence: { entitlement: "trial_extended", reasonCode: "ok", source: c.source, ...c.account }
      })
    )

/**
 * One thing that happens to the action: a completion (through evidence matching), a Direct API event
 * with the action's funnel ids arriving at the service, the evidence watcher's window passing, or
 * another trigger.
 */
type Step =
  | { readonly _tag: "Completion"; readonly completion: Completion }
  | { readonly _tag: "EventArrives" }
  | { readonly _tag: "WindowPasses" }
  | { readonly _tag: "Other"; readonly trigger: Trigger }

const steps = (b: EvidenceBinding, isPayment: boolean): fc.Arbitrary<Step> =>
  fc.oneof(
    { weight: 3, arbitrary: completions(b).map((completion): Step => ({ _tag: "Completion", completion })) },
    { weight: 1, arbitrary: fc.constant<Step>({ _tag: "EventArrives" }) },
    { weight: 1, arbitrary: fc.constant<Step>({ _tag: "WindowPasses" }) },
    { weight: 2, arbitrary: otherTrigger(isPayment).map((t): Step => ({ _tag: "Other", trigger: t })) }
  )

interface Scenario {
  readonly binding: EvidenceBinding
  readonly isPayment: boolean
  /** The evidence types the action's catalog entry accepts. */
  readonly accepted: ReadonlyArray<CatalogEvidenceType>
  readonly steps: ReadonlyArray<Step>
}

const scenarios: fc.Arbitrary<Scenario> = fc
  .record({
    binding: bindings,
    isPayment: fc.boolean(),
    // Mostly a broad catalog entry (so verification is reached often), sometimes a narrow one.
    accepted: fc.oneof(
      { weight: 3, arbitrary: fc.constant([...CatalogEvidenceType.literals]) },
      { weight: 2, arbitrary: fc.subarray([...CatalogEvidenceType.literals], { minLength: 1 }) }
    )
  })
  .chain(({ accepted, binding, isPayment }) =>
    fc.array(steps(binding, isPayment), { maxLength: 12 }).map((s) => ({ binding, isPayment, accepted, steps: s }))
  )

/** Whether a Direct API event with the action's funnel ids arrived before step `index` (inclusive). */
const eventHeldAt = (scenario: Scenario, index: number): boolean =>
  scenario.steps.slice(0, index + 1).some((s) => s._tag === "EventArrives")

/**
 * The oracle's binding part, written out field by field: a succeeded completion whose evidence is
 * of a catalog type the action accepts, matched to the action's workspace, account, action and key.
 */
const bindsAndAccepted = (scenario: Scenario, step: Step): step is Extract<Step, { _tag: "Completion" }> =>
  step._tag === "Completion" &&
  step.completion.outcome === "succeeded" &&
  step.completion.workspaceId === scenario.binding.workspaceId &&
  step.completion.actionRequestId === scenario.binding.actionRequestId &&
  step.completion.providerIdempotencyKey === scenario.binding.providerIdempotencyKey &&
  // `evidence.accountId` is optional; present, it must be the action's account.
  (step.completion.evidence["accountId"] === undefined ||
    step.completion.evidence["accountId"] === scenario.binding.accountId) &&
  catalog.includes(step.completion.evidence.source) &&
  (scenario.accepted as ReadonlyArray<string>).includes(step.completion.evidence.source)

const observerOf = (step: Extract<Step, { _tag: "Completion" }>) =>
  evidenceObservers[step.completion.evidence.source as CatalogEvidenceType]

/**
 * The oracle for an action that is not a payment: step `index` may verify it only when the service
 * holds the named evidence itself at that moment: the signed completion, or a Direct API event that
 * arrived (before or after the completion that named it). Never a provider type, never an approval
 * that was not recorded.
 */
const verifiesNonPayment = (scenario: Scenario, index: number): boolean => {
  const step = scenario.steps[index]!
  if (bindsAndAccepted(scenario, step)) {
    const observer = observerOf(step)
    return observer === "completion" || (observer === "direct_api_event" && eventHeldAt(scenario, index))
  }
  if (step._tag !== "EventArrives") return false
  return scenario.steps
    .slice(0, index)
    .some((s) => bindsAndAccepted(scenario, s) && observerOf(s) === "direct_api_event")
}

/** A Payment completion that queues a reconciliation read: accepted, bound and of a type a read confirms. */
const queuesRead = (scenario: Scenario, step: Step): boolean =>
  bindsAndAccepted(scenario, step) && observerOf(step) === "reconciliation"

const isVerifiedObservation = (step: Step): boolean =>
  step._tag === "Other" && step.trigger._tag === "ObservationJudged" && step.trigger.verdict === "verified"

/**
 * Runs the steps from `dispatching` as the service would: completions through the intake's evidence
 * matching and standing, an arriving event through the evidence watcher (which fires only for a
 * watched action), reconciliation verdicts only once a read was queued; then `transition`.
 */
const run = (scenario: Scenario) => {
  let state: ActionState = "dispatching"
  let watching = false
  let readQueued = false
  const visited: Array<{ readonly state: ActionState; readonly index: number }> = []
  scenario.steps.forEach((step, index) => {
    let t: Trigger | undefined
    let awaiting = false
    if (step._tag === "Completion") {
      const match = matchEvidence(scenario.binding, step.completion, scenario.accepted)
      const held =
        match._tag === "Matched" && evidenceObservers[match.type] === "direct_api_event" && eventHeldAt(scenario, index)
      const standing = match._tag === "Matched" ? evidenceStanding(match.type, scenario.isPayment, held) : undefined
      awaiting =
        standing === "awaiting" && match._tag === "Matched" && evidenceObservers[match.type] === "direct_api_event"
      t = completionTrigger(step.completion, match, standing, scenario.isPayment)
    } else if (step._tag === "EventArrives") {
      t = watching ? { _tag: "EvidenceObserved", isPayment: scenario.isPayment } : undefined
    } else if (step._tag === "WindowPasses") {
      // The watch ends: a later event is not looked for until a new success claim opens a window.
      t = watching ? { _tag: "EvidenceWindowPassed" } : undefined
      watching = false
    } else {
      const observation = step.trigger._tag === "ObservationJudged"
      if (observation && !readQueued) t = undefined
      // The reconciler records a verified read as inconclusive unless a success was claimed with
      // evidence of an accepted type a read confirms.
      else if (
        observation &&
        step.trigger._tag === "ObservationJudged" &&
        step.trigger.verdict === "verified" &&
        !scenario.steps.slice(0, index).some((s) => queuesRead(scenario, s))
      ) {
        t = { ...step.trigger, verdict: "inconclusive" }
      } else t = step.trigger
    }
    if (t === undefined) return
    const result = transition(state, t)
    if (result._tag !== "Illegal" && result.queueReconciliation) readQueued = true
    if (result._tag === "Move") {
      for (const through of result.passedThrough) visited.push({ state: through, index })
      state = result.to
      visited.push({ state, index })
    }
    if (awaiting && state === "pending" && step._tag === "Completion" && step.completion.outcome === "succeeded")
      watching = true
  })
  return { state, visited }
}

/** Whether the steps up to `index` include what may verify: the oracle, or for Payment a verified observation. */
const qualifiedBy = (scenario: Scenario, index: number): boolean =>
  scenario.steps
    .slice(0, index + 1)
    .some((step) =>
      scenario.isPayment ? isVerifiedObservation(step) : verifiesNonPayment(scenario, scenario.steps.indexOf(step))
    )

const succeeded = (isPayment: boolean, evidenceMatched: boolean): Trigger => ({
  _tag: "CompletionReceived",
  outcome: "succeeded",
  evidenceMatched,
  isPayment
})

describe("action state machine", () => {
  it.prop(
    "is total: every state and trigger gives a result",
    [fc.constantFrom(...actionStates), anyTrigger],
    ([state, t]) => {
      const result = transition(state, t)
      assert.include(["Move", "Stay", "Illegal"], result._tag)
    }
  )

  it.prop(
    "verified is entered only with evidence the service holds itself: a succeeded completion of an accepted type matched to workspace, account, action and key whose evidence the service observed (the signed completion, or a Direct API event before or after it; non-payment), or a verified read after a completion that queued it (Payment)",
    [scenarios],
    ([scenario]) => {
      const { visited } = run(scenario)
      for (const { index, state } of visited) {
        if (state !== "verified") continue
        const by = scenario.steps[index]!
        if (scenario.isPayment) {
          // Never by a completion alone: a verified read, after a completion that queued it.
          assert.isTrue(isVerifiedObservation(by))
          assert.isTrue(scenario.steps.slice(0, index).some((s) => queuesRead(scenario, s)))
        } else {
          assert.isTrue(verifiesNonPayment(scenario, index))
        }
      }
    },
    { fastCheck: { numRuns: 1_000 } }
  )

  it.prop(
    "the journey never advances in a state reached without that evidence; an acknowledgement or a succeeded completion alone never advances it",
    [scenarios],
    ([scenario]) => {
      for (const { index, state } of run(scenario).visited) {
        const by = scenario.steps[index]!
        if (!qualifiedBy(scenario, index)) assert.isFalse(journeyMayAdvance(state))
        if (by._tag === "Other" && by.trigger._tag === "AckAccepted") assert.isFalse(journeyMayAdvance(state))
        if (by._tag === "Completion" && (scenario.isPayment || !verifiesNonPayment(scenario, index))) {
          assert.isFalse(journeyMayAdvance(state))
        }
      }
      for (const state of actionStates) assert.strictEqual(journeyMayAdvance(state), state === "verified")
    },
    { fastCheck: { numRuns: 1_000 } }
  )

  it("the generated scenarios reach verified both ways and exercise near misses (the properties are not vacuous)", () => {
    const sample = fc.sample(scenarios, { seed: 20261122, numRuns: 10_000 })
    const reached = (isPayment: boolean) =>
      sample.filter((s) => s.isPayment === isPayment && run(s).visited.some((v) => v.state === "verified")).length
    // A succeeded completion from a state that takes it, with catalog evidence, failing the oracle on one binding.
    const nearMisses = sample.filter(
      (s) =>
        !s.isPayment &&
        s.steps.some(
          (step, index) =>
            step._tag === "Completion" &&
            step.completion.outcome === "succeeded" &&
            catalog.includes(step.completion.evidence.source) &&
            !verifiesNonPayment(s, index)
        )
    ).length
    // Verified through an event that arrived after the completion named it (the watcher's path).
    const byLateEvent = sample.filter(
      (s) =>
        !s.isPayment && run(s).visited.some((v) => v.state === "verified" && s.steps[v.index]!._tag === "EventArrives")
    ).length
    assert.isAbove(reached(false), 60)
    assert.isAbove(reached(true), 10)
    assert.isAbove(nearMisses, 100)
    assert.isAbove(byLateEvent, 5)
    // Overdue once the window passed, and verified after being overdue (a later claim with evidence).
    let overdue = 0
    let verifiedAfterOverdue = 0
    for (const s of sample) {
      if (s.isPayment) continue
      const visited = run(s).visited
      const first = visited.findIndex((v) => v.state === "evidence_overdue")
      if (first === -1) continue
      overdue += 1
      if (visited.slice(first).some((v) => v.state === "verified")) verifiedAfterOverdue += 1
    }
    assert.isAbove(overdue, 5)
    assert.isAbove(verifiedAfterOverdue, 0)
  })

  it.prop(
    "a payment completion never advances the journey by itself",
    [fc.constantFrom(...actionStates), fc.constantFrom(...outcomes), fc.boolean()],
    ([state, outcome, evidenceMatched]) => {
      const result = transition(state, { _tag: "CompletionReceived", outcome, evidenceMatched, isPayment: true })
      if (result._tag === "Move") assert.notStrictEqual(result.to, "verified")
    }
  )

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
      const r = transition("accepted", {
        _tag: "CompletionReceived",
        outcome: "failed",
        evidenceMatched: false,
        isPayment: false
      })
      assert.isTrue(r._tag === "Move" && r.to === "failed")
    })
    it("accepted, completion unknown -> unresolved", () => {
      const r = transition("accepted", {
        _tag: "CompletionReceived",
        outcome: "unknown",
        evidenceMatched: false,
        isPayment: false
      })
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
      const r = transition("verified", {
        _tag: "CompletionReceived",
        outcome: "reversed",
        evidenceMatched: true,
        isPayment: true
      })
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
      const r = transition("verified", {
        _tag: "CompletionReceived",
        outcome: "failed",
        evidenceMatched: false,
        isPayment: false
      })
      assert.strictEqual(r._tag, "Stay")
    })
    it("an observation for a non-payment action is refused", () => {
      assert.strictEqual(
        transition("pending", { _tag: "ObservationJudged", verdict: "verified", isPayment: false })._tag,
        "Illegal"
      )
    })
    it("an observation before any completion is refused", () => {
      assert.strictEqual(
        transition("accepted", { _tag: "ObservationJudged", verdict: "verified", isPayment: true })._tag,
        "Illegal"
      )
    })
  })
})

describe("the evidence window (no action pending for ever)", () => {
  const windowPassed: Trigger = { _tag: "EvidenceWindowPassed" }
  it("pending, the window passed without the evidence -> evidence_overdue", () => {
    assert.deepStrictEqual(transition("pending", windowPassed), {
      _tag: "Move",
      to: "evidence_overdue",
      passedThrough: [],
      queueReconciliation: false,
      appendReversal: false
    })
  })
  it("any other state keeps its state when a window passes", () => {
    for (const state of actionStates.filter((s) => s !== "pending")) {
      assert.deepStrictEqual(transition(state, windowPassed), {
        _tag: "Stay",
        reason: "evidence_not_awaited",
        queueReconciliation: false
      })
    }
  })
  it("evidence_overdue, the evidence observed or a success claim with matched evidence -> verified", () => {
    assert.strictEqual(
      (transition("evidence_overdue", { _tag: "EvidenceObserved", isPayment: false }) as { to?: string }).to,
      "verified"
    )
    assert.strictEqual((transition("evidence_overdue", succeeded(false, true)) as { to?: string }).to, "verified")
  })
  it("evidence_overdue, a new success claim whose evidence is not held yet -> pending (a new window)", () => {
    assert.strictEqual((transition("evidence_overdue", succeeded(false, false)) as { to?: string }).to, "pending")
  })
  it("evidence_overdue takes every other trigger as pending does", () => {
    fc.assert(
      fc.property(anyTrigger, (t) => {
        const fromPending = transition("pending", t)
        const fromOverdue = transition("evidence_overdue", t)
        if (t._tag === "EvidenceWindowPassed") return
        if (t._tag === "CompletionReceived" && t.outcome === "succeeded" && !t.isPayment && !t.evidenceMatched) return
        assert.deepStrictEqual(fromOverdue, fromPending)
      })
    )
  })
  it("evidence_overdue is not terminal, and never advances the journey", () => {
    assert.isFalse(isTerminal("evidence_overdue"))
    assert.isFalse(journeyMayAdvance("evidence_overdue"))
  })
})

describe("blocked by the payment capability gate", () => {
  const reasons = [
    "payment_capability_missing",
    "payment_capability_expired",
    "payment_mode_not_enabled",
    "revision_not_current",
    "provider_connection_changed"
  ]
  const blocked = (reason: string): Trigger => ({ _tag: "Blocked", reason })

  it("a never-sent action (dispatching) ends blocked, whatever the reason", () => {
    for (const reason of reasons) {
      const step = transition("dispatching", blocked(reason))
      assert.deepStrictEqual(step._tag === "Move" ? step.to : step._tag, "blocked")
    }
  })

  it("an action that may have reached the customer (unknown_outcome) keeps its state: delivery_blocked, never dropped", () => {
    assert.deepStrictEqual(transition("unknown_outcome", blocked("payment_capability_missing")), {
      _tag: "Stay",
      reason: "delivery_blocked",
      queueReconciliation: false
    })
  })

  it("an acknowledged or finished action is past the gate: nothing changes", () => {
    for (const state of actionStates.filter((s) => s !== "dispatching" && s !== "unknown_outcome")) {
      assert.strictEqual(transition(state, blocked("revision_not_current"))._tag, "Stay", state)
    }
  })

  it.prop("blocked is terminal: no trigger moves it, and the journey never advances", [anyTrigger], ([t]) => {
    // (An observation for a non-payment action is refused before any state is considered.)
    assert.notStrictEqual(transition("blocked", t)._tag, "Move")
    assert.isTrue(isTerminal("blocked"))
    assert.isFalse(journeyMayAdvance("blocked"))
  })
})
