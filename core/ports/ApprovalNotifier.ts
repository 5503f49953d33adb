/**
 * The `ApprovalNotifier` port: how the private approval token of a new approval
 * request reaches the account's billing owner. A host that embeds Accord provides its own (mail,
 * its in-app inbox); the token is handed over as `Redacted` and must not be logged.
 *
 * The server's default (`core/approval/TokenPickup.ts`) keeps the token sealed in the `SecretVault`
 * until an admin caller collects it once (`collect`; the service's `POST /approvals/{approvalId}/token`
 * route).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type { OpenFailed } from "../protocol/Cipher.ts"
import type { StorageError } from "./StorageError.ts"

/**
 * A new approval request, for its billing owner.
 */
export interface ApprovalNotice {
  readonly workspaceId: string
  readonly accountId: string
  readonly approvalId: string
  readonly requesterRole: string
  readonly expiresAt: number
  readonly approvalToken: Redacted.Redacted<string>
}

/** Delivers an approval token to the billing owner (or holds it for the host to collect once). */
export interface ApprovalNotifierService {
  /** Delivers the approval token for the billing owner (or holds it for pickup). */
  readonly notify: (notice: ApprovalNotice) => Effect.Effect<void, StorageError>
  /**
   * The token of an approval, once (the pickup default only): `None` when it was collected
   * already, never deposited, or this notifier delivers tokens elsewhere.
   */
  readonly collect: (
    approvalId: string
  ) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, StorageError | OpenFailed>
}

/** The service tag of the approval notifier; `TokenPickup.layer` is the default. */
export class ApprovalNotifier extends Context.Tag("@accord/core/ApprovalNotifier")<
  ApprovalNotifier,
  ApprovalNotifierService
>() {}
