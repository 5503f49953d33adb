/**
 * The `ApprovalNotifier` port: how the private approval token of a new approval
 * request reaches the account's billing owner. A host that embeds Accord provides its own (mail,
 * its in-app inbox); the token is handed over as `Redacted` and must not be logged.
 *
 * The default, `layerPickup`, keeps the token sealed in the `SecretVault` (AES-256-GCM under the
 * master key) until an admin caller collects it once (`collect`; the service's
 * `POST /approvals/{approvalId}/token` route). Of concurrent collects only one gets the token; after
 * that there is none.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type { OpenFailed } from "../protocol/Cipher.ts"
import { SecretVault } from "./SecretVault.ts"
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

export interface ApprovalNotifierService {
  readonly notify: (notice: ApprovalNotice) => Effect.Effect<void, StorageError>
  /**
   * The token of an approval, once (the pickup default only): `None` when it was collected
   * already, never deposited, or this notifier delivers tokens elsewhere.
   */
  readonly collect: (
    approvalId: string
  ) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, StorageError | OpenFailed>
}

export class ApprovalNotifier extends Context.Tag("@accord/core/ApprovalNotifier")<
  ApprovalNotifier,
  ApprovalNotifierService
>() {}

const tokenRef = (approvalId: string) => `approval-token:${approvalId}`

/**
 * The pickup default over the secret vault.
 */
export const makePickup: Effect.Effect<ApprovalNotifierService, never, SecretVault> = Effect.map(
  SecretVault,
  (vault) => ({
    notify: (notice) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        vault.put(tokenRef(notice.approvalId), notice.approvalToken, now)
      ),
    collect: (approvalId) =>
      Effect.gen(function* () {
        const sealed = yield* vault.get(tokenRef(approvalId))
        if (Option.isNone(sealed)) return Option.none()
        // Whoever retires it first is the one collector.
        return (yield* vault.retire(tokenRef(approvalId))) ? sealed : Option.none()
      })
  })
)

export const layerPickup: Layer.Layer<ApprovalNotifier, never, SecretVault> = Layer.effect(ApprovalNotifier, makePickup)
