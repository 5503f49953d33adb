/**
 * The actor-bound action status for the embedded runtime (spec "What the service
 * does" 6, "Payment continuation rules" 1 and 4–7).
 *
 * A runtime session of the action's account whose subject is the action's actor sees the action's
 * `state` and `mayAdvance` (`journeyMayAdvance`: true only once `verified`). Anyone else gets the
 * same `None` as for an unknown ID, so existence does not leak. The payment continuation is served
 * only for an `accepted`, server-authorized Payment action before its `expiresAt`: opened from its
 * encrypted stored form, never logged, never served once expired.
 *
 * A runtime polls this status until the action is final, so each read also says when to read
 * again (`pollAfterSeconds`) and which version of the action it shows (`version`, for a
 * conditional read that answers "not modified" when nothing changed).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { decodeStoredRequest, isPaymentAction } from "../connector/Action.ts"
import { type ActionState, isTerminal, journeyMayAdvance } from "../connector/ActionState.ts"
import { ActionLedger } from "../ports/ActionLedger.ts"
import type { RuntimeSessionRecord } from "../ports/RuntimeSessionStore.ts"
import { Cipher } from "../protocol/Cipher.ts"
import {
  type PaymentContinuation,
  PaymentContinuation as PaymentContinuationSchema
} from "../protocol/messages/Continuation.ts"
import { canonicalUuid } from "../protocol/Uuid.ts"

/**
 * What the runtime may read of its own actor's action: its state, whether the journey may advance,
 * and a payment continuation while it is valid.
 */
export interface ActionStatus {
  readonly actionRequestId: string
  readonly state: ActionState
  readonly mayAdvance: boolean
  readonly continuation?: PaymentContinuation
}

/**
 * One read of the status: what the runtime may see, the stored action's `version` (it changes with
 * every transition, so together with whether a continuation is shown it names what is shown) and
 * when to read again.
 */
export interface ActionStatusRead {
  readonly status: ActionStatus
  readonly version: number
  /** Whole seconds until the next read is worth making; absent once the action is final. */
  readonly pollAfterSeconds: number | undefined
}

/** The longest pause `pollAfterSeconds` asks for. */
export const maxPollAfterSeconds = 60

/**
 * The shortest pause by state: an action about to be acknowledged or completed is read again soon;
 * the states furthest from final wait on retries, reconciliation or evidence windows measured in
 * minutes.
 */
const pollFloorSeconds: Readonly<Record<ActionState, number>> = {
  dispatching: 1,
  accepted: 1,
  pending: 2,
  unknown_outcome: 5,
  unresolved: 15,
  evidence_overdue: 30,
  verified: 0,
  rejected: 0,
  failed: 0,
  reversed: 0,
  blocked: 0
}

/**
 * When to read an action's status again, in whole seconds, after it has waited `waitedMillis` in
 * its state; `undefined` once it is final (`verified`, or a terminal state): nothing the journey
 * waits for changes then. The pause grows with the wait so far (a quarter of it: an action that has
 * waited long is likely to wait longer), from its state's floor up to `maxPollAfterSeconds`.
 */
export const pollAfterSeconds = (state: ActionState, waitedMillis: number): number | undefined =>
  journeyMayAdvance(state) || isTerminal(state)
    ? undefined
    : Math.min(maxPollAfterSeconds, Math.max(pollFloorSeconds[state], Math.ceil(Math.max(0, waitedMillis) / 4000)))

/** Decoding checks `expiresAt` against the clock too: an expired continuation does not decode. */
const decodeContinuation = Schema.decodeUnknown(Schema.parseJson(PaymentContinuationSchema))

/**
 * The status of `actionRequestId` for the session, with its version and when to read it again, or
 * `None` when there is no such action for its account and actor.
 */
export const actionStatus = (session: RuntimeSessionRecord, actionRequestId: string) =>
  Effect.gen(function* () {
    const id = canonicalUuid(actionRequestId)
    if (Option.isNone(id)) return Option.none<ActionStatusRead>()
    const record = yield* (yield* ActionLedger).get(id.value)
    if (Option.isNone(record)) return Option.none<ActionStatusRead>()
    const r = record.value
    const request = yield* Effect.option(decodeStoredRequest(r))
    if (
      r.workspaceId !== session.workspaceId ||
      r.accountId !== session.accountId ||
      Option.isNone(request) ||
      request.value.actor.subjectId !== session.subject
    ) {
      return Option.none<ActionStatusRead>()
    }
    const state = r.state as ActionState
    const status: ActionStatus = { actionRequestId: r.actionRequestId, state, mayAdvance: journeyMayAdvance(state) }
    const read = {
      version: r.version,
      pollAfterSeconds: pollAfterSeconds(state, (yield* Clock.currentTimeMillis) - r.updatedAt)
    }
    if (r.state !== "accepted" || r.sealedContinuation === null || !isPaymentAction(request.value))
      return Option.some({ status, ...read })
    const cipher = yield* Cipher
    const continuation = yield* Effect.option(
      Effect.flatMap(cipher.open(r.sealedContinuation, `continuation:${r.actionRequestId}`), decodeContinuation)
    )
    return Option.some({
      status: Option.match(continuation, { onNone: () => status, onSome: (c) => ({ ...status, continuation: c }) }),
      ...read
    })
  })
