/**
 * The payment capability evidence a successful handshake leaves behind (spec "Payment capability
 * evidence lifecycle"): "proof `connectionRevision` must match the current revision"; "a successful
 * acknowledgement without proof" removes the previous modes; a valid proof is recorded with the
 * connector identity and revision, the response fingerprint and the provider connection generation.
 */
import * as Effect from "effect/Effect"
import {
  type CapabilityEvidence,
  CapabilityRegistry,
  capabilityValidityMillis
} from "../../ports/CapabilityRegistry.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import type { Acknowledged } from "./handshake.ts"

/**
 * Why a successful handshake's payment capability proof was refused (the handshake still succeeds,
 * but the proof enables nothing and the previous modes are removed).
 */
export type CapabilityProblem = "capability_revision_mismatch"

/**
 * The provider connection generation of a proof. The service holds no provider connection of its
 * own, so the connected account (its reference hash) and the environment identify it: a proof naming
 * another account or environment is another generation, and replaces the previous evidence.
 */
export const providerConnectionGeneration = (proof: {
  readonly connectedAccountReferenceHash: string
  readonly livemode: boolean
}): string => `${proof.livemode ? "live" : "test"}:${proof.connectedAccountReferenceHash}`

/**
 * Replaces the connection's capability evidence with what a successful handshake proved.
 */
export const recordCapabilities = (
  connectionId: string,
  revision: number,
  acknowledged: Acknowledged,
  now: number
): Effect.Effect<CapabilityProblem | "revision_superseded" | null, StorageError, CapabilityRegistry> =>
  Effect.gen(function* () {
    const registry = yield* CapabilityRegistry
    const proof = acknowledged.ack.paymentCapabilities
    // The store never lets an older revision's result clear or replace a newer revision's evidence:
    // a slow check of a revision replaced meanwhile changes nothing.
    if (proof === undefined) {
      yield* registry.clear(connectionId, revision)
      return null
    }
    if (proof.connectionRevision !== revision) {
      yield* registry.clear(connectionId, revision)
      return "capability_revision_mismatch"
    }
    const evidence: CapabilityEvidence = {
      connectionId,
      revision,
      modes: proof.modes,
      livemode: proof.livemode,
      connectedAccountReferenceHash: proof.connectedAccountReferenceHash,
      responseFingerprint: acknowledged.fingerprint,
      providerConnectionGeneration: providerConnectionGeneration(proof),
      recordedAt: now,
      expiresAt: now + capabilityValidityMillis
    }
    // An exact replay (same response fingerprint) changes nothing, `expiresAt` included.
    const recorded = yield* registry.record(evidence)
    return recorded === "older_revision" ? "revision_superseded" : null
  })
