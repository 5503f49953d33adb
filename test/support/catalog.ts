/**
 * Publishing the fixture catalog (`deliveries.ts`) for a workspace, through the port or over HTTP:
 * every connector test's intake binds to it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { CatalogDocument } from "../../core/protocol/messages/Catalog.ts"
import { CatalogStore } from "../../core/ports/CatalogStore.ts"
import type { ActionIntake } from "../../core/connector/Action.ts"
import { fixtureActionVersionId, fixtureCatalog, fixtureOfferVersionId } from "./deliveries.ts"

/** Publishes `document` (default: the fixture catalog) unless the workspace already has its version. */
export const publishCatalog = (workspaceId: string, document: CatalogDocument = fixtureCatalog) =>
  Effect.gen(function* () {
    const store = yield* CatalogStore
    const publishedVersionId = document.publishedVersionId ?? globalThis.crypto.randomUUID()
    const result = yield* store.publish({
      workspaceId,
      publishedVersionId,
      publishedAt: yield* Clock.currentTimeMillis,
      publishedBy: "test",
      document
    })
    return result === "published_version_exists" ? publishedVersionId : result.publishedVersionId
  })

/** `PUT /catalog` over HTTP with an admin key; a 409 (already published) counts as done. */
export const publishCatalogHttp = async (
  baseUrl: string,
  workspaceId: string,
  adminKey: string,
  document: CatalogDocument = fixtureCatalog
): Promise<void> => {
  const response = await fetch(`${baseUrl}/api/admin/v1/workspaces/${workspaceId}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(document)
  })
  if (response.status !== 201 && response.status !== 409) {
    throw new Error(`PUT /catalog answered ${response.status}: ${await response.text()}`)
  }
}

const catalogParameters = ["extensionDays", "interval", "proration", "priceKey"]

/**
 * The catalog operation that fixes an intake's parameters (all but the family and the trialRef), when
 * the catalog can state each of them; else none, so the catalog fixes nothing.
 */
const fixedParameters = (operation: Readonly<Record<string, unknown>>) => {
  const fields = Object.entries(operation).filter(([k]) => k !== "family" && k !== "trialRef")
  return fields.every(([k]) => catalogParameters.includes(k)) ? { operation: Object.fromEntries(fields) } : {}
}

const readBack = ["provider_event", "billing_change", "subscription_state", "credit_balance"] as const

/**
 * A catalog document that accepts exactly these intakes (the first one's `publishedVersionId`):
 * one offer per bound offer (priced as the intake's snapshot), one action per action id, one
 * decision per decision leading to all of its actions and offers.
 */
export const catalogFor = (intakes: ReadonlyArray<ActionIntake>): CatalogDocument => {
  const offers = new Map<string, CatalogDocument["offers"][number]>()
  const actions = new Map<string, CatalogDocument["actions"][number]>()
  const decisions = new Map<string, { journeyId: string; actionIds: Set<string>; offerIds: Set<string> }>()
  for (const intake of intakes) {
    const { action, binding, payment } = intake
    const priced = payment !== undefined && payment.expected !== null
    offers.set(binding.offerId, {
      offerId: binding.offerId,
      offerVersionId: payment?.offerVersionId ?? fixtureOfferVersionId,
      price: priced ? { amountMinor: payment.expected!.amountMinor, currency: payment.expected!.currency } : null
    })
    actions.set(action.id, {
      actionId: action.id,
      actionVersionId: payment?.actionVersionId ?? fixtureActionVersionId,
      key: action.key,
      family: action.operation.family as CatalogDocument["actions"][number]["family"],
      safeTerms: action.safeTerms,
      ...fixedParameters(action.operation),
      ...(priced ? { offerId: binding.offerId } : {}),
      evidence:
        payment === undefined
          ? ["authenticated_completion", "entitlement_state", "customer_server_event"]
          : [...readBack]
    })
    const decision = decisions.get(binding.decisionId) ?? {
      journeyId: binding.journeyId,
      actionIds: new Set(),
      offerIds: new Set()
    }
    decision.actionIds.add(action.id)
    decision.offerIds.add(binding.offerId)
    decisions.set(binding.decisionId, decision)
  }
  return {
    publishedVersionId: intakes[0]!.binding.publishedVersionId,
    offers: [...offers.values()],
    actions: [...actions.values()] as unknown as CatalogDocument["actions"],
    decisions: [...decisions.entries()].map(([decisionId, d]) => ({
      decisionId,
      journeyId: d.journeyId,
      actionIds: [...d.actionIds] as unknown as readonly [string, ...Array<string>],
      offerIds: [...d.offerIds]
    })) as unknown as CatalogDocument["decisions"]
  }
}
