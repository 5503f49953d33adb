/**
 * CapabilityRegistry in memory: the recorded payment capabilities per connection revision.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  type CapabilityEvidence,
  CapabilityRegistry,
  type CapabilityRegistryService
} from "../../core/ports/CapabilityRegistry.ts"

/** An empty `CapabilityRegistry` held in this process's memory. */
export const make = (): CapabilityRegistryService => {
  const entries = new Map<string, CapabilityEvidence>()
  return {
    record: (evidence) =>
      Effect.sync(() => {
        const existing = entries.get(evidence.connectionId)
        if (existing !== undefined && existing.responseFingerprint === evidence.responseFingerprint) return "replay"
        if (existing !== undefined && existing.revision > evidence.revision) return "older_revision"
        entries.set(evidence.connectionId, evidence)
        return "recorded"
      }),
    clear: (connectionId, revision) =>
      Effect.sync(() => {
        const existing = entries.get(connectionId)
        if (existing !== undefined && existing.revision <= revision) entries.delete(connectionId)
      }),
    current: (connectionId, now) =>
      Effect.sync(() => Option.filter(Option.fromNullable(entries.get(connectionId)), (e) => e.expiresAt > now))
  }
}

/** Provides an empty in-memory `CapabilityRegistry`. */
export const layerMemory: Layer.Layer<CapabilityRegistry> = Layer.sync(CapabilityRegistry, make)
