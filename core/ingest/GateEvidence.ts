/**
 * Settling a feature gate against the access evidence already committed (spec "States and
 * transitions": a checking state that an `entitlement_active` event unlocks).
 *
 * The group commit unlocks the checking gates an event is evidence for, in the event's
 * transaction. A gate created while that transaction runs is not among the gates it reads, and the
 * event is not yet visible to the gate's creator, so neither side would unlock it. Settling closes
 * that window: whoever reads a checking gate (its creation, `GET` of the gate or of the account)
 * first searches the account's committed access evidence, completely, and unlocks the gate with
 * the earliest-received matching event. A read therefore never reports `checking` while evidence
 * committed before it exists, and the unlock records the same event and time the commit would have
 * (`receivedAt`), whichever side wins the compare-and-set.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { EventStore, type StoredEvent } from "../ports/EventStore.ts"
import { type FeatureGate, FeatureGateStore } from "../ports/FeatureGateStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { featureAccessEventName, isAccessEvidence } from "./FeatureAccess.ts"
import type { NormalizedBody } from "./Normalize.ts"

const earliestReceived = (a: StoredEvent, b: StoredEvent): number =>
  a.receivedAt - b.receivedAt || (a.id < b.id ? -1 : 1)

/**
 * The gate as it stands once every access event committed so far has been considered: unchanged
 * unless it was checking and evidence exists, then unlocked by the earliest-received matching
 * event (or by whoever unlocked it first).
 */
export const settleGate = (
  gate: FeatureGate
): Effect.Effect<FeatureGate, StorageError, EventStore | FeatureGateStore> =>
  Effect.gen(function* () {
    if (gate.state !== "checking") return gate
    const candidates = yield* (yield* EventStore).listAll({
      workspaceId: gate.workspaceId,
      accountId: gate.accountId,
      eventName: featureAccessEventName,
      from: gate.startedAt + 1
    })
    // Events reach the store only through the ingest route, which accepts only `ingest` keys.
    const [evidence] = candidates
      .filter((event) => isAccessEvidence(event.body as NormalizedBody, gate, { keyScope: "ingest" }))
      .sort(earliestReceived)
    if (evidence === undefined) return gate
    const gates = yield* FeatureGateStore
    yield* gates.unlock({ workspaceId: gate.workspaceId, id: gate.id, at: evidence.receivedAt, eventId: evidence.id })
    return Option.getOrElse(yield* gates.get(gate.workspaceId, gate.id), () => gate)
  })
