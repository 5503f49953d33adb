/**
 * The default `ApprovalNotifier`: the approval token is kept sealed in the `SecretVault` (AES-256-GCM
 * under the master key) until an admin caller collects it once (the service's
 * `POST /approvals/{approvalId}/token` route). Of concurrent collects only one gets the token, since
 * whoever retires the sealed value first is the one collector; after that there is none.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ApprovalNotifier, type ApprovalNotifierService } from "../ports/ApprovalNotifier.ts"
import { SecretVault } from "../ports/SecretVault.ts"

const tokenRef = (approvalId: string) => `approval-token:${approvalId}`

/**
 * An `ApprovalNotifier` that seals each approval token in the `SecretVault` until the host collects
 * it once.
 */
export const make: Effect.Effect<ApprovalNotifierService, never, SecretVault> = Effect.map(SecretVault, (vault) => ({
  notify: (notice) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => vault.put(tokenRef(notice.approvalId), notice.approvalToken, now)),
  collect: (approvalId) =>
    Effect.gen(function* () {
      const sealed = yield* vault.get(tokenRef(approvalId))
      if (Option.isNone(sealed)) return Option.none()
      // Whoever retires it first is the one collector.
      return (yield* vault.retire(tokenRef(approvalId))) ? sealed : Option.none()
    })
}))

/** Provides the token-pickup `ApprovalNotifier` over the `SecretVault`. */
export const layer: Layer.Layer<ApprovalNotifier, never, SecretVault> = Layer.effect(ApprovalNotifier, make)
