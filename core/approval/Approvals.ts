/**
 * Approvals (spec "Approval flow rules" 1–6, "Approval review projection", "Authentication" 9, the
 * approval row of "Errors").
 *
 * 1. `request`: a runtime session with `funnels.actions.request` creates only a durable approval
 *    request. It names only the catalog action, the offer and the binding; what runs is the
 *    catalog's (its safe terms and the operation's fixed parameters, `Catalog.definedAction`)
 *    completed with the account's own part from the session the host's server issued (the
 *    extend-trial `trialRef`). The private approval token goes to the billing owner through the
 *    `ApprovalNotifier`; the requester session is kept as provenance.
 * 2. `prepare`: the billing owner's live, same-account session with `funnels.actions.execute`,
 *    with the approval ID and token, gets the review: `reviewProjection`, `revision`,
 *    `reviewValidUntil` and `projectionHash` (the commitment, `Commitment.ts`). Each prepare is a
 *    new revision.
 * 3. `resolve`: deny never authorizes. Approve carries the prepared hash and revision; it builds a
 *    fresh preflight from the current state, recomputes the commitment, and only when everything
 *    still holds claims the approval (one claim wins, whatever races it) and authorizes the action
 *    through the same `intake` as `POST /action-requests`, recorded as `approval_recorded`.
 *
 * Separation of duties: the requesting session, or another session of the same subject, never
 * prepares or resolves its own request (`approval_self_approval`); a review is approved only by the
 * session that prepared it; a revoked requester session cancels its pending approvals
 * (`RuntimeSession.revoke`, and `approval_cancelled` here should a request slip past it). At
 * prepare and resolve the stored operation and safe terms are compared with the current catalog's
 * (`approval_terms_changed`), as revalidation compares them before every delivery.
 *
 * Every refusal happens before anything is authorized, with a stable reason (`ApprovalRefused`).
 * An unknown approval ID and a wrong approval token look alike (`approval_not_found`). Tokens and
 * hashes are compared in constant time.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { mintToken } from "../access/ApiKeys.ts"
import { definedAction, findAction, findDecision, findOffer, termsMismatch } from "../catalog/Catalog.ts"
import type { CatalogAction, CatalogDocument, Offer } from "../protocol/messages/Catalog.ts"
import { type ActionIntake, type PaymentSnapshot, paymentRuleOf } from "../connector/Action.ts"
import { paymentGate } from "../connector/Capability.ts"
import { intake } from "../connector/Intake.ts"
import { Revalidation } from "../connector/Revalidation.ts"
import { activeRevision } from "../connector/Revisions.ts"
import { ApprovalNotifier } from "../ports/ApprovalNotifier.ts"
import { type ApprovalRecord, ApprovalStore } from "../ports/ApprovalStore.ts"
import { CatalogStore } from "../ports/CatalogStore.ts"
import { ConnectionStore } from "../ports/ConnectionStore.ts"
import { Crypto } from "../ports/Crypto.ts"
import { type RuntimeSessionRecord, RuntimeSessionStore } from "../ports/RuntimeSessionStore.ts"
import { sha256HexWith } from "../protocol/Digest.ts"
import { constantTimeEqual } from "../protocol/Hex.ts"
import { canonicalJson } from "../protocol/Json.ts"
import type { ReviewOperation, ReviewProjection } from "../protocol/messages/Approval.ts"
import { ActionKey, BoundedString, ExactStruct, NonNegativeInt, Sha256Hex } from "../protocol/messages/Common.ts"
import { type Action, Binding, isExtendTrialOperation } from "../protocol/messages/Execution.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import { randomUuid, Uuid } from "../protocol/Uuid.ts"
import { ApprovalLimitReached, ApprovalLimits } from "./Limits.ts"
import {
  commitmentHash,
  type CommitmentInput,
  type Dependencies,
  dependencyHash,
  fingerprint,
  formatPrice
} from "./Commitment.ts"

/**
 * How long an approval request stays open unless asked otherwise, and at most.
 */
export const defaultApprovalSeconds = 24 * 60 * 60

/** The longest an approval may stay open: seven days. */
export const maxApprovalSeconds = 7 * 24 * 60 * 60

/**
 * How long a prepared review may be resolved ("bounded by `reviewValidUntil` and the approval
 * expiry").
 */
export const reviewWindowSeconds = 10 * 60

/**
 * A resolve that claimed an approval and then died leaves it `approving`; its own session may take
 * it over after this long (the intake's idempotency key makes the retry authorize the same action).
 */
export const claimTakeoverMillis = 30_000

/**
 * The prefix of every approval token, so a leaked one is recognisable and never mistaken for an API
 * key.
 */
export const approvalTokenPrefix = "acc_apt_"

const approvalTokenPattern = /^acc_apt_[A-Za-z0-9_-]{43}$/

/** Tokens in bodies: any bounded string; a malformed one is refused like a wrong one. */
const TokenField = BoundedString(1, 512)

/** What every prepare and resolve body carries: the approval, its private token, the runtime session. */
const approvalCredentials = { approvalId: Uuid, approvalToken: TokenField, runtimeToken: TokenField }

/**
 * The catalog action a runtime request names: its id, and optionally its key (checked against the
 * catalog's). Nothing else: the operation and safe terms are the catalog's.
 */
export const RequestedCatalogAction = ExactStruct({
  id: Uuid,
  key: Schema.optionalWith(ActionKey, { exact: true })
}).annotations({ identifier: "RequestedCatalogAction" })

/**
 * `POST /api/funnels/v1/runtime/actions/approvals` (runtime token with request authority in
 * `Authorization`): the catalog action, and the binding (decision, journey, offer, published
 * version). Any other field, an operation or safe terms included, is refused (400), never merged.
 */
export const ApprovalRequestBody = ExactStruct({
  action: RequestedCatalogAction,
  binding: Binding,
  expiresInSeconds: Schema.optionalWith(
    Schema.Int.pipe(
      Schema.between(300, maxApprovalSeconds),
      Schema.annotations({ message: () => `must be an integer from 300 to ${maxApprovalSeconds} (seconds)` })
    ),
    { exact: true }
  )
}).annotations({ identifier: "ApprovalRequestBody" })

/** {@inheritDoc ApprovalRequestBody:var} */
export interface ApprovalRequestBody extends Schema.Schema.Type<typeof ApprovalRequestBody> {}

/**
 * `POST …/approvals/prepare`.
 */
export const PrepareBody = ExactStruct(approvalCredentials).annotations({ identifier: "ApprovalPrepareBody" })

/** {@inheritDoc PrepareBody:var} */
export interface PrepareBody extends Schema.Schema.Type<typeof PrepareBody> {}

/**
 * `POST …/approvals/resolve`: approve with the reviewed hash and revision, or deny with no hash.
 */
export const ApproveBody = ExactStruct({
  ...approvalCredentials,
  decision: Schema.Literal("approve"),
  revision: NonNegativeInt,
  reviewedProjectionHash: Sha256Hex
}).annotations({ identifier: "ApprovalApproveBody" })

/**
 * A resolve that denies: the approval's credentials, `decision: "deny"` and optionally the reviewed
 * revision.
 */
export const DenyBody = ExactStruct({
  ...approvalCredentials,
  decision: Schema.Literal("deny"),
  revision: Schema.optionalWith(NonNegativeInt, { exact: true })
}).annotations({ identifier: "ApprovalDenyBody" })

/**
 * `POST …/approvals/resolve`: an approve (with the prepared revision and commitment hash) or a
 * deny.
 */
export const ResolveBody = Schema.Union(ApproveBody, DenyBody).annotations({ identifier: "ApprovalResolveBody" })

/** {@inheritDoc ResolveBody:var} */
export type ResolveBody = Schema.Schema.Type<typeof ResolveBody>

/**
 * What is stored as the approval's `request`: the action and binding asked for, and the payment
 * snapshot taken from the catalog when it is a Payment action.
 */
export interface RequestedAction {
  readonly action: ActionIntake["action"]
  readonly binding: ActionIntake["binding"]
  /** The catalog versions of the action and offer when it was requested. */
  readonly versions: { readonly actionVersionId: string | null; readonly offerVersionId: string | null }
  readonly payment?: PaymentSnapshot
}

/**
 * The stable reasons an approval step refuses.
 */
export const approvalRefusals = [
  "approval_not_found",
  "approval_account_mismatch",
  "approval_expired",
  "approval_review_expired",
  "approval_already_resolved",
  "approval_not_prepared",
  "approval_revision_drift",
  "approval_hash_mismatch",
  "approval_terms_changed",
  "approval_dependency_stale",
  "approval_capability_expired",
  "approval_self_approval",
  "approval_cancelled",
  "approval_action_not_requestable"
] as const

/**
 * The stable reason an approval request, prepare or resolve was refused; `ErrorMap.approvalStatus`
 * gives each its HTTP status.
 */
export type ApprovalRefusal = (typeof approvalRefusals)[number]

/** An approval request, prepare or resolve refused, fail closed, with its stable reason. */
export class ApprovalRefused extends Schema.TaggedError<ApprovalRefused>()("ApprovalRefused", {
  reason: Schema.Literal(...approvalRefusals),
  detail: Schema.String
}) {}

const refuse = (reason: ApprovalRefusal, detail: string) => new ApprovalRefused({ reason, detail })

/** The intake body an approval authorizes: the bound request, for the session's account, acted by the billing owner. */
export const intakeInput = (
  approval: ApprovalRecord,
  requested: RequestedAction,
  owner: RuntimeSessionRecord
): ActionIntake => ({
  accountId: approval.accountId,
  action: requested.action,
  actor: { authority: "funnels.actions.execute", roleKey: owner.role, subjectId: owner.subject },
  binding: requested.binding,
  ...(requested.payment === undefined ? {} : { payment: requested.payment })
})

const priceReference = (
  offerId: string,
  offerVersionId: string,
  price: { readonly amountMinor: number; readonly currency: string }
) => fingerprint({ offerId, offerVersionId, amountMinor: price.amountMinor, currency: price.currency })

/** The payment snapshot of a Payment action, from its catalog action and that action's offer (never from the caller). */
const snapshotFromCatalog = (document: CatalogDocument, defined: CatalogAction, family: string) =>
  Effect.gen(function* () {
    const mode = paymentRuleOf({ action: { operation: { family } } })?.mode
    if (mode === undefined) return undefined
    const offer = defined.offerId === undefined ? undefined : findOffer(document, defined.offerId)
    const snapshot: PaymentSnapshot = {
      mode,
      actionVersionId: defined.actionVersionId,
      offerVersionId: offer?.offerVersionId ?? null,
      expected:
        offer?.price == null
          ? null
          : {
              amountMinor: offer.price.amountMinor,
              currency: offer.price.currency,
              priceReferenceHash: yield* priceReference(offer.offerId, offer.offerVersionId, offer.price)
            }
    }
    return snapshot
  })

/**
 * Creates a durable approval request (rule 1) and hands its token to the notifier. The action is
 * checked against the stored catalog now, as intake would check it.
 */
export const request = (requester: RuntimeSessionRecord, body: ApprovalRequestBody) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const crypto = yield* Crypto
    const catalog = yield* (yield* CatalogStore).current(requester.workspaceId)
    const document = Option.getOrUndefined(Option.map(catalog, (c) => c.document))
    const defined = document === undefined ? undefined : findAction(document, body.action.id)
    // What runs: the catalog action's terms and fixed parameters, and the trial the host's server
    // named for this session. An action the catalog does not define is a stand-in that names only
    // the id and key asked for: revalidation below refuses it (no catalog action has its id).
    const built = defined === undefined ? undefined : definedAction(defined, { trialRef: requester.trialRef })
    if (typeof built === "string") return yield* refuse("approval_action_not_requestable", built)
    const action: Action =
      built === undefined
        ? {
            id: body.action.id,
            key: body.action.key ?? "unknown",
            operation: { family: "unknown" },
            safeTerms: { label: "unknown", confirmation: "unknown" }
          }
        : { ...built, key: body.action.key ?? built.key }
    const payment =
      document === undefined || defined === undefined
        ? undefined
        : yield* snapshotFromCatalog(document, defined, action.operation.family)
    const versions = {
      actionVersionId: defined?.actionVersionId ?? null,
      offerVersionId:
        (document === undefined ? undefined : findOffer(document, body.binding.offerId))?.offerVersionId ?? null
    }
    const requested: RequestedAction = {
      action,
      binding: body.binding,
      versions,
      ...(payment === undefined ? {} : { payment })
    }
    // The same catalog, account and frequency checks intake makes (the authority is checked at resolve).
    yield* (yield* Revalidation).check({
      workspaceId: requester.workspaceId,
      now,
      request: {
        accountId: requester.accountId,
        action,
        actor: { authority: "funnels.actions.request", roleKey: requester.role, subjectId: requester.subject },
        binding: body.binding,
        ...(payment === undefined ? {} : { payment })
      }
    })
    const token = yield* mintToken(approvalTokenPrefix)
    const record: ApprovalRecord = {
      approvalId: yield* randomUuid,
      workspaceId: requester.workspaceId,
      accountId: requester.accountId,
      tokenHash: yield* sha256HexWith(crypto, Redacted.value(token)),
      requester: { sessionId: requester.sessionId, subject: requester.subject, role: requester.role },
      request: requested,
      state: "pending",
      revision: 0,
      expiresAt: now + (body.expiresInSeconds ?? defaultApprovalSeconds) * 1000,
      createdAt: now,
      prepared: null,
      claimedAt: null,
      resolvedBy: null,
      resolvedAt: null,
      actionRequestId: null
    }
    const { pendingCaps } = yield* ApprovalLimits
    const created = yield* (yield* ApprovalStore).createWithinCaps({
      record,
      actionKey: action.key,
      caps: pendingCaps,
      now
    })
    if (created._tag === "Full") {
      return yield* new ApprovalLimitReached({
        scope: created.scope,
        cap: pendingCaps[created.scope],
        retryAfterMillis: Math.max(0, created.freesAt - now)
      })
    }
    if (created._tag === "Exists") return yield* Effect.die("approval id collision")
    yield* (yield* ApprovalNotifier).notify({
      workspaceId: record.workspaceId,
      accountId: record.accountId,
      approvalId: record.approvalId,
      requesterRole: requester.role,
      expiresAt: record.expiresAt,
      approvalToken: token
    })
    return { approvalId: record.approvalId, state: "pending" as const, expiresAt: formatTimestamp(record.expiresAt) }
  })

/**
 * The approval the ID and token name, for the billing owner's session: unknown ID, another
 * workspace, a wrong token and a locked approval all answer `approval_not_found`, and each of them
 * records a wrong token (a statement that changes nothing for an unknown ID), so they cost the same.
 */
const open = (owner: RuntimeSessionRecord, approvalId: string, approvalToken: string) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const store = yield* ApprovalStore
    const { maxWrongTokens } = yield* ApprovalLimits
    const found = yield* store.getUnlocked({ approvalId, maxWrongTokens })
    // Hash the token whatever happens, so a wrong token and an unknown ID cost the same.
    const presented = yield* sha256HexWith(crypto, approvalToken)
    const tokenShaped = approvalTokenPattern.test(approvalToken)
    if (
      Option.isNone(found) ||
      found.value.workspaceId !== owner.workspaceId ||
      !constantTimeEqual(presented, found.value.tokenHash) ||
      !tokenShaped
    ) {
      yield* store.recordWrongToken({ workspaceId: owner.workspaceId, approvalId })
      return yield* refuse("approval_not_found", "no such approval, or the approval token does not match")
    }
    const approval = found.value
    if (approval.accountId !== owner.accountId) {
      return yield* refuse(
        "approval_account_mismatch",
        "the runtime session belongs to another account than the approval"
      )
    }
    return approval
  })

const unresolved = (approval: ApprovalRecord, now: number, owner: RuntimeSessionRecord) => {
  const retrying =
    approval.state === "approving" &&
    approval.resolvedBy === owner.sessionId &&
    approval.claimedAt !== null &&
    approval.claimedAt < now - claimTakeoverMillis
  if (approval.state === "cancelled")
    return Effect.fail(refuse("approval_cancelled", "the requester's runtime session was revoked"))
  if (approval.state !== "pending" && !retrying) {
    return Effect.fail(
      refuse(
        "approval_already_resolved",
        `the approval is already ${approval.state === "approving" ? "being approved" : approval.state}`
      )
    )
  }
  if (now >= approval.expiresAt) return Effect.fail(refuse("approval_expired", "the approval has expired"))
  return Effect.void
}

/** The approval's stored request. */
const requestedOf = (approval: ApprovalRecord): RequestedAction => approval.request as RequestedAction

/**
 * The operation's key fields, in display form, from the stored request: what the customer will be
 * asked to run and, for a Payment action, what it will be charged (the catalog snapshot).
 */
export const reviewOperation = (requested: RequestedAction): ReviewOperation => {
  const operation = requested.action.operation
  if (isExtendTrialOperation(operation)) {
    return {
      family: operation.family,
      extensionDays: operation.extensionDays,
      target: `${operation.trialRef.entityKind} ${operation.trialRef.entityKey} (version ${operation.trialRef.version})`
    }
  }
  const fields = operation as Readonly<Record<string, unknown>>
  const text = (value: unknown, max: number) =>
    typeof value === "string" && value.length >= 1 && value.length <= max ? value : undefined
  const interval = text(fields["interval"], 16)
  const proration = text(fields["proration"], 32)
  const expected = requested.payment?.expected ?? null
  return {
    family: operation.family,
    ...(expected === null ? {} : { amountMinor: expected.amountMinor, currency: expected.currency }),
    ...(interval === undefined ? {} : { interval }),
    ...(proration === undefined ? {} : { proration })
  }
}

/**
 * The review projection of an approval: the display-safe action (the stored, catalog-defined safe
 * terms), the operation's key fields, the offer's terms from the catalog, timing, the requester's
 * role, the approval expiry and the dependency hash.
 */
export const reviewProjection = (
  approval: ApprovalRecord,
  offer: Offer | undefined,
  dependencyHashValue: string
): ReviewProjection => {
  const requested = requestedOf(approval)
  const price = offer?.price ?? null
  return {
    action: {
      key: requested.action.key,
      label: requested.action.safeTerms.label,
      confirmation: requested.action.safeTerms.confirmation
    },
    operation: reviewOperation(requested),
    ...(offer === undefined
      ? {}
      : {
          offer: {
            offerId: offer.offerId,
            label: offer.label ?? requested.action.safeTerms.label,
            ...(price === null ? {} : { priceDisplay: formatPrice(price.amountMinor, price.currency) })
          }
        }),
    timing: { effectiveAt: formatTimestamp(approval.createdAt) },
    requester: { roleKey: approval.requester.role },
    approvalExpiresAt: formatTimestamp(approval.expiresAt),
    dependencyHash: dependencyHashValue
  }
}

/**
 * What a preflight reads from the current state: the review and what the commitment binds beside it.
 */
export interface Preflight {
  readonly projection: ReviewProjection
  readonly connectionId: Option.Option<string>
  readonly offerVersionId: string | null
  readonly price: { readonly amountMinor: number; readonly currency: string } | null
}

/**
 * The fresh preflight: the review and its dependency hash, from the current catalog and connector.
 */
const preflight = (approval: ApprovalRecord) =>
  Effect.gen(function* () {
    const requested = requestedOf(approval)
    const current = yield* (yield* CatalogStore).current(approval.workspaceId)
    const document = Option.map(current, (c) => c.document)
    const defined = Option.flatMap(document, (d) => Option.fromNullable(findAction(d, requested.action.id)))
    const offer = Option.flatMap(document, (d) => Option.fromNullable(findOffer(d, requested.binding.offerId)))
    const decision = Option.flatMap(document, (d) => Option.fromNullable(findDecision(d, requested.binding.decisionId)))
    const mode = paymentRuleOf(requested)?.mode
    const connection = mode === undefined ? Option.none() : yield* (yield* ConnectionStore).get(approval.workspaceId)
    const active = Option.flatMap(connection, (c) => Option.fromNullable(activeRevision(c)))
    const dependencies: Dependencies = {
      publishedVersionId: Option.match(current, { onNone: () => null, onSome: (c) => c.publishedVersionId }),
      actionVersionId: Option.match(defined, { onNone: () => null, onSome: (a) => a.actionVersionId }),
      offerVersionId: Option.match(offer, { onNone: () => null, onSome: (o) => o.offerVersionId }),
      price: Option.match(offer, { onNone: () => null, onSome: (o) => o.price }),
      decisionValidUntil: Option.match(decision, { onNone: () => null, onSome: (d) => d.validUntil ?? null }),
      accountStatuses: Option.match(decision, { onNone: () => null, onSome: (d) => d.accountStatuses ?? null }),
      connector:
        mode === undefined || Option.isNone(connection) || Option.isNone(active)
          ? null
          : {
              connectionId: connection.value.connectionId,
              revision: active.value.revision,
              paymentMode: mode
            }
    }
    const fresh: Preflight = {
      projection: reviewProjection(approval, Option.getOrUndefined(offer), yield* dependencyHash(dependencies)),
      connectionId: Option.map(connection, (c) => c.connectionId),
      offerVersionId: dependencies.offerVersionId,
      price: dependencies.price
    }
    return fresh
  })

/**
 * The commitment of a review (`projectionHash`): over the projection, the stored request (its
 * operation and safe terms by fingerprint), the reviewer session (whose subject and role become the
 * executed action's actor) and the rest rule 3 names.
 */
export const commitmentOf = (
  approval: ApprovalRecord,
  fresh: Pick<Preflight, "projection" | "offerVersionId" | "price">,
  revision: number,
  reviewValidUntil: number,
  reviewer: Pick<RuntimeSessionRecord, "sessionId" | "subject" | "role">
) =>
  Effect.gen(function* () {
    const requested = requestedOf(approval)
    const input: CommitmentInput = {
      workspaceId: approval.workspaceId,
      accountId: approval.accountId,
      approvalId: approval.approvalId,
      requester: approval.requester,
      reviewer: { sessionId: reviewer.sessionId, subject: reviewer.subject, role: reviewer.role },
      projection: fresh.projection,
      binding: {
        decisionId: requested.binding.decisionId,
        journeyId: requested.binding.journeyId,
        publishedVersionId: requested.binding.publishedVersionId
      },
      action: {
        actionId: requested.action.id,
        actionVersionId: requested.versions.actionVersionId,
        key: requested.action.key,
        family: requested.action.operation.family,
        operationFingerprint: yield* fingerprint(requested.action.operation),
        safeTermsFingerprint: yield* fingerprint(requested.action.safeTerms)
      },
      offer: {
        offerId: requested.binding.offerId,
        offerVersionId: requested.versions.offerVersionId,
        priceFingerprint:
          fresh.price === null || fresh.offerVersionId === null
            ? null
            : yield* priceReference(requested.binding.offerId, fresh.offerVersionId, fresh.price)
      },
      revision,
      approvalExpiresAt: formatTimestamp(approval.expiresAt),
      reviewValidUntil: formatTimestamp(reviewValidUntil),
      dependencyHash: fresh.projection.dependencyHash
    }
    return yield* commitmentHash(input)
  })

/** A Payment action needs its mode's capability to be covered now ("an expired capability … fails closed"). */
const capabilityHolds = (approval: ApprovalRecord, fresh: Preflight, now: number) =>
  Effect.gen(function* () {
    const requested = requestedOf(approval)
    if (paymentRuleOf(requested) === undefined) return
    const gate = Option.isNone(fresh.connectionId)
      ? undefined
      : yield* paymentGate(fresh.connectionId.value, requested, { now })
    if (gate === undefined || gate.verdict !== "covered") {
      return yield* refuse(
        "approval_capability_expired",
        "the payment capability this action needs is not currently proven"
      )
    }
  })

/**
 * Separation of duties: the requester never reviews or resolves its own request, not from the
 * session that asked nor from another session of the same subject; and a request whose requester
 * session was revoked is cancelled, even one created while the revocation ran.
 */
const dutiesSeparate = (approval: ApprovalRecord, owner: RuntimeSessionRecord) =>
  Effect.gen(function* () {
    if (owner.sessionId === approval.requester.sessionId || owner.subject === approval.requester.subject) {
      return yield* refuse("approval_self_approval", "the requester of an approval cannot review or resolve it")
    }
    const requester = yield* (yield* RuntimeSessionStore).get(approval.requester.sessionId)
    if (Option.isNone(requester) || requester.value.revokedAt !== null) {
      yield* (yield* ApprovalStore).cancelForRequester({
        workspaceId: approval.workspaceId,
        sessionId: approval.requester.sessionId,
        now: yield* Clock.currentTimeMillis
      })
      return yield* refuse("approval_cancelled", "the requester's runtime session was revoked")
    }
  })

/**
 * The stored operation and safe terms still those of the current catalog's action: a republish that
 * changed them fails closed (an action the catalog no longer has is revalidation's to refuse).
 */
const termsHold = (approval: ApprovalRecord) =>
  Effect.gen(function* () {
    const requested = requestedOf(approval)
    const current = yield* (yield* CatalogStore).current(approval.workspaceId)
    const defined = Option.isNone(current) ? undefined : findAction(current.value.document, requested.action.id)
    const mismatch = defined === undefined ? undefined : termsMismatch(defined, requested.action)
    if (mismatch !== undefined) {
      return yield* refuse(
        "approval_terms_changed",
        `the catalog action's terms changed since the request (${mismatch.path})`
      )
    }
  })

/**
 * The review of an approval (rule 2): a new revision, valid until `reviewValidUntil`, bound to the
 * session that prepared it.
 */
export const prepare = (owner: RuntimeSessionRecord, body: PrepareBody) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const approval = yield* open(owner, body.approvalId, body.approvalToken)
    yield* unresolved(approval, now, owner)
    if (approval.state !== "pending")
      return yield* refuse("approval_already_resolved", "the approval is being approved")
    yield* dutiesSeparate(approval, owner)
    yield* termsHold(approval)
    // Nothing is reviewed that could not be authorized now.
    yield* (yield* Revalidation).check({
      workspaceId: approval.workspaceId,
      now,
      request: intakeInput(approval, requestedOf(approval), owner)
    })
    const fresh = yield* preflight(approval)
    yield* capabilityHolds(approval, fresh, now)
    const revision = approval.revision + 1
    const reviewValidUntil = Math.min(now + reviewWindowSeconds * 1000, approval.expiresAt)
    const projectionHash = yield* commitmentOf(approval, fresh, revision, reviewValidUntil, owner)
    const stored = yield* (yield* ApprovalStore).prepare({
      approvalId: approval.approvalId,
      revision: approval.revision,
      review: {
        projection: fresh.projection,
        projectionHash,
        reviewValidUntil,
        preparedBy: owner.sessionId,
        preparedAt: now
      }
    })
    if (Option.isNone(stored))
      return yield* refuse("approval_revision_drift", "the approval changed while it was being prepared")
    return {
      reviewProjection: fresh.projection,
      revision,
      reviewValidUntil: formatTimestamp(reviewValidUntil),
      projectionHash
    }
  })

const terms = (projection: ReviewProjection) => canonicalJson({ ...projection, dependencyHash: undefined })

/**
 * Resolves an approval (rules 3–5): deny, or approve after a fresh preflight, authorizing the
 * action through intake exactly once.
 */
export const resolve = (owner: RuntimeSessionRecord, body: ResolveBody) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const store = yield* ApprovalStore
    const approval = yield* open(owner, body.approvalId, body.approvalToken)
    yield* unresolved(approval, now, owner)
    yield* dutiesSeparate(approval, owner)
    if (body.revision !== undefined && body.revision !== approval.revision) {
      return yield* refuse("approval_revision_drift", `the approval is at revision ${approval.revision}`)
    }
    if (body.decision === "deny") {
      if (!(yield* store.deny({ approvalId: approval.approvalId, sessionId: owner.sessionId, now }))) {
        return yield* refuse("approval_already_resolved", "the approval is already resolved")
      }
      return { approvalId: approval.approvalId, state: "denied" as const }
    }
    const prepared = approval.prepared
    if (prepared === null || prepared.revision !== approval.revision) {
      return yield* refuse("approval_not_prepared", "prepare the approval before approving it")
    }
    if (prepared.preparedBy !== owner.sessionId) {
      return yield* refuse(
        "approval_not_prepared",
        "the review was prepared by another session: prepare it again with this one"
      )
    }
    if (now >= prepared.reviewValidUntil)
      return yield* refuse("approval_review_expired", "the review is no longer valid: prepare it again")
    if (!constantTimeEqual(body.reviewedProjectionHash, prepared.projectionHash)) {
      return yield* refuse("approval_hash_mismatch", "reviewedProjectionHash is not the prepared projectionHash")
    }
    yield* termsHold(approval)
    // The fresh preflight: the terms, the dependencies and the capability as they are now.
    const fresh = yield* preflight(approval)
    if (terms(fresh.projection) !== terms(prepared.projection as ReviewProjection)) {
      return yield* refuse("approval_terms_changed", "the action's or offer's terms changed since the review")
    }
    if (fresh.projection.dependencyHash !== (prepared.projection as ReviewProjection).dependencyHash) {
      return yield* refuse("approval_dependency_stale", "what the review depends on changed since it was prepared")
    }
    yield* capabilityHolds(approval, fresh, now)
    const recomputed = yield* commitmentOf(approval, fresh, approval.revision, prepared.reviewValidUntil, owner)
    if (!constantTimeEqual(recomputed, body.reviewedProjectionHash)) {
      return yield* refuse("approval_hash_mismatch", "the recomputed commitment does not match the reviewed hash")
    }
    const claimed = yield* store.claim({
      approvalId: approval.approvalId,
      revision: approval.revision,
      sessionId: owner.sessionId,
      now,
      staleBefore: now - claimTakeoverMillis
    })
    if (!claimed) return yield* refuse("approval_already_resolved", "the approval is already resolved")
    // Execution authority is the live billing-owner session (rule 6); the key makes a retry of a
    // claim that died replay the same action instead of making a second.
    const authorized = yield* intake(approval.workspaceId, intakeInput(approval, requestedOf(approval), owner), {
      idempotencyKey: `approval:${approval.approvalId}`,
      authorizedBy: { kind: "runtime_session", id: owner.sessionId },
      approval: { approvalId: approval.approvalId, revision: approval.revision }
    }).pipe(
      Effect.onError(() =>
        Effect.ignore(store.release({ approvalId: approval.approvalId, sessionId: owner.sessionId }))
      )
    )
    yield* store.complete({
      approvalId: approval.approvalId,
      sessionId: owner.sessionId,
      actionRequestId: authorized.actionRequestId,
      now
    })
    return { approvalId: approval.approvalId, state: "approved" as const, actionRequestId: authorized.actionRequestId }
  })
