/**
 * The payment capability rule (spec "Payment capability evidence lifecycle", "Payment continuation
 * rules" 1–2): capability evidence covers a payment mode for a connection revision at a time when
 * it is fresh ("one hour after recording: the evidence expires"), bound to that revision, which is
 * the connection's current active one ("proof `connectionRevision` must match the current
 * revision"; evidence of a revision replaced since is invalid), and it includes the mode. A
 * continuation's intent must also fit the mode (`intentFits`).
 *
 * The dispatcher's continuation check, `GET /connector` and the connection check's `paymentModes`
 * all decide through this module.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type CapabilityEvidence, CapabilityRegistry } from "../ports/CapabilityRegistry.ts"
import type { Connection } from "../ports/ConnectionStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import type { PaymentMode } from "../protocol/messages/Common.ts"
import type { PaymentContinuation } from "../protocol/messages/Continuation.ts"
import { activeRevision } from "./Revisions.ts"

/**
 * Whether `evidence` counts at `now` for a connection whose active revision is `activeRevision`:
 * not expired and recorded for that revision.
 *
 * @since 0.1.0
 */
export const evidenceCurrent = (
  evidence: CapabilityEvidence,
  activeRevision: number | undefined,
  now: number
): boolean => now < evidence.expiresAt && evidence.revision === activeRevision

/**
 * The one payment capability rule: whether `evidence` covers `mode` at `now` for a connection whose
 * active revision is `activeRevision` (current evidence that includes the mode).
 *
 * @since 0.1.0
 */
export const coversPaymentMode = (
  evidence: Option.Option<CapabilityEvidence>,
  at: { readonly activeRevision: number | undefined; readonly mode: PaymentMode; readonly now: number }
): boolean =>
  Option.isSome(evidence) && evidenceCurrent(evidence.value, at.activeRevision, at.now) && evidence.value.modes.includes(at.mode)

/**
 * Which continuation intent a payment mode may mount: a setup-only action saves a method (a setup
 * intent), a one-time purchase charges (a payment intent); subscription changes, new subscriptions
 * and recoveries may need either (a trial or a zero first invoice mounts a setup intent).
 *
 * @since 0.1.0
 */
export const intentFits = (mode: PaymentMode, intent: PaymentContinuation["intent"]): boolean =>
  mode === "setup_only" ? intent === "setup" : mode === "one_time_purchase" ? intent === "payment" : true

/**
 * The capability evidence that currently counts for a connection: still valid at `now` and bound
 * to its active revision.
 *
 * @since 0.1.0
 */
export const currentCapabilities = (
  connection: Connection,
  now: number
): Effect.Effect<Option.Option<CapabilityEvidence>, StorageError, CapabilityRegistry> =>
  Effect.map(
    Effect.flatMap(CapabilityRegistry, (registry) => registry.current(connection.connectionId, now)),
    Option.filter((evidence) => evidenceCurrent(evidence, activeRevision(connection)?.revision, now))
  )
