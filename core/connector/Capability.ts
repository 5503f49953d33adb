/**
 * The payment capability rule (spec "Payment capability evidence lifecycle", "Payment continuation
 * rules" 1–2): capability evidence covers a payment mode for a connection revision at a time when
 * it is fresh ("one hour after recording: the evidence expires"), bound to that revision, which is
 * the connection's current active one ("proof `connectionRevision` must match the current
 * revision"; evidence of a revision replaced since is invalid), and it includes the mode. A
 * continuation's intent must also fit the mode (`continuationProblem`).
 *
 * The payment capability gate ("Payment continuation rules" 2: "Each requires its matching
 * workspace capability and the current connector revision") decides here too: intake takes a
 * Payment action only when `paymentCapabilityVerdict` says `covered`, and the dispatcher asks again
 * before every delivery attempt (`paymentGate`), so an action whose evidence lapsed, was invalidated
 * ("Change of either connection (connector or provider): the proof is invalidated") or whose
 * revision is no longer the active one is never sent.
 *
 * The same verdict, with the same reason codes, judges a continuation ("It is allowed only on an
 * accepted, server-authorized Payment action ... Each requires its matching workspace capability and
 * the current connector revision"): the dispatcher asks the gate again when the acknowledgement
 * arrives. `GET /connector` and the connection check's `paymentModes` decide through this module
 * too.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  type CapabilityEvidence,
  CapabilityRegistry,
  type CapabilityRegistryService
} from "../ports/CapabilityRegistry.ts"
import { type Connection, ConnectionStore, type ConnectionStoreService } from "../ports/ConnectionStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import type { PaymentMode } from "../protocol/messages/Common.ts"
import type { PaymentContinuation } from "../protocol/messages/Continuation.ts"
import { paymentRuleOf, type StoredRequest } from "./Action.ts"
import { activeRevision } from "./Revisions.ts"

/**
 * Whether `evidence` counts at `now` for a connection whose active revision is `activeRevision`:
 * not expired and recorded for that revision.
 */
export const evidenceCurrent = (
  evidence: CapabilityEvidence,
  activeRevision: number | undefined,
  now: number
): boolean => now < evidence.expiresAt && evidence.revision === activeRevision

/**
 * The one payment capability rule: whether `evidence` covers `mode` at `now` for a connection whose
 * active revision is `activeRevision` (current evidence that includes the mode).
 */
export const coversPaymentMode = (
  evidence: Option.Option<CapabilityEvidence>,
  at: { readonly activeRevision: number | undefined; readonly mode: PaymentMode; readonly now: number }
): boolean =>
  Option.isSome(evidence) &&
  evidenceCurrent(evidence.value, at.activeRevision, at.now) &&
  evidence.value.modes.includes(at.mode)

/**
 * What a continuation must be beyond the capability verdict ("allowed only on an accepted,
 * server-authorized Payment action"), in this order: `not_a_payment_action` unless the action's
 * family is a Payment family and its snapshot is of that family's mode; `intent_does_not_fit_mode`
 * unless the intent is one the family's mode may mount (`OperationFamily.ts`). `undefined` when
 * it is.
 */
export const continuationProblem = (
  request: Pick<StoredRequest, "action" | "payment">,
  continuation: Pick<PaymentContinuation, "intent">
): "not_a_payment_action" | "intent_does_not_fit_mode" | undefined => {
  const rule = paymentRuleOf(request)
  if (rule === undefined || request.payment === undefined || request.payment.mode !== rule.mode)
    return "not_a_payment_action"
  return rule.continuationIntents.includes(continuation.intent) ? undefined : "intent_does_not_fit_mode"
}

/**
 * The capability evidence that currently counts for a connection: still valid at `now` and bound
 * to its active revision.
 */
export const currentCapabilities = (
  connection: Connection,
  now: number
): Effect.Effect<Option.Option<CapabilityEvidence>, StorageError, CapabilityRegistry> =>
  Effect.map(
    Effect.flatMap(CapabilityRegistry, (registry) => registry.current(connection.connectionId, now)),
    Option.filter((evidence) => evidenceCurrent(evidence, activeRevision(connection)?.revision, now))
  )

/**
 * Why capability evidence does not cover a Payment action's mode (stable codes, shown in the
 * action's history and, at intake, in the 409 problem):
 * - `payment_capability_missing`: no evidence is held for the connection (none proved, a generic
 *   acknowledgement without proof removed it, it expired and is no longer returned, or a provider
 *   connection change invalidated it);
 * - `payment_capability_expired`: the evidence in hand is one hour old or older;
 * - `revision_not_current`: the action's revision, or the evidence's, is not the active revision
 *   (a reconfiguration activated another one);
 * - `provider_connection_changed`: the evidence proves another provider connection generation than
 *   the one the action was taken under;
 * - `payment_mode_not_enabled`: current evidence that does not include the mode.
 */
export const PaymentCapabilityProblem = Schema.Literal(
  "payment_capability_missing",
  "payment_capability_expired",
  "revision_not_current",
  "provider_connection_changed",
  "payment_mode_not_enabled"
)

export type PaymentCapabilityProblem = typeof PaymentCapabilityProblem.Type

/**
 * The one payment capability rule with its reason: `covered` exactly when `coversPaymentMode` holds
 * and, where given, the action's bound revision is the active one and the evidence proves the
 * provider connection generation the action was taken under. Checks in a fixed order, so one
 * situation always yields the same reason.
 */
export const paymentCapabilityVerdict = (
  evidence: Option.Option<CapabilityEvidence>,
  at: {
    readonly activeRevision: number | undefined
    readonly mode: PaymentMode
    readonly now: number
    /** The revision the action is bound to (a stored action); intake binds to the active one. */
    readonly boundRevision?: number
    /** The provider connection generation the action was taken under, when known. */
    readonly generation?: string
  }
): "covered" | PaymentCapabilityProblem => {
  if (at.activeRevision === undefined || (at.boundRevision !== undefined && at.boundRevision !== at.activeRevision)) {
    return "revision_not_current"
  }
  if (Option.isNone(evidence)) return "payment_capability_missing"
  if (evidence.value.revision !== at.activeRevision) return "revision_not_current"
  if (at.now >= evidence.value.expiresAt) return "payment_capability_expired"
  if (at.generation !== undefined && evidence.value.providerConnectionGeneration !== at.generation) {
    return "provider_connection_changed"
  }
  if (!coversPaymentMode(evidence, at)) return "payment_mode_not_enabled"
  return "covered"
}

/**
 * When a payment gate is asked: the time, and the revision and provider connection generation the
 * action is bound to, when it is.
 */
export interface PaymentGateTime {
  readonly now: number
  readonly boundRevision?: number
  readonly generation?: string
}

/**
 * A payment gate's answer: `undefined` for an action that is not a Payment action.
 */
export type PaymentGateAnswer =
  | {
      readonly mode: PaymentMode
      readonly verdict: "covered" | PaymentCapabilityProblem
      readonly generation: string | undefined
    }
  | undefined

/**
 * The payment capability gate of one action, read fresh from storage at `now`: `undefined` for an
 * action that is not a Payment action; otherwise the mode, the verdict and the covering evidence's
 * provider connection generation (bound to the action at intake, compared at every delivery).
 */
export const paymentGate = (
  connectionId: string,
  request: Pick<StoredRequest, "action">,
  at: PaymentGateTime
): Effect.Effect<PaymentGateAnswer, StorageError, CapabilityRegistry | ConnectionStore> =>
  Effect.flatMap(ConnectionStore, (connections) =>
    Effect.flatMap(CapabilityRegistry, (capabilities) =>
      paymentGateWith({ connections, capabilities })(connectionId, request, at)
    )
  )

/**
 * {@link paymentGate} over the given stores, for a caller that holds them (a dispatcher): providing
 * them per call copies the fiber's whole context each time.
 */
export const paymentGateWith =
  (stores: { readonly connections: ConnectionStoreService; readonly capabilities: CapabilityRegistryService }) =>
  (
    connectionId: string,
    request: Pick<StoredRequest, "action">,
    at: PaymentGateTime
  ): Effect.Effect<PaymentGateAnswer, StorageError> =>
    Effect.suspend(() => {
      const mode = paymentRuleOf(request)?.mode
      if (mode === undefined) return Effect.succeed(undefined)
      return Effect.gen(function* () {
        const connection = yield* stores.connections.getById(connectionId)
        const active = Option.match(connection, { onNone: () => undefined, onSome: (c) => activeRevision(c)?.revision })
        const evidence = yield* stores.capabilities.current(connectionId, at.now)
        return {
          mode,
          verdict: paymentCapabilityVerdict(evidence, { ...at, activeRevision: active, mode }),
          generation: Option.match(evidence, { onNone: () => undefined, onSome: (e) => e.providerConnectionGeneration })
        }
      })
    })
