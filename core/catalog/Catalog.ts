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
 * alone"; an action that is not a payment never names a type only a reconciliation read observes;
 * an operation's fixed parameters fit its family).
 *
 * What runs is defined here, on the server ("Browser input must never replace the bound account,
 * offer, version, action or safe terms"): an action's `safeTerms` and its operation's fixed
 * parameters (`operation`). `termsMismatch` is the one comparison of an action with them (intake,
 * every delivery, every approval step), and `definedAction` the one way an action is built from
 * them plus the account's own part, the extend-trial `trialRef`, which a server supplies.
 */
import { parseTimestamp } from "../protocol/Timestamp.ts"
import type { CatalogAction, CatalogDocument, Decision, Offer } from "../protocol/messages/Catalog.ts"
import type { CatalogEvidenceType } from "../protocol/messages/Completion.ts"
import type { Action, Operation, TrialRef } from "../protocol/messages/Execution.ts"
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
export const validateCatalog = (
  document: CatalogDocument,
  /** When given (publishing), a decision already past its `validUntil` is an issue: it could never be used. */
  now?: number
): ReadonlyArray<CatalogIssue> => {
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
  document.actions.forEach((action, i) => {
    const operation = action.operation
    if (operation === undefined) return
    const extendTrial = action.family === "extend_trial"
    for (const field of Object.keys(operation) as Array<keyof typeof operation>) {
      const allowed = extendTrial ? field === "extensionDays" : field !== "extensionDays"
      if (!allowed) {
        issues.push({
          path: `actions.${i}.operation.${field}`,
          message: `is not a parameter of the ${action.family} family`
        })
      }
    }
    if (extendTrial && operation.extensionDays === undefined) {
      issues.push({
        path: `actions.${i}.operation.extensionDays`,
        message: "an extend_trial operation fixes extensionDays"
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
    if (now !== undefined && decision.validUntil !== undefined && (parseTimestamp(decision.validUntil) ?? 0) <= now)
      issues.push({ path: `decisions.${i}.validUntil`, message: "is already past: the decision could never be used" })
  })
  return issues
}

/**
 * The catalog action an intake names, by id.
 */
export const findAction = (document: CatalogDocument, actionId: string): CatalogAction | undefined =>
  document.actions.find((a) => a.actionId === actionId)

/** The catalog document's decision with this id, if any. */
export const findDecision = (document: CatalogDocument, decisionId: string): Decision | undefined =>
  document.decisions.find((d) => d.decisionId === decisionId)

/** The catalog document's offer with this id, if any. */
export const findOffer = (document: CatalogDocument, offerId: string): Offer | undefined =>
  document.offers.find((o) => o.offerId === offerId)

/**
 * The operation fields each family takes from the account rather than the catalog: a server
 * supplies them (the runtime session the host's server issued, or the host's own intake), never
 * the browser.
 */
export const accountOperationFields: Readonly<Record<string, ReadonlyArray<string>>> = { extend_trial: ["trialRef"] }

/**
 * Where an action differs from the safe terms and fixed operation parameters its catalog action
 * defines: the request field and what is wrong. Safe terms and parameters the catalog action does
 * not define are not compared; an operation field that is neither fixed by the catalog action nor
 * the account's own part is refused once the catalog action fixes its operation.
 */
export interface TermsMismatch {
  readonly path: string
  readonly detail: string
}

/**
 * The first difference between `action` and the terms of its catalog action `defined`, if any.
 */
export const termsMismatch = (
  defined: CatalogAction,
  action: Pick<Action, "operation" | "safeTerms">
): TermsMismatch | undefined => {
  if (defined.safeTerms !== undefined) {
    for (const field of ["label", "confirmation"] as const) {
      if (action.safeTerms[field] !== defined.safeTerms[field]) {
        return { path: `action.safeTerms.${field}`, detail: `action.safeTerms.${field} is not the catalog action's` }
      }
    }
  }
  const fixed = defined.operation
  if (fixed === undefined) return undefined
  const operation = action.operation as Readonly<Record<string, unknown>>
  const fixedFields = Object.keys(fixed) as Array<keyof typeof fixed>
  for (const field of fixedFields) {
    if (operation[field] !== fixed[field]) {
      return {
        path: `action.operation.${field}`,
        detail: `action.operation.${field} must be the catalog action's fixed value`
      }
    }
  }
  const ownFields = accountOperationFields[action.operation.family] ?? []
  for (const field of Object.keys(operation)) {
    if (field !== "family" && !(fixedFields as Array<string>).includes(field) && !ownFields.includes(field)) {
      return {
        path: `action.operation.${field}`,
        detail: `action.operation.${field} is not a parameter of the catalog action`
      }
    }
  }
  return undefined
}

/**
 * The account's own part of an operation, from a server-side source.
 */
export interface AccountParts {
  readonly trialRef?: TrialRef | undefined
}

/**
 * The action a catalog action defines, completed with the account's own part: its `safeTerms`, and
 * an operation of its family with its fixed parameters. A string says what is missing: the catalog
 * action's safe terms or fixed parameters, or the account's part.
 */
export const definedAction = (defined: CatalogAction, account: AccountParts): Action | string => {
  if (defined.safeTerms === undefined) return "the catalog action defines no safeTerms"
  if (defined.operation === undefined) return "the catalog action defines no operation parameters"
  const safeTerms = { label: defined.safeTerms.label, confirmation: defined.safeTerms.confirmation }
  let operation: Operation
  if (defined.family === "extend_trial") {
    if (defined.operation.extensionDays === undefined) return "the catalog action defines no extensionDays"
    if (account.trialRef === undefined) return "the runtime session names no trialRef for the account"
    operation = { family: "extend_trial", extensionDays: defined.operation.extensionDays, trialRef: account.trialRef }
  } else {
    operation = { ...defined.operation, family: defined.family } as Operation
  }
  return { id: defined.actionId, key: defined.key, operation, safeTerms }
}
