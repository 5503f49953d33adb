/**
 * The `CapabilityRegistry` port: payment capability evidence from signed handshakes
 * (spec "Payment capability evidence lifecycle").
 *
 * One entry per connection. Recording replaces the previous set; recording the exact same response
 * again (same fingerprint) is a replay and does not extend freshness; an acknowledgement without a
 * proof clears the set; evidence older than one hour is expired and never returned as current.
 * Revisions only grow: evidence is never replaced or cleared on behalf of an older revision than
 * the one it was recorded for, so a slow check of an older revision cannot undo a newer one's
 * (decided inside the store, atomically).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { PaymentMode } from "../protocol/messages/Common.ts"
import type { StorageError } from "./StorageError.ts"

/**
 * "One hour after recording: the evidence expires."
 */
export const capabilityValidityMillis = 60 * 60_000

/**
 * A connection revision's proven payment capability: modes, live or test, the account proven, and
 * when it expires.
 */
export interface CapabilityEvidence {
  readonly connectionId: string
  readonly revision: number
  readonly modes: ReadonlyArray<PaymentMode>
  readonly livemode: boolean
  readonly connectedAccountReferenceHash: string
  /** Lowercase hex SHA-256 of the signed handshake response body that carried the proof. */
  readonly responseFingerprint: string
  /** The provider connection's generation at recording; a change invalidates the proof. */
  readonly providerConnectionGeneration: string
  readonly recordedAt: number
  readonly expiresAt: number
}

/**
 * The capability port: records the proof a connection check obtained and answers the current one.
 */
export interface CapabilityRegistryService {
  /**
   * Records evidence, replacing the connection's previous set. `replay` when the same response
   * fingerprint is already recorded: nothing changes, in particular not `expiresAt`.
   * `older_revision` when the recorded evidence is of a newer revision: nothing changes.
   */
  readonly record: (
    evidence: CapabilityEvidence
  ) => Effect.Effect<"recorded" | "replay" | "older_revision", StorageError>
  /**
   * Removes the connection's evidence (acknowledgement without proof, or a connection change) if it
   * was recorded for `revision` or an older one; evidence of a newer revision stays.
   */
  readonly clear: (connectionId: string, revision: number) => Effect.Effect<void, StorageError>
  /** The evidence still valid at `now`, if any. */
  readonly current: (
    connectionId: string,
    now: number
  ) => Effect.Effect<Option.Option<CapabilityEvidence>, StorageError>
}

/** The service tag of the payment capability registry. */
export class CapabilityRegistry extends Context.Tag("@accord/core/CapabilityRegistry")<
  CapabilityRegistry,
  CapabilityRegistryService
>() {}
