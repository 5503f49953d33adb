import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { layerMemory as eventStoreMemory } from "../../../adapters/memory/EventStore.ts"
import { layerMemory as gateStoreMemory } from "../../../adapters/memory/FeatureGateStore.ts"
import { EventStore, type StoredEvent } from "../../../core/ports/EventStore.ts"
import { type FeatureGate, FeatureGateStore } from "../../../core/ports/FeatureGateStore.ts"
import { buildFeatureAccessEvent } from "../../../core/ingest/FeatureAccess.ts"
import { settleGate } from "../../../core/ingest/GateEvidence.ts"
import { prepareEvent } from "../../../core/ingest/Ingest.ts"
import { now } from "./support.ts"

const journeyId = "2f1b6a0e-9c4d-4f7e-8a3b-5d6c7e8f9a0b"
const versionId = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
const startedAt = now - 60 * 60_000
const stores = Layer.mergeAll(eventStoreMemory, gateStoreMemory)

let ids = 0
/** An access event as the commit stores it (prepared by the ingestion rules), received at `receivedAt`. */
const committed = (
  receivedAt: number,
  overrides: {
    readonly featureKey?: string
    readonly journeyId?: string
    readonly occurredAt?: number
    readonly account?: string
  } = {}
): StoredEvent => {
  const event = buildFeatureAccessEvent({
    accountId: overrides.account ?? "acct_42",
    featureKey: overrides.featureKey ?? "advanced_exports",
    journeyId: overrides.journeyId ?? journeyId,
    versionId,
    occurredAt: new Date(overrides.occurredAt ?? now - 60_000).toISOString(),
    actionRequestId: `act_${++ids}`
  })
  const prepared = Either.getOrThrow(
    prepareEvent(event, { id: `evt_${String(ids).padStart(4, "0")}`, workspaceId: "ws_1", now: receivedAt })
  )
  return { ...prepared.stored, receivedAt, payloadHash: "0".repeat(64) }
}

const createGate = (overrides: Partial<FeatureGate> = {}) =>
  Effect.gen(function* () {
    const gates = yield* FeatureGateStore
    const id = `gate_${++ids}`
    yield* gates.create({
      id,
      workspaceId: "ws_1",
      accountId: "acct_42",
      journeyId,
      versionId,
      featureKey: "advanced_exports",
      startedAt,
      createdAt: now,
      ...overrides
    })
    return Option.getOrThrow(yield* gates.get("ws_1", id))
  })

const append = (events: ReadonlyArray<StoredEvent>) => Effect.flatMap(EventStore, (store) => store.append(events))

describe("settleGate", () => {
  it.effect("evidence committed without unlocking the gate (created while the commit ran) unlocks it when read", () =>
    Effect.gen(function* () {
      const gate = yield* createGate()
      const evidence = committed(now - 1000)
      yield* append([evidence])
      const settled = yield* settleGate(gate)
      assert.deepStrictEqual(
        [settled.state, settled.unlockEventId, settled.unlockedAt],
        ["unlocked", evidence.id, evidence.receivedAt]
      )
      assert.deepStrictEqual(Option.getOrThrow(yield* (yield* FeatureGateStore).get("ws_1", gate.id)), settled)
    }).pipe(Effect.provide(stores))
  )

  it.effect("the search is complete: the match is found behind hundreds of newer non-matching access events", () =>
    Effect.gen(function* () {
      const gate = yield* createGate()
      const match = committed(now - 5000, { occurredAt: startedAt + 1 })
      const others = Array.from({ length: 250 }, (_, i) => committed(now - 4000 + i, { featureKey: `feature_${i}` }))
      yield* append([match, ...others])
      assert.strictEqual((yield* settleGate(gate)).unlockEventId, match.id)
    }).pipe(Effect.provide(stores))
  )

  it.effect("of several matches, the earliest received unlocks it, as the commit would have", () =>
    Effect.gen(function* () {
      const gate = yield* createGate()
      const later = committed(now - 100)
      const first = committed(now - 900)
      yield* append([later, first])
      assert.strictEqual((yield* settleGate(gate)).unlockEventId, first.id)
    }).pipe(Effect.provide(stores))
  )

  it.effect("stays checking without matching evidence: other feature, journey or account, or not after the start", () =>
    Effect.gen(function* () {
      const gate = yield* createGate()
      yield* append([
        committed(now - 10, { featureKey: "sso" }),
        committed(now - 10, { journeyId: "00000000-0000-4000-8000-000000000000" }),
        committed(now - 10, { account: "acct_7" }),
        committed(now - 10, { occurredAt: startedAt })
      ])
      assert.deepStrictEqual(yield* settleGate(gate), gate)
    }).pipe(Effect.provide(stores))
  )

  it.effect("upper-case funnel ids in the evidence match the gate's", () =>
    Effect.gen(function* () {
      const gate = yield* createGate()
      yield* append([committed(now - 10, { journeyId: journeyId.toUpperCase() })])
      assert.strictEqual((yield* settleGate(gate)).state, "unlocked")
    }).pipe(Effect.provide(stores))
  )

  it.effect("an unlocked gate is returned as it is, its unlocking event kept", () =>
    Effect.gen(function* () {
      const gate = yield* createGate()
      const gates = yield* FeatureGateStore
      yield* gates.unlock({ workspaceId: "ws_1", id: gate.id, at: now, eventId: "evt_earlier" })
      yield* append([committed(now - 10)])
      const unlocked = Option.getOrThrow(yield* gates.get("ws_1", gate.id))
      assert.deepStrictEqual(yield* settleGate(unlocked), unlocked)
    }).pipe(Effect.provide(stores))
  )
})
