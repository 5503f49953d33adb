/**
 * The stored catalog (spec "What the service does" 5–7 and the sentence "Before
 * sending the execution request the service revalidates the current published version, decision,
 * account state, authority, catalog references, transition, offer and frequency policy").
 *
 * A workspace publishes one whole catalog document at a time; each publish is a new numbered
 * version with its own `publishedVersionId` (the UUID an action's `binding.publishedVersionId`
 * names: the caller's, when its own builder already has one, else a fresh one), kept for ever: a
 * republish never rewrites an earlier version, and never reuses a `publishedVersionId`. The document holds:
 *
 * - `offers`: each with its `offerVersionId` and exact price (`amountMinor` and a lowercase ISO
 *   4217 `currency`), or `price: null` for an offer with no charge (a trial extension);
 * - `actions`: each with its `key`, operation `family`, `actionVersionId`, optional `offerId`,
 *   the evidence types that may verify it (`evidence`), and an optional frequency policy (at most
 *   `limit` actions per account within `windowSeconds`);
 * - `decisions`: each bound to one `journeyId`, with the actions it may lead to (the allowed
 *   transitions), the offers it presents, an optional expiry (`validUntil`) and optional
 *   `accountStatuses` (the account's `account_status` profile fact must be one of them).
 *
 * The document's shapes are `protocol/messages/Catalog.ts`. `validateCatalog` is the one check of a
 * document's references (every id unique, every reference
 * resolves, a Payment action names an offer with a price, or none for `setup_only`, and never
 * `authenticated_completion` as its evidence: "A Payment action is never verified by a completion
 * alone"; an action that is not a payment never names a type only a reconciliation read observes).
 */
import type { CatalogAction, CatalogDocument, Decision, Offer } from "../protocol/messages/Catalog.ts"
import type { CatalogEvidenceType } from "../protocol/messages/Completion.ts"
import { ruleOf } from "../protocol/OperationFamily.ts"

/**
 * The evidence types the service can observe for a Payment action: a matched signed reconciliation
 * observation (and, once approvals exist, a recorded approval).
 */
export const paymentEvidenceTypes: ReadonlyArray<CatalogEvidenceType> = [
  "provider_event",
  "billing_change",
  "subscription_state",
  "credit_balance",
  "approval_recorded"
]

/** The types only a reconciliation read observes: never evidence for an action that is not a payment. */
const readBackTypes: ReadonlyArray<CatalogEvidenceType> = [
  "provider_event",
  "billing_change",
  "subscription_state",
  "credit_balance"
]

/**
 * A reference problem in a catalog document: the JSON path and what is wrong.
 */
export interface CatalogIssue {
  readonly path: string
  readonly message: string
}

/**
 * Every reference problem of a (schema-valid) document, in document order; empty when it is sound.
 */
export const validateCatalog = (document: CatalogDocument): ReadonlyArray<CatalogIssue> => {
  const issues: Array<CatalogIssue> = []
  const unique = <T>(items: ReadonlyArray<T>, id: (t: T) => string, path: string, field: string) => {
    const seen = new Set<string>()
    items.forEach((item, i) => {
      const value = id(item)
      if (seen.has(value)) issues.push({ path: `${path}.${i}.${field}`, message: `duplicate ${field}` })
      seen.add(value)
    })
    return seen
  }
  const offers = new Map(document.offers.map((o) => [o.offerId, o]))
  unique(document.offers, (o) => o.offerId, "offers", "offerId")
  const actions = unique(document.actions, (a) => a.actionId, "actions", "actionId")
  unique(document.actions, (a) => a.key, "actions", "key")
  unique(document.decisions, (d) => d.decisionId, "decisions", "decisionId")
  document.actions.forEach((action, i) => {
    const path = `actions.${i}`
    const offer = action.offerId === undefined ? undefined : offers.get(action.offerId)
    if (action.offerId !== undefined && offer === undefined)
      issues.push({ path: `${path}.offerId`, message: "names no offer of this catalog" })
    const payment = ruleOf(action.family).payment
    if (payment !== undefined) {
      if (payment.priced && (offer === undefined || offer.price === null)) {
        issues.push({ path: `${path}.offerId`, message: "a Payment action must name an offer with a price" })
      }
      if (!payment.priced && offer !== undefined && offer.price !== null) {
        issues.push({ path: `${path}.offerId`, message: `a ${payment.mode} action has no priced offer` })
      }
      action.evidence.forEach((type, j) => {
        if (!paymentEvidenceTypes.includes(type)) {
          issues.push({
            path: `${path}.evidence.${j}`,
            message: `${type} cannot verify a Payment action (it needs evidence the service reads back)`
          })
        }
      })
    } else {
      action.evidence.forEach((type, j) => {
        if (readBackTypes.includes(type)) {
          issues.push({
            path: `${path}.evidence.${j}`,
            message: `${type} can verify only a Payment action (the service reads it back by reconciliation)`
          })
        }
      })
    }
  })
  document.decisions.forEach((decision, i) => {
    decision.actionIds.forEach((id, j) => {
      if (!actions.has(id))
        issues.push({ path: `decisions.${i}.actionIds.${j}`, message: "names no action of this catalog" })
    })
    decision.offerIds.forEach((id, j) => {
      if (!offers.has(id))
        issues.push({ path: `decisions.${i}.offerIds.${j}`, message: "names no offer of this catalog" })
    })
  })
  return issues
}

/**
 * The catalog action an intake names, by id.
 */
export const findAction = (document: CatalogDocument, actionId: string): CatalogAction | undefined =>
  document.actions.find((a) => a.actionId === actionId)

export const findDecision = (document: CatalogDocument, decisionId: string): Decision | undefined =>
  document.decisions.find((d) => d.decisionId === decisionId)

export const findOffer = (document: CatalogDocument, offerId: string): Offer | undefined =>
  document.offers.find((o) => o.offerId === offerId)
