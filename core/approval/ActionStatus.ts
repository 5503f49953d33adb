/**
 * The actor-bound action status for the embedded runtime (spec "What the service
 * does" 6, "Payment continuation rules" 1 and 4–7).
 *
 * A runtime session of the action's account whose subject is the action's actor sees the action's
 * `state` and `mayAdvance` (`journeyMayAdvance`: true only once `verified`). Anyone else gets the
 * same `None` as for an unknown ID, so existence does not leak. The payment continuation is served
 * only for an `accepted`, server-authorized Payment action before its `expiresAt`: opened from its
 * encrypted stored form, never logged, never served once expired.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { decodeStoredRequest, isPaymentAction } from "../connector/Action.ts"
import { type ActionState, journeyMayAdvance } from "../connector/ActionState.ts"
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

/** Decoding checks `expiresAt` against the clock too: an expired continuation does not decode. */
const decodeContinuation = Schema.decodeUnknown(Schema.parseJson(PaymentContinuationSchema))

/**
 * The status of `actionRequestId` for the session, or `None` when there is no such action for its
 * account and actor.
 */
export const actionStatus = (session: RuntimeSessionRecord, actionRequestId: string) =>
  Effect.gen(function* () {
    const id = canonicalUuid(actionRequestId)
    if (Option.isNone(id)) return Option.none<ActionStatus>()
    const record = yield* (yield* ActionLedger).get(id.value)
    if (Option.isNone(record)) return Option.none<ActionStatus>()
    const r = record.value
    const request = yield* Effect.option(decodeStoredRequest(r))
    if (
      r.workspaceId !== session.workspaceId ||
      r.accountId !== session.accountId ||
      Option.isNone(request) ||
      request.value.actor.subjectId !== session.subject
    ) {
      return Option.none<ActionStatus>()
    }
    const state = r.state as ActionState
    const status: ActionStatus = { actionRequestId: r.actionRequestId, state, mayAdvance: journeyMayAdvance(state) }
    if (r.state !== "accepted" || r.sealedContinuation === null || !isPaymentAction(request.value))
      return Option.some(status)
    const cipher = yield* Cipher
    const continuation = yield* Effect.option(
      Effect.flatMap(cipher.open(r.sealedContinuation, `continuation:${r.actionRequestId}`), decodeContinuation)
    )
    return Option.some(
      Option.match(continuation, { onNone: () => status, onSome: (c) => ({ ...status, continuation: c }) })
    )
  })
