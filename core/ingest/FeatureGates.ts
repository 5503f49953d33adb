/**
 * Feature gates awaiting access evidence: a gate stays `checking` until an `entitlement_active`
 * event for the same account, journey, version and feature, timed after the journey began and sent
 * with a server ingest key, unlocks it. A gate is answered only once settled against the evidence
 * committed so far (`GateEvidence.settleGate`), so neither its creation nor a read reports
 * `checking` while such evidence exists.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Crypto } from "../ports/Crypto.ts"
import type { EventStore } from "../ports/EventStore.ts"
import { type FeatureGate, FeatureGateStore } from "../ports/FeatureGateStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { NotFound } from "../protocol/NotFound.ts"
import { canonicalUuid, randomUuid } from "../protocol/Uuid.ts"
import { settleGate } from "./GateEvidence.ts"

/**
 * A new gate, as the workspace's administrator declares it.
 */
export type GateInput = Pick<
  FeatureGate,
  "workspaceId" | "accountId" | "journeyId" | "versionId" | "featureKey" | "startedAt"
>

/**
 * Creates a checking gate and answers it settled: evidence committed before (or while) the gate
 * was created unlocks it at once.
 */
export const createGate = (
  input: GateInput
): Effect.Effect<FeatureGate, StorageError, FeatureGateStore | EventStore | Crypto> =>
  Effect.gen(function* () {
    const gates = yield* FeatureGateStore
    const id = yield* randomUuid
    yield* gates.create({
      id,
      workspaceId: input.workspaceId,
      accountId: input.accountId,
      journeyId: input.journeyId.toLowerCase(),
      versionId: input.versionId.toLowerCase(),
      featureKey: input.featureKey,
      startedAt: input.startedAt,
      createdAt: yield* Clock.currentTimeMillis
    })
    const created = yield* gates.get(input.workspaceId, id)
    return yield* settleGate(Option.getOrThrow(created))
  })

/**
 * The workspace's gate `id`, settled.
 */
export const getGate = (
  workspaceId: string,
  id: string
): Effect.Effect<FeatureGate, NotFound | StorageError, FeatureGateStore | EventStore> =>
  Effect.flatMap(
    Option.match(canonicalUuid(id), {
      onNone: () => Effect.succeed(Option.none()),
      onSome: (canonical) => Effect.flatMap(FeatureGateStore, (gates) => gates.get(workspaceId, canonical))
    }),
    (gate): Effect.Effect<FeatureGate, NotFound | StorageError, FeatureGateStore | EventStore> =>
      Option.isNone(gate) ? Effect.fail(new NotFound({ resource: "feature_gate" })) : settleGate(gate.value)
  )
