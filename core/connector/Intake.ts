/**
 * Intake of an authorized action for dispatch (spec "What the service does" 1–3, "Execution request
 * body"): "persist it and an outbox item in one transaction". The action is bound to the
 * connection's active revision, gets its `actionRequestId` and the `providerIdempotencyKey` derived
 * from it, starts in `dispatching` and is delivered by the dispatcher (`Dispatcher.ts`).
 *
 * A Payment action is taken only when the connection's active revision holds fresh capability
 * evidence that includes its mode (`Capability.ts`; "Each requires its matching workspace capability
 * and the current connector revision"); otherwise nothing is stored (`PaymentModeNotEnabled`). The
 * provider connection generation of that evidence is bound to the action (in its outbox item and
 * intake history) so the dispatcher can tell a later provider connection change.
 *
 * With a caller's idempotency key (`IntakeKey.ts`), a live claim of the key is answered before
 * anything else (the original action, or `IdempotencyKeyReused`), and a new action claims the key
 * in the write that creates it, so concurrent intakes under one key create one action.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ActionLedger, type ActionRecord, type IntakeKeyClaim } from "../ports/ActionLedger.ts"
import { CapabilityRegistry } from "../ports/CapabilityRegistry.ts"
import { ConnectionStore } from "../ports/ConnectionStore.ts"
import { Crypto, CryptoSync } from "../ports/Crypto.ts"
import { DispatchSignal, type DispatchSlot } from "../ports/DispatchSignal.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { deriveProviderIdempotencyKeySync, deriveProviderIdempotencyKeyWith } from "../protocol/Idempotency.ts"
import { timeOrderedUuidSync, timeOrderedUuidWith } from "../protocol/Uuid.ts"
import { PaymentMode as PaymentModeSchema } from "../protocol/messages/Common.ts"
import {
  type ActionIntake,
  type Authority,
  checkPaymentSnapshot,
  dispatchOutboxKind,
  isPaymentAction,
  PaymentSnapshotProblem,
  type StoredRequest
} from "./Action.ts"
import type { ActionState } from "./ActionState.ts"
import { PaymentCapabilityProblem, paymentGateWith } from "./Capability.ts"
import {
  type IdempotencyKeyReused,
  intakeKeyLiveSince,
  type InvalidIdempotencyKey,
  prepareIntakeKey,
  replayClaim
} from "./IntakeKey.ts"
import { Revalidation, type RevalidationFailed } from "./Revalidation.ts"
import { activeRevision } from "./Revisions.ts"

/**
 * The workspace has no active connection revision to dispatch to.
 */
export class ConnectorNotActive extends Schema.TaggedError<ConnectorNotActive>()("ConnectorNotActive", {}) {}

/**
 * The intake's payment snapshot does not fit its action (see `checkPaymentSnapshot`).
 */
export class PaymentSnapshotMismatch extends Schema.TaggedError<PaymentSnapshotMismatch>()("PaymentSnapshotMismatch", {
  reason: PaymentSnapshotProblem
}) {}

/**
 * A Payment action whose mode the connection's active revision does not currently hold (see
 * `paymentCapabilityVerdict`): nothing was stored. `mode` is the family's payment mode, `reason`
 * the gate's code; neither is a secret.
 */
export class PaymentModeNotEnabled extends Schema.TaggedError<PaymentModeNotEnabled>()("PaymentModeNotEnabled", {
  mode: PaymentModeSchema,
  reason: PaymentCapabilityProblem
}) {}

/**
 * The outbox payload of a delivery: the action, and for a Payment action the provider connection
 * generation of the capability evidence it was taken under.
 */
export interface DispatchPayload {
  readonly actionRequestId: string
  readonly providerConnectionGeneration?: string
}

/**
 * What intake answers: the action and its state at intake; `replayed` when an earlier intake
 * under the same idempotency key created it (the answer is then that intake's answer).
 */
export interface IntakeAnswer {
  readonly actionRequestId: string
  readonly state: ActionState
  readonly replayed: boolean
}

/**
 * Accepts an authorized action for delivery: requires an active connection revision, binds the
 * action to it and persists the action with its outbox item (and the caller's idempotency key,
 * when given) atomically. When the context has a `DispatchSignal` and a dispatcher of this process
 * takes actions from intake (`runDispatcher`'s `takeFromIntake`) and has a free slot, the outbox item is created already leased to that dispatcher and the committed
 * action handed straight to it; otherwise the dispatcher is woken and leases it. Without an
 * idempotency key, every call creates a new action. Not to be run inside a caller's transaction:
 * the handoff counts on the create having committed when it returns.
 */
export const intake = (
  workspaceId: string,
  input: ActionIntake,
  options: {
    readonly idempotencyKey?: string | undefined
    readonly authorizedBy?: Authority | undefined
    /** The resolved approval that authorizes it: recorded as the first history entry, `approval_recorded` evidence. */
    readonly approval?: { readonly approvalId: string; readonly revision: number } | undefined
  } = {}
): Effect.Effect<
  IntakeAnswer,
  | ConnectorNotActive
  | PaymentSnapshotMismatch
  | PaymentModeNotEnabled
  | InvalidIdempotencyKey
  | IdempotencyKeyReused
  | RevalidationFailed
  | StorageError,
  ActionLedger | ConnectionStore | CapabilityRegistry | Crypto | Revalidation
> =>
  Effect.gen(function* () {
    // The services, read from the context in one step rather than one step each.
    const context = yield* Effect.context<ActionLedger | ConnectionStore | CapabilityRegistry | Crypto | Revalidation>()
    const ledger = Context.get(context, ActionLedger)
    const key =
      options.idempotencyKey === undefined ? undefined : yield* prepareIntakeKey(options.idempotencyKey, input)
    const replay = (claim: IntakeKeyClaim) =>
      Effect.map(replayClaim(claim, key!), ({ actionRequestId }) => ({
        actionRequestId,
        state: "dispatching" as const,
        replayed: true
      }))
    if (key !== undefined) {
      const liveSince = intakeKeyLiveSince(yield* Clock.currentTimeMillis)
      const claimed = yield* ledger.findIntakeKey({ workspaceId, idempotencyKey: key.idempotencyKey, liveSince })
      if (Option.isSome(claimed)) return yield* replay(claimed.value)
    }
    const problem = checkPaymentSnapshot(input)
    if (problem !== undefined) return yield* new PaymentSnapshotMismatch({ reason: problem })
    const connections = Context.get(context, ConnectionStore)
    const connection = yield* connections.get(workspaceId)
    const active = Option.flatMap(connection, (c) => Option.fromNullable(activeRevision(c)))
    if (Option.isNone(connection) || Option.isNone(active)) return yield* new ConnectorNotActive()
    const now = yield* Clock.currentTimeMillis
    const request: StoredRequest =
      options.authorizedBy === undefined ? input : { ...input, authorizedBy: options.authorizedBy }
    // The catalog, account, authority and frequency checks the dispatcher repeats before every send.
    yield* Context.get(context, Revalidation).check({ workspaceId, request, now })
    // Only a Payment action has a gate to pass.
    const gate = !isPaymentAction(input)
      ? undefined
      : yield* paymentGateWith({ connections, capabilities: Context.get(context, CapabilityRegistry) })(
          connection.value.connectionId,
          input,
          { now }
        )
    if (gate !== undefined && gate.verdict !== "covered") {
      return yield* new PaymentModeNotEnabled({ mode: gate.mode, reason: gate.verdict })
    }
    const generation = gate?.generation !== undefined ? { providerConnectionGeneration: gate.generation } : {}
    const crypto = Context.get(context, Crypto)
    const sync = Option.getOrUndefined(Context.getOption(context, CryptoSync))
    // Synchronous with `CryptoSync` (node:crypto): no effect step each. Both ids are version 7
    // UUIDs: time-ordered, so the actions' and the outbox's primary keys take new rows at their
    // right edge (docs/decisions.md, "Row ids are time-ordered").
    const uuid = sync === undefined ? undefined : timeOrderedUuidSync(sync)
    const actionRequestId = uuid !== undefined ? uuid(now) : yield* timeOrderedUuidWith(crypto, now)
    const providerIdempotencyKey =
      sync !== undefined
        ? deriveProviderIdempotencyKeySync(sync.sha256Hex, workspaceId, actionRequestId)
        : yield* deriveProviderIdempotencyKeyWith(crypto, workspaceId, actionRequestId)
    const record = {
      actionRequestId,
      workspaceId,
      accountId: input.accountId,
      connectionId: connection.value.connectionId,
      revision: active.value.revision,
      providerIdempotencyKey,
      state: "dispatching",
      request,
      acknowledgement: null,
      sealedContinuation: null,
      createdAt: now
    } satisfies Omit<ActionRecord, "version" | "updatedAt">
    const outbox = {
      id: uuid !== undefined ? uuid(now) : yield* timeOrderedUuidWith(crypto, now),
      kind: dispatchOutboxKind,
      dedupeKey: actionRequestId,
      payload: { actionRequestId, ...generation } satisfies DispatchPayload,
      nextAttemptAt: now,
      createdAt: now
    }
    const signal = Context.getOption(context, DispatchSignal)
    const create = (slot: Option.Option<DispatchSlot>) =>
      ledger.create({
        record,
        history:
          options.approval === undefined
            ? { at: now, trigger: "intake", detail: { revision: active.value.revision, ...generation } }
            : {
                at: now,
                trigger: "approval_recorded",
                detail: {
                  revision: active.value.revision,
                  approvalId: options.approval.approvalId,
                  approvalRevision: options.approval.revision,
                  ...generation
                }
              },
        outbox,
        ...(Option.isSome(slot)
          ? { outboxLease: { owner: slot.value.owner, expiresAt: now + slot.value.leaseMillis } }
          : {}),
        ...(key === undefined
          ? {}
          : {
              intakeKey: {
                claim: {
                  workspaceId,
                  idempotencyKey: key.idempotencyKey,
                  bodyHash: key.bodyHash,
                  actionRequestId,
                  createdAt: now
                },
                liveSince: intakeKeyLiveSince(now)
              }
            })
      })
    // A free slot of this process's dispatcher takes the action as soon as it is committed, its
    // item created already leased to it; the slot is handed the action or given back, exactly once,
    // whatever happens to the write (failure, duplicate, interruption).
    const { created, handedOver } = yield* Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const slot = Option.isSome(signal) ? yield* signal.value.reserve : Option.none<DispatchSlot>()
        const exit = yield* Effect.exit(restore(create(slot)))
        if (Option.isSome(slot)) {
          yield* Exit.isSuccess(exit) && exit.value === "created"
            ? slot.value.start({
                item: {
                  ...outbox,
                  attempts: 0,
                  leaseOwner: slot.value.owner,
                  leaseExpiresAt: now + slot.value.leaseMillis,
                  completedAt: null,
                  lastError: null
                },
                action: Option.some({ ...record, updatedAt: now, version: 1 })
              })
            : slot.value.release
        }
        return { created: yield* exit, handedOver: Option.isSome(slot) }
      })
    )
    // A concurrent intake under the same key committed first: answer as if it had come before.
    if (typeof created === "object") return yield* replay(created.claim)
    // A fresh random id cannot collide; if it ever did, nothing was written and the caller retries.
    if (created !== "created") return yield* Effect.die("action request id collision")
    // Committed without a slot: wake this process's dispatcher, if one listens (it polls in any case).
    if (!handedOver && Option.isSome(signal)) yield* signal.value.wake
    return { actionRequestId, state: "dispatching" as const, replayed: false }
  })
