/**
 * The service-side action state machine (spec "States and transitions"): one total function from a
 * state and a trigger to what happens next.
 *
 * The spec names `accepted`, `rejected`, pending and `verified`, and leaves the others unnamed
 * ("failure reported", "unresolved", "unknown outcome at the connector boundary"); Accord names them
 * `failed`, `unresolved` and `unknown_outcome`, adds `dispatching` (intake committed, no
 * acknowledgement yet), `reversed` (a verified Payment action whose refund or reversal a
 * reconciliation read confirmed) and `blocked` (a Payment action never sent because its payment
 * capability no longer covered it before a delivery attempt: if the evidence lapsed, was
 * invalidated or the revision changed, nothing is sent and the action ends in a terminal
 * `blocked` state with its reason in the history) and `evidence_overdue` (a `pending` action whose
 * evidence watch ended without the evidence its completion pointed to: it is waiting on something
 * that did not come, and says so instead of staying pending for ever; it still takes whatever a
 * pending action takes). Only `verified` lets the journey advance:
 * "`accepted` and completion `succeeded` never advance the customer journey by themselves".
 */
import type { CompletionOutcome } from "../protocol/messages/Completion.ts"

/** Every state an action can be in, from `dispatching` to the terminal ones. */
export const actionStates = [
  "dispatching",
  "accepted",
  "rejected",
  "unknown_outcome",
  "pending",
  "evidence_overdue",
  "verified",
  "failed",
  "unresolved",
  "reversed",
  "blocked"
] as const

/** One of `actionStates`. */
export type ActionState = (typeof actionStates)[number]

/** Whether a string (a query parameter, a stored column) names an action state. */
export const isActionState = (value: string): value is ActionState =>
  (actionStates as ReadonlyArray<string>).includes(value)

/**
 * What can happen to an action:
 * - `AckAccepted` / `AckRejected`: a valid signed acknowledgement (HTTP 202) for this delivery;
 * - `DeliveryAmbiguous`: timeout, reset, invalid or unsigned response, or any non-success after the
 *   request may have reached the endpoint;
 * - `CompletionReceived`: an authenticated completion; `evidenceMatched` says whether its evidence
 *   is authoritative evidence of a catalog type matched to this action (see `Evidence.ts`);
 * - `ObservationJudged`: the verdict on a signed payment observation (reconciliation read);
 * - `Blocked`: before a delivery attempt, revalidation or the payment capability gate refused to
 *   send (`reason` is its code). A never-sent action ends `blocked`; one that may already have
 *   reached the customer (`unknown_outcome`) keeps its state and is not sent again.
 * - `EvidenceObserved`: the service now holds the evidence a `succeeded` completion pointed to
 *   (a Direct API event or an approval that arrived after the completion; see `Evidence.ts`).
 * - `EvidenceWindowPassed`: the evidence watcher looked for that evidence for its whole window
 *   (`EvidenceWatcher.evidenceSchedule`) and the service still does not hold it.
 */
export type Trigger =
  | { readonly _tag: "AckAccepted" }
  | { readonly _tag: "AckRejected" }
  | { readonly _tag: "DeliveryAmbiguous" }
  | {
      readonly _tag: "CompletionReceived"
      readonly outcome: CompletionOutcome
      readonly evidenceMatched: boolean
      readonly isPayment: boolean
    }
  | {
      readonly _tag: "ObservationJudged"
      readonly verdict: "verified" | "inconclusive" | "reversed"
      readonly isPayment: boolean
    }
  | { readonly _tag: "Blocked"; readonly reason: string }
  | { readonly _tag: "EvidenceObserved"; readonly isPayment: boolean }
  | { readonly _tag: "EvidenceWindowPassed" }

/**
 * - `Move`: the state changes to `to`; `passedThrough` lists states the action went through on the
 *   way (for the history), `queueReconciliation` asks for a payment reconciliation read,
 *   `appendReversal` appends a reversal to the outcome history.
 * - `Stay`: recorded, nothing changes (a redelivered acknowledgement, an inconclusive observation,
 *   a completion after a terminal state); `queueReconciliation` may still ask for a read.
 * - `Illegal`: the trigger contradicts what is known (a completion for a request the customer
 *   rejected); the caller refuses it.
 */
export type Transition =
  | {
      readonly _tag: "Move"
      readonly to: ActionState
      readonly passedThrough: ReadonlyArray<ActionState>
      readonly queueReconciliation: boolean
      readonly appendReversal: boolean
    }
  | { readonly _tag: "Stay"; readonly reason: string; readonly queueReconciliation: boolean }
  | { readonly _tag: "Illegal"; readonly reason: string }

const move = (
  to: ActionState,
  extra?: {
    readonly passedThrough?: ReadonlyArray<ActionState>
    readonly queueReconciliation?: boolean
    readonly appendReversal?: boolean
  }
): Transition => ({
  _tag: "Move",
  to,
  passedThrough: extra?.passedThrough ?? [],
  queueReconciliation: extra?.queueReconciliation ?? false,
  appendReversal: extra?.appendReversal ?? false
})

const stay = (reason: string, queueReconciliation = false): Transition => ({
  _tag: "Stay",
  reason,
  queueReconciliation
})

const illegal = (reason: string): Transition => ({ _tag: "Illegal", reason })

/** A completion received while the action is `accepted` (or known to be owned by the customer). */
const completionFromAccepted = (trigger: Extract<Trigger, { _tag: "CompletionReceived" }>): Transition => {
  switch (trigger.outcome) {
    case "succeeded":
      // A Payment action is read back, but only when its evidence type is one a read can confirm.
      if (trigger.isPayment) return move("pending", { queueReconciliation: trigger.evidenceMatched })
      return trigger.evidenceMatched ? move("verified", { passedThrough: ["pending"] }) : move("pending")
    case "failed":
      return move("failed")
    case "unknown":
      return move("unresolved", { queueReconciliation: trigger.isPayment })
    case "reversed":
      // Nothing was reported done yet: a Payment action is read back; any other is a failure.
      return trigger.isPayment ? stay("reversal_before_success", true) : move("failed")
  }
}

/** The acknowledgement was lost, but an authenticated completion proves the request was owned. */
const withAcceptance = (transition: Transition): Transition =>
  transition._tag === "Move"
    ? { ...transition, passedThrough: ["accepted", ...transition.passedThrough] }
    : transition._tag === "Stay"
      ? move("accepted", { queueReconciliation: transition.queueReconciliation })
      : transition

/**
 * The one transition function: total over every state and trigger.
 */
export const transition = (state: ActionState, trigger: Trigger): Transition => {
  // Reconciliation reads exist only for Payment actions; any other action is verified by evidence.
  if (trigger._tag === "ObservationJudged" && !trigger.isPayment) return illegal("observation_for_non_payment_action")
  // Observed evidence verifies only an action that is pending on it; a Payment action is read back.
  if (trigger._tag === "EvidenceObserved") {
    if (trigger.isPayment) return illegal("payment_action_needs_reconciliation")
    return state === "pending" || state === "evidence_overdue" ? move("verified") : stay("evidence_not_awaited")
  }
  if (trigger._tag === "EvidenceWindowPassed") {
    return state === "pending" ? move("evidence_overdue") : stay("evidence_not_awaited")
  }
  if (state === "evidence_overdue") {
    // Still pending in every respect, except that a new success claim whose evidence is not held
    // yet opens a new window: back to `pending`, watched again.
    if (
      trigger._tag === "CompletionReceived" &&
      trigger.outcome === "succeeded" &&
      !trigger.isPayment &&
      !trigger.evidenceMatched
    )
      return move("pending")
    return transition("pending", trigger)
  }
  switch (state) {
    case "dispatching":
    case "unknown_outcome":
      switch (trigger._tag) {
        case "AckAccepted":
          return move("accepted")
        case "AckRejected":
          return move("rejected")
        case "DeliveryAmbiguous":
          return state === "dispatching" ? move("unknown_outcome") : stay("still_unknown")
        case "CompletionReceived":
          return withAcceptance(completionFromAccepted(trigger))
        case "ObservationJudged":
          return illegal("no_completion_yet")
        case "Blocked":
          // Never sent: it ends here. Maybe delivered: never dropped silently, only not sent again.
          return state === "dispatching" ? move("blocked") : stay("delivery_blocked")
      }
    // falls through (unreachable: the inner switch is exhaustive)
    case "accepted":
      switch (trigger._tag) {
        case "AckAccepted":
        case "DeliveryAmbiguous":
        case "Blocked":
          return stay("already_accepted")
        case "AckRejected":
          return illegal("acknowledgement_contradicts_accepted")
        case "CompletionReceived":
          return completionFromAccepted(trigger)
        case "ObservationJudged":
          return illegal("no_completion_yet")
      }
    // falls through
    case "rejected":
      switch (trigger._tag) {
        case "AckRejected":
        case "DeliveryAmbiguous":
        case "Blocked":
          return stay("already_rejected")
        case "AckAccepted":
          return illegal("acknowledgement_contradicts_rejected")
        case "CompletionReceived":
          return illegal("completion_after_rejection")
        case "ObservationJudged":
          return illegal("no_completion_yet")
      }
    // falls through
    case "pending":
      switch (trigger._tag) {
        case "AckAccepted":
        case "DeliveryAmbiguous":
        case "Blocked":
          return stay("already_accepted")
        case "AckRejected":
          return illegal("acknowledgement_contradicts_accepted")
        case "CompletionReceived":
          switch (trigger.outcome) {
            case "succeeded":
              if (trigger.isPayment) return stay("awaiting_reconciliation", trigger.evidenceMatched)
              return trigger.evidenceMatched ? move("verified") : stay("awaiting_evidence")
            case "failed":
              return move("failed")
            case "unknown":
              return stay("awaiting_evidence", trigger.isPayment)
            case "reversed":
              return trigger.isPayment ? stay("reversal_before_verification", true) : move("failed")
          }
        // falls through
        case "ObservationJudged":
          // "Observation failed, missing, late or mismatched: stays inconclusive; the payment claim is
          // not promoted." A refund before verification never promotes it either.
          return trigger.verdict === "verified" ? move("verified") : stay(`observation_${trigger.verdict}`)
      }
    // falls through
    case "unresolved":
      switch (trigger._tag) {
        case "AckAccepted":
        case "DeliveryAmbiguous":
        case "Blocked":
          return stay("already_accepted")
        case "AckRejected":
          return illegal("acknowledgement_contradicts_accepted")
        case "CompletionReceived":
          return trigger.outcome === "unknown"
            ? stay("still_unresolved", trigger.isPayment)
            : completionFromAccepted(trigger)
        case "ObservationJudged":
          // A read alone never verifies: verification needs a `succeeded` completion first.
          return stay(`observation_${trigger.verdict}`)
      }
    // falls through
    case "verified":
      switch (trigger._tag) {
        case "AckAccepted":
        case "DeliveryAmbiguous":
        case "Blocked":
          return stay("already_verified")
        case "AckRejected":
          return illegal("acknowledgement_contradicts_accepted")
        case "CompletionReceived":
          if (trigger.outcome !== "reversed") return stay("already_verified")
          // "verified Payment action, completion reversed: unchanged until read; a reconciliation read is queued."
          if (trigger.isPayment) return stay("reversal_awaiting_read", true)
          return trigger.evidenceMatched
            ? move("reversed", { appendReversal: true })
            : stay("reversal_without_evidence")
        case "ObservationJudged":
          // "A verified refund or reversal appends a reversal to the existing outcome."
          return trigger.verdict === "reversed"
            ? move("reversed", { appendReversal: true })
            : stay(`observation_${trigger.verdict}`)
      }
    // falls through
    case "failed":
    case "reversed":
      switch (trigger._tag) {
        case "AckRejected":
          return illegal("acknowledgement_contradicts_accepted")
        default:
          return stay("terminal")
      }
    // falls through
    case "blocked":
      // Nothing was ever sent: whatever arrives later changes nothing.
      return stay("terminal")
  }
}

/**
 * "The embedded runtime follows an action's success destination only after the action state is
 * `verified`."
 */
export const journeyMayAdvance = (state: ActionState): boolean => state === "verified"

/**
 * States in which the action is no longer waiting for anything.
 */
export const isTerminal = (state: ActionState): boolean =>
  state === "rejected" || state === "failed" || state === "reversed" || state === "blocked"
