/**
 * The customer kit tests' fixtures that need only `effect` and core (no storage, no node:http), so
 * the Bun and Deno smoke runs load them too: the test secrets and deliveries signed as the service
 * would sign them.
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Schema from "effect/Schema"
import type { ExecutionResult } from "../../core/customer/Worker.ts"
import { deriveProviderIdempotencyKey } from "../../core/protocol/Idempotency.ts"
import { Completion } from "../../core/protocol/messages/Completion.ts"
import {
  type ConnectorSecrets,
  encodeBody,
  freshNonce,
  importSigningKeys,
  type Purpose,
  sign,
  type SigningKeys
} from "../../core/protocol/Signing.ts"
import { type HeaderSource, verifyAndDecode } from "../../core/protocol/Verification.ts"
import type { ActionIntake } from "../../core/connector/Action.ts"
import { paymentFamilies, paymentRule } from "../../core/protocol/OperationFamily.ts"
import type { CatalogDocument } from "../../core/protocol/messages/Catalog.ts"
import type { PaymentMode } from "../../core/protocol/messages/Common.ts"

export const workspaceId = "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"
export const connectionId = "6a2e9c14-8b3d-4f5a-a1c7-2d4e6f8a0b13"
export const start = Date.UTC(2026, 10, 22, 10, 15, 30)
export const secrets = {
  actionSigning: Redacted.make("as_3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e"),
  completion: Redacted.make("cs_8e6c4a2f0d1b3e5c7a9f1d3b5e7c9a1f3d5b7e9c")
}
/** The secrets of the next connection revision (rotation tests). */
export const nextSecrets = {
  actionSigning: Redacted.make("as_next_7d1f3b5a9c2e4f6a8b0d1c3e5f7a9b2d4"),
  completion: Redacted.make("cs_next_2b4d6f8a0c1e3f5b7d9a1c3e5b7d9f0a2")
}
export const wrongSecrets = {
  actionSigning: Redacted.make("as_000000000000000000000000000000000000000000"),
  completion: Redacted.make("cs_000000000000000000000000000000000000000000")
}

/** The safe terms of every fixture catalog action (and of the example action). */
export const fixtureSafeTerms = { confirmation: "Extend your trial by 14 days?", label: "Extend trial" }

/** The trial the example action targets (a runtime session names it for its account). */
export const fixtureTrialRef = { entityKey: "sub_1", entityKind: "subscription", version: 3 }

/** The example action every connector test sends (caller-owned parts of an execution request). */
export const intakeInput = (accountId = "acct_42"): ActionIntake => ({
  accountId,
  action: {
    id: "1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e",
    key: "extend_trial_14",
    operation: {
      family: "extend_trial",
      extensionDays: 14,
      trialRef: fixtureTrialRef
    },
    safeTerms: fixtureSafeTerms
  },
  actor: { authority: "billing_owner", roleKey: "owner", subjectId: "user_7" },
  binding: {
    decisionId: "2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f",
    journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
    offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b",
    publishedVersionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c"
  }
})

/** The catalog action id of each operation family in the fixture catalog (extend-trial: the example action). */
export const fixtureActionIds: Readonly<Record<string, string>> = {
  extend_trial: "1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e",
  "payment.existing_subscription_change": "8a0c2e4f-6b8d-4f1a-9c3e-5b7d9f1a3c50",
  "payment.new_subscription": "8a0c2e4f-6b8d-4f1a-9c3e-5b7d9f1a3c51",
  "payment.one_time_purchase": "8a0c2e4f-6b8d-4f1a-9c3e-5b7d9f1a3c52",
  "payment.setup_only": "8a0c2e4f-6b8d-4f1a-9c3e-5b7d9f1a3c53",
  recover_payment: "8a0c2e4f-6b8d-4f1a-9c3e-5b7d9f1a3c54"
}

/** The fixed operation parameters of the fixture catalog's Payment actions, by mode. */
export const fixtureOperations: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  one_time_purchase: { priceKey: "addon" },
  new_subscription: { priceKey: "pro" },
  existing_subscription_change: { priceKey: "team", proration: "always_invoice" }
}

/** The version of every fixture catalog action, and of the priced offer (Payment snapshots name them). */
export const fixtureActionVersionId = "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f"
export const fixtureOfferVersionId = "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e"

/**
 * The catalog every connector test publishes (`binding.publishedVersionId` of `intakeInput`): the
 * example extend-trial action, one action per Payment family (`key` `pay_<mode>`), one offer at
 * 49.00 usd and one decision leading to all of them.
 */
export const fixtureCatalog: CatalogDocument = {
  publishedVersionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c",
  offers: [
    {
      offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b",
      offerVersionId: fixtureOfferVersionId,
      price: { amountMinor: 4900, currency: "usd" }
    }
  ],
  actions: [
    {
      actionId: fixtureActionIds["extend_trial"]!,
      actionVersionId: fixtureActionVersionId,
      key: "extend_trial_14",
      family: "extend_trial",
      safeTerms: fixtureSafeTerms,
      operation: { extensionDays: 14 },
      evidence: ["authenticated_completion", "entitlement_state", "customer_server_event"]
    },
    ...paymentFamilies.map(({ family, mode }) => ({
      actionId: fixtureActionIds[family]!,
      actionVersionId: fixtureActionVersionId,
      key: `pay_${mode}`,
      family: family as CatalogDocument["actions"][number]["family"],
      safeTerms: fixtureSafeTerms,
      // The reference backend prices a one-time purchase, a subscription and a change by their price keys.
      operation: fixtureOperations[mode] ?? {},
      ...(mode === "setup_only" ? {} : { offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b" }),
      evidence: ["provider_event", "billing_change", "subscription_state", "credit_balance"] as const
    }))
  ] as unknown as CatalogDocument["actions"],
  decisions: [
    {
      decisionId: "2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f",
      journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
      actionIds: Object.values(fixtureActionIds) as unknown as readonly [string, ...Array<string>],
      offerIds: ["4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b"]
    }
  ]
}

/** A Payment action of `mode` from the fixture catalog, with its authorization snapshot. */
export const paymentIntake = (mode: PaymentMode, accountId = "acct_42"): ActionIntake => {
  const base = intakeInput(accountId)
  const family = paymentRule(mode).family
  return {
    ...base,
    action: {
      ...base.action,
      id: fixtureActionIds[family]!,
      key: `pay_${mode}`,
      operation: { family, ...fixtureOperations[mode] }
    },
    payment: {
      mode,
      actionVersionId: fixtureActionVersionId,
      offerVersionId: mode === "setup_only" ? null : fixtureOfferVersionId,
      expected:
        mode === "setup_only" ? null : { amountMinor: 4900, currency: "usd", priceReferenceHash: "c".repeat(64) }
    }
  }
}

export const executionBody = (actionRequestId: string) =>
  Effect.map(deriveProviderIdempotencyKey(workspaceId, actionRequestId), (providerIdempotencyKey) => ({
    type: "service.customer_action.execute",
    protocolVersion: 1,
    workspaceId,
    actionRequestId,
    ...intakeInput(),
    providerIdempotencyKey,
    requestedAt: "2026-11-22T10:15:30.000Z",
    requestNonce: ""
  }))

export type Body = Record<string, unknown>

/** Signs one execution delivery as the service would: a fresh nonce, echoed in `requestNonce`. */
export const executionDelivery = (
  keys: SigningKeys,
  body: Body,
  /** `idempotencyKey`: the header's value (default the body's key), `null` to leave the header out. */
  options: { readonly idempotencyKey?: string | null; readonly mutate?: (body: Body) => Body } = {}
) =>
  Effect.gen(function* () {
    const nonce = yield* freshNonce
    const withNonce = { ...body, requestNonce: nonce }
    const bytes = encodeBody(options.mutate ? options.mutate(withNonce) : withNonce)
    const headers = yield* sign({ purpose: "dispatch_request", keys, body: bytes, nonce })
    const idempotencyKey =
      options.idempotencyKey === undefined ? (body.providerIdempotencyKey as string) : options.idempotencyKey
    return {
      nonce,
      headers: {
        ...headers,
        ...(idempotencyKey === null ? {} : { "x-service-customer-action-idempotency-key": idempotencyKey })
      } as Record<string, string>,
      body: bytes
    }
  })

export const handshakeDelivery = (keys: SigningKeys, challenge?: string) =>
  Effect.gen(function* () {
    const nonce = yield* freshNonce
    const bytes = encodeBody({
      challenge: challenge ?? nonce,
      connectionId,
      protocolVersion: 1,
      sentAt: "2026-11-22T10:15:30.000Z",
      type: "service.customer_action.handshake",
      workspaceId
    })
    const headers = yield* sign({ purpose: "handshake_request", keys, body: bytes, nonce })
    return { nonce, headers: { ...headers } as Record<string, string>, body: bytes }
  })

/** A signed message as received: a kit's response, or a completion arriving at the "service". */
export interface SignedMessage {
  readonly headers: HeaderSource
  readonly body: Uint8Array
}

export const verifyResponse = <A, I>(
  schema: Schema.Schema<A, I, never>,
  purpose: Purpose,
  keys: SigningKeys,
  response: SignedMessage
) =>
  Effect.map(
    verifyAndDecode(schema, { purpose, keys, headers: response.headers, body: response.body, nonceScope: "service" }),
    (verified) => verified.body
  )

/** Verifies a completion the kit delivered, with the completion secret of `pair`; its body. */
export const verifyCompletion = (received: SignedMessage, pair: ConnectorSecrets = secrets) =>
  Effect.flatMap(importSigningKeys(pair), (keys) => verifyResponse(Completion, "completion", keys, received))

/** What a test executor reports for an extend-trial it ran. */
export const succeeded = (actionRequestId: string): ExecutionResult => ({
  outcome: "succeeded",
  providerReference: "trial_ext_" + actionRequestId.slice(0, 8),
  evidence: {
    entitlement: "trial",
    reasonCode: "trial_extended",
    source: "authenticated_completion",
    extensionDays: 14
  }
})
