/**
 * Revalidation before dispatch (spec: "Before sending the execution request the
 * service revalidates the current published version, decision, account state, authority, catalog
 * references, transition, offer and frequency policy").
 *
 * One `Revalidation` service answers whether an action may still be sent. Intake asks it before
 * anything is stored (a failure refuses the intake, naming the field), and the dispatcher asks it
 * again before the first send and before every retry (a failure blocks the action: nothing is
 * sent, the reason is in its history; see `internal/delivery.ts`).
 *
 * `layerStoredCatalog` is the standalone server's implementation, over the stored catalog
 * (`CatalogStore`), the account's `account_status` profile fact, the authorizing API key and the
 * ledger's count of earlier actions. An embedding host that keeps its catalog elsewhere provides
 * its own layer: `Revalidation.of({ check })`, or `layerWith(extra)` to add its own checks after the
 * stored-catalog ones.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { findAction, findDecision, findOffer, termsMismatch } from "../catalog/Catalog.ts"
import type { CatalogAction, CatalogDocument } from "../protocol/messages/Catalog.ts"
import type { PublishedCatalog } from "../ports/CatalogStore.ts"
import { AccountProfileStore } from "../ports/AccountProfileStore.ts"
import { ActionLedger } from "../ports/ActionLedger.ts"
import { ApiKeyStore } from "../ports/ApiKeyStore.ts"
import { CatalogStore } from "../ports/CatalogStore.ts"
import { RuntimeSessionStore } from "../ports/RuntimeSessionStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { parseTimestamp } from "../protocol/Timestamp.ts"
import type { StoredRequest } from "./Action.ts"

/**
 * The stable reasons, each with the request field it concerns. Some say a reference of the request
 * resolves to nothing, the others that the catalog, account, authority or frequency no longer allows
 * the action; at intake each is refused (the HTTP edge picks the status per reason), and before a
 * delivery every one blocks the action.
 */
export const revalidationReasons = {
  catalog_not_published: { path: "binding.publishedVersionId" },
  published_version_unknown: { path: "binding.publishedVersionId" },
  published_version_not_current: { path: "binding.publishedVersionId" },
  decision_unknown: { path: "binding.decisionId" },
  journey_mismatch: { path: "binding.journeyId" },
  decision_expired: { path: "binding.decisionId" },
  action_unknown: { path: "action.id" },
  action_key_mismatch: { path: "action.key" },
  operation_family_mismatch: { path: "action.operation.family" },
  safe_terms_mismatch: { path: "action.safeTerms" },
  operation_parameter_mismatch: { path: "action.operation" },
  transition_not_allowed: { path: "action.id" },
  offer_unknown: { path: "binding.offerId" },
  offer_not_offered: { path: "binding.offerId" },
  action_version_changed: { path: "payment.actionVersionId" },
  offer_version_changed: { path: "payment.offerVersionId" },
  offer_price_changed: { path: "payment.expected" },
  account_state_not_eligible: { path: "accountId" },
  authority_revoked: { path: "authorizedBy" },
  frequency_exceeded: { path: "action.id" }
} as const

/**
 * The stable reason an action may not be sent (unknown action, terms changed, frequency exceeded,
 * …).
 */
export type RevalidationReason = keyof typeof revalidationReasons

/** {@inheritDoc RevalidationReason:type} */
export const RevalidationReason = Schema.Literal(
  ...(Object.keys(revalidationReasons) as [RevalidationReason, ...Array<RevalidationReason>])
)

/**
 * Why an action may not be sent: the stable `reason`, the request field it concerns and a detail
 * that names no secret or personal value.
 */
export class RevalidationFailed extends Schema.TaggedError<RevalidationFailed>()("RevalidationFailed", {
  reason: RevalidationReason,
  path: Schema.String,
  detail: Schema.String
}) {}

const failed = (reason: RevalidationReason, detail: string) =>
  new RevalidationFailed({ reason, path: revalidationReasons[reason].path, detail })

/**
 * The action as revalidation sees it: its request and, once stored, its id and intake time (the
 * frequency policy counts only actions taken before it).
 */
export interface RevalidationSubject {
  readonly workspaceId: string
  readonly request: StoredRequest
  readonly stored?: { readonly actionRequestId: string; readonly createdAt: number }
  readonly now: number
}

/**
 * Checks an action against the current catalog and the account before intake and before every
 * delivery.
 */
export interface RevalidationService {
  /** Fails with the first reason the action may not be sent now. */
  readonly check: (subject: RevalidationSubject) => Effect.Effect<void, RevalidationFailed | StorageError>
}

/**
 * The service tag of revalidation; `layerStoredCatalog` checks the stored catalog, `layerWith` adds
 * a host's checks.
 */
export class Revalidation extends Context.Tag("@accord/core/Revalidation")<Revalidation, RevalidationService>() {}

/**
 * The catalog checks that need nothing but the current catalog: published version, decision,
 * journey, action, transition, offer and the payment snapshot. Answers the catalog action.
 */
export const checkCatalog = (
  current: Option.Option<PublishedCatalog>,
  bound: Option.Option<PublishedCatalog>,
  request: StoredRequest,
  now: number
): RevalidationFailed | CatalogAction => {
  if (Option.isNone(current))
    return failed(
      "catalog_not_published",
      "the workspace has no published catalog; publish one with PUT /api/admin/v1/workspaces/{workspaceId}/catalog"
    )
  if (Option.isNone(bound))
    return failed("published_version_unknown", "binding.publishedVersionId names no published catalog version")
  if (bound.value.publishedVersionId !== current.value.publishedVersionId) {
    return failed(
      "published_version_not_current",
      `the bound catalog version ${bound.value.version} is no longer the current version ${current.value.version}`
    )
  }
  return checkDocument(current.value.document, request, now)
}

const checkDocument = (
  document: CatalogDocument,
  request: StoredRequest,
  now: number
): RevalidationFailed | CatalogAction => {
  const { action, binding, payment } = request
  const decision = findDecision(document, binding.decisionId)
  if (decision === undefined)
    return failed("decision_unknown", "binding.decisionId names no decision of the bound catalog version")
  if (decision.journeyId !== binding.journeyId)
    return failed("journey_mismatch", "binding.journeyId is not the decision's journey")
  if (decision.validUntil !== undefined && (parseTimestamp(decision.validUntil) ?? 0) <= now) {
    return failed("decision_expired", "the decision is past its validUntil")
  }
  const defined = findAction(document, action.id)
  if (defined === undefined) return failed("action_unknown", "action.id names no action of the bound catalog version")
  if (defined.key !== action.key) return failed("action_key_mismatch", "action.key is not the catalog action's key")
  if (defined.family !== action.operation.family) {
    return failed(
      "operation_family_mismatch",
      `action.operation.family must be the catalog action's family ${defined.family}`
    )
  }
  // What runs is the catalog's: its safe terms and fixed operation parameters (the path names the field).
  const mismatch = termsMismatch(defined, action)
  if (mismatch !== undefined) {
    return new RevalidationFailed({
      reason: mismatch.path.startsWith("action.safeTerms") ? "safe_terms_mismatch" : "operation_parameter_mismatch",
      path: mismatch.path,
      detail: mismatch.detail
    })
  }
  if (!decision.actionIds.includes(action.id))
    return failed("transition_not_allowed", "the decision does not lead to this action")
  const offer = findOffer(document, binding.offerId)
  if (offer === undefined) return failed("offer_unknown", "binding.offerId names no offer of the bound catalog version")
  if (
    !decision.offerIds.includes(offer.offerId) ||
    (defined.offerId !== undefined && defined.offerId !== offer.offerId)
  ) {
    return failed("offer_not_offered", "binding.offerId is not an offer of this decision and action")
  }
  if (payment !== undefined) {
    if (payment.actionVersionId !== defined.actionVersionId) {
      return failed("action_version_changed", "payment.actionVersionId is not the catalog action's current version")
    }
    const priced = defined.offerId === undefined ? undefined : offer
    if (payment.offerVersionId !== (priced?.offerVersionId ?? null)) {
      return failed("offer_version_changed", "payment.offerVersionId is not the offer's current version")
    }
    const price = priced?.price ?? null
    const expected = payment.expected
    if (
      (price === null) !== (expected === null) ||
      (price !== null &&
        expected !== null &&
        (price.amountMinor !== expected.amountMinor || price.currency !== expected.currency))
    ) {
      return failed("offer_price_changed", "payment.expected is not the offer's exact price and currency")
    }
  }
  return defined
}

/**
 * The stored-catalog revalidation: the catalog checks, then the account's state (when the decision
 * restricts it), the authorizing key (still not revoked) and the frequency policy.
 */
export const makeStoredCatalog: Effect.Effect<
  RevalidationService,
  never,
  CatalogStore | AccountProfileStore | ApiKeyStore | ActionLedger | RuntimeSessionStore
> = Effect.gen(function* () {
  const catalogs = yield* CatalogStore
  const profiles = yield* AccountProfileStore
  const keys = yield* ApiKeyStore
  const ledger = yield* ActionLedger
  const sessions = yield* RuntimeSessionStore
  // Runs before every intake and every delivery attempt: the catalog read, then the checks on it,
  // with no generator step when nothing else is to be read (the common case).
  const check = (subject: RevalidationSubject): Effect.Effect<void, RevalidationFailed | StorageError> =>
    Effect.flatMap(catalogs.current(subject.workspaceId), (current) =>
      Option.isSome(current) && current.value.publishedVersionId === subject.request.binding.publishedVersionId
        ? checkWith(subject, current, current)
        : Effect.flatMap(
            catalogs.byPublishedVersion(subject.workspaceId, subject.request.binding.publishedVersionId),
            (bound) => checkWith(subject, current, bound)
          )
    )
  const checkWith = (
    subject: RevalidationSubject,
    current: Option.Option<PublishedCatalog>,
    bound: Option.Option<PublishedCatalog>
  ): Effect.Effect<void, RevalidationFailed | StorageError> => {
    const { now, request } = subject
    const verdict = checkCatalog(current, bound, request, now)
    if (verdict instanceof RevalidationFailed) return Effect.fail(verdict)
    const decision = findDecision(Option.getOrThrow(current).document, request.binding.decisionId)!
    if (decision.accountStatuses === undefined && request.authorizedBy === undefined && verdict.frequency === undefined)
      return Effect.void
    return checkStored(subject, decision, verdict)
  }
  const checkStored = (
    { now, request, stored, workspaceId }: RevalidationSubject,
    decision: NonNullable<ReturnType<typeof findDecision>>,
    verdict: CatalogAction
  ) =>
    Effect.gen(function* () {
      if (decision.accountStatuses !== undefined) {
        const profile = yield* profiles.get(workspaceId, request.accountId)
        const status = Option.flatMap(profile, (p) =>
          Option.fromNullable(p.facts.find((f) => f.name === "account_status"))
        )
        if (Option.isNone(status) || !decision.accountStatuses.includes(String(status.value.value))) {
          return yield* failed(
            "account_state_not_eligible",
            "the account's account_status is not one the decision allows"
          )
        }
      }
      if (request.authorizedBy?.kind === "api_key") {
        const id = request.authorizedBy.id
        const live = (yield* keys.list(workspaceId)).some((k) => k.id === id && k.revokedAt === null)
        if (!live) return yield* failed("authority_revoked", "the API key that authorized this action was revoked")
      }
      if (request.authorizedBy?.kind === "runtime_session") {
        // The billing owner's session that approved it: revoked means no longer authorized (its
        // expiry does not count: it was live when it authorized).
        const session = yield* sessions.get(request.authorizedBy.id)
        if (Option.isNone(session) || session.value.revokedAt !== null) {
          return yield* failed("authority_revoked", "the runtime session that approved this action was revoked")
        }
      }
      if (verdict.frequency !== undefined) {
        const earlier = yield* ledger.countForFrequency({
          workspaceId,
          accountId: request.accountId,
          actionId: request.action.id,
          since: (stored?.createdAt ?? now) - verdict.frequency.windowSeconds * 1000,
          ...(stored === undefined ? {} : { before: stored })
        })
        if (earlier >= verdict.frequency.limit) {
          return yield* failed(
            "frequency_exceeded",
            `at most ${verdict.frequency.limit} per account within ${verdict.frequency.windowSeconds} s`
          )
        }
      }
    })
  return { check }
})

/**
 * Revalidation against the stored catalog, the account's profile, its keys, the ledger (frequency)
 * and runtime sessions.
 */
export const layerStoredCatalog: Layer.Layer<
  Revalidation,
  never,
  CatalogStore | AccountProfileStore | ApiKeyStore | ActionLedger | RuntimeSessionStore
> = Layer.effect(Revalidation, makeStoredCatalog)

/**
 * The stored-catalog checks followed by a host's own (for example its own account standing or
 * entitlement rules); the first failure wins.
 */
export const layerWith = <R>(
  extra: (subject: RevalidationSubject) => Effect.Effect<void, RevalidationFailed | StorageError, R>
): Layer.Layer<
  Revalidation,
  never,
  CatalogStore | AccountProfileStore | ApiKeyStore | ActionLedger | RuntimeSessionStore | R
> =>
  Layer.effect(
    Revalidation,
    Effect.gen(function* () {
      const stored = yield* makeStoredCatalog
      const context = yield* Effect.context<R>()
      return { check: (subject) => Effect.zipRight(stored.check(subject), Effect.provide(extra(subject), context)) }
    })
  )
