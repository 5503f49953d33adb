/**
 * The commitment covers what runs: for any approval, changing any field of the execution request
 * the customer receives (workspace, account, the action's id, key, every operation field and the
 * safe terms, the binding, the actor) changes the `projectionHash`; and the fields the billing owner
 * must see to know what runs (the days and the target of an extend-trial action, the charge, interval
 * and proration of a Payment action, the safe terms) change the review itself. Built through the same
 * functions prepare and resolve use (`reviewProjection`, `commitmentOf`, `intakeInput`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { FastCheck as fc } from "effect"
import { commitmentOf, intakeInput, type RequestedAction, reviewProjection } from "../../../core/approval/Approvals.ts"
import type { ApprovalRecord } from "../../../core/ports/ApprovalStore.ts"
import type { RuntimeSessionRecord } from "../../../core/ports/RuntimeSessionStore.ts"
import { canonicalJson } from "../../../core/protocol/Json.ts"
import type { Offer } from "../../../core/protocol/messages/Catalog.ts"
import { cryptoLayers } from "../../support/layers.ts"

const t0 = 1_764_000_000_000
const text = fc.string({ minLength: 1, maxLength: 24 })
const uuid = fc.uuid()

const extendTrial = fc.record({
  family: fc.constant("extend_trial" as const),
  extensionDays: fc.integer({ min: 1, max: 365 }),
  trialRef: fc.record({ entityKey: text, entityKind: text, version: fc.nat({ max: 1000 }) })
})

const payment = fc.record(
  {
    family: fc.constantFrom("payment.new_subscription", "payment.existing_subscription_change"),
    interval: fc.constantFrom("day", "week", "month", "year"),
    proration: fc.constantFrom("create_prorations", "always_invoice", "none"),
    priceKey: fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/)
  },
  { requiredKeys: ["family"] }
)

const approvalArbitrary = fc
  .record({
    workspaceId: uuid,
    accountId: text,
    approvalId: uuid,
    requester: fc.record({ sessionId: uuid, subject: text, role: text }),
    action: fc.record({
      id: uuid,
      key: fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/),
      operation: fc.oneof(extendTrial, payment),
      safeTerms: fc.record({ label: text, confirmation: text })
    }),
    binding: fc.record({ decisionId: uuid, journeyId: uuid, offerId: uuid, publishedVersionId: uuid }),
    price: fc.record({ amountMinor: fc.nat({ max: 1_000_000 }), currency: fc.constantFrom("usd", "eur", "jpy") })
  })
  .map(({ action, binding, price, ...rest }): ApprovalRecord => {
    const priced = action.operation.family !== "extend_trial"
    const request: RequestedAction = {
      action: action as RequestedAction["action"],
      binding,
      versions: { actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f", offerVersionId: null },
      ...(priced
        ? {
            payment: {
              mode: action.operation.family.slice("payment.".length) as "new_subscription",
              actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",
              offerVersionId: "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e",
              expected: { ...price, priceReferenceHash: "c".repeat(64) }
            }
          }
        : {})
    }
    return {
      ...rest,
      tokenHash: "e".repeat(64),
      request,
      state: "pending",
      revision: 1,
      expiresAt: t0 + 86_400_000,
      createdAt: t0,
      prepared: null,
      claimedAt: null,
      resolvedBy: null,
      resolvedAt: null,
      actionRequestId: null
    }
  })

const reviewerArbitrary = fc.record({ sessionId: uuid, subject: text, role: text })

type Reviewer = Pick<RuntimeSessionRecord, "sessionId" | "subject" | "role">

const asSession = (reviewer: Reviewer): RuntimeSessionRecord => ({
  ...reviewer,
  workspaceId: "w",
  accountId: "a",
  authorities: ["funnels.actions.execute"],
  tokenHash: "t",
  issuedBy: "k",
  createdAt: t0,
  expiresAt: t0 + 1,
  revokedAt: null
})

const requestedOf = (approval: ApprovalRecord) => approval.request as RequestedAction

/** What the customer receives, besides the per-delivery nonce, time and derived ids. */
const executed = (approval: ApprovalRecord, reviewer: Reviewer) => {
  const { payment: _, ...body } = intakeInput(approval, requestedOf(approval), asSession(reviewer))
  return { workspaceId: approval.workspaceId, ...body }
}

const offerOf = (approval: ApprovalRecord): Offer => ({
  offerId: requestedOf(approval).binding.offerId,
  offerVersionId: "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e",
  price: requestedOf(approval).payment?.expected ?? null
})

const reviewOf = (approval: ApprovalRecord) => reviewProjection(approval, offerOf(approval), "d".repeat(64))

const hashOf = (approval: ApprovalRecord, reviewer: Reviewer) => {
  const offer = offerOf(approval)
  return commitmentOf(
    approval,
    {
      projection: reviewOf(approval),
      offerVersionId: offer.offerVersionId,
      price: offer.price === null ? null : { amountMinor: offer.price.amountMinor, currency: offer.price.currency }
    },
    approval.revision,
    t0 + 600_000,
    reviewer
  )
}

/** Every leaf of a JSON value, as a path. */
const leaves = (value: unknown, path: ReadonlyArray<string> = []): Array<ReadonlyArray<string>> =>
  value !== null && typeof value === "object"
    ? Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]))
    : [path]

const withLeaf = (value: unknown, path: ReadonlyArray<string>, leaf: unknown): unknown => {
  if (path.length === 0) return leaf
  const [head, ...rest] = path
  const record = value as Record<string, unknown>
  return { ...record, [head!]: withLeaf(record[head!], rest, leaf) }
}

/**
 * The approval and reviewer with the executed field at `path` replaced: each executed field has one
 * source (the approval's account and workspace, its stored request, the reviewer session); the
 * actor's `authority` is a constant of the flow, not a field anyone chooses.
 */
const changeSource = (approval: ApprovalRecord, reviewer: Reviewer, path: ReadonlyArray<string>, value: unknown) => {
  const [head, ...rest] = path
  switch (head) {
    case "workspaceId":
    case "accountId":
      return { approval: { ...approval, [head]: value } as ApprovalRecord, reviewer }
    case "action":
    case "binding":
      return {
        approval: { ...approval, request: withLeaf(approval.request, path, value) } as ApprovalRecord,
        reviewer
      }
    case "actor":
      return {
        approval,
        reviewer: { ...reviewer, [rest[0] === "roleKey" ? "role" : "subject"]: value } as Reviewer
      }
  }
  throw new Error(`no source for ${path.join(".")}`)
}

const crypto = cryptoLayers[1]![1]

describe("the commitment covers every executed field", () => {
  it.effect.prop(
    "changing any field the customer receives changes the projectionHash",
    [approvalArbitrary, reviewerArbitrary, fc.nat(), fc.oneof(text, fc.integer({ min: 0, max: 400 }))],
    ([approval, reviewer, pick, replacement]) =>
      Effect.gen(function* () {
        const body = executed(approval, reviewer)
        const paths = leaves(body).filter((p) => p.join(".") !== "actor.authority")
        const path = paths[pick % paths.length]!
        const changed = changeSource(approval, reviewer, path, replacement)
        const changedBody = executed(changed.approval, changed.reviewer)
        fc.pre(canonicalJson(changedBody) !== canonicalJson(body))
        assert.notStrictEqual(
          yield* hashOf(changed.approval, changed.reviewer),
          yield* hashOf(approval, reviewer),
          path.join(".")
        )
      }).pipe(Effect.provide(crypto)),
    { fastCheck: { numRuns: 60 } }
  )

  it.prop(
    "changing what runs (days, target, charge, interval, proration, safe terms) changes what the owner sees",
    [approvalArbitrary, fc.nat(), text, fc.integer({ min: 1, max: 365 })],
    ([approval, pick, textReplacement, numberReplacement]) => {
      const requested = requestedOf(approval)
      const shown = [
        ...leaves(requested.action.operation, ["action", "operation"]).filter(
          (p) => p.at(-1) !== "family" && p.at(-1) !== "priceKey"
        ),
        ["action", "safeTerms", "label"],
        ["action", "safeTerms", "confirmation"],
        ...(requested.payment === undefined
          ? []
          : [
              ["payment", "expected", "amountMinor"],
              ["payment", "expected", "currency"]
            ])
      ]
      const path = shown[pick % shown.length]!
      const original = path.reduce<unknown>((v, k) => (v as Record<string, unknown>)[k], requested)
      // A value of the field's own type: the schemas refuse anything else before it is stored.
      const replacement = typeof original === "number" ? numberReplacement : textReplacement
      fc.pre(replacement !== original)
      const changed = { ...approval, request: withLeaf(requested, path, replacement) } as ApprovalRecord
      assert.notStrictEqual(canonicalJson(reviewOf(changed)), canonicalJson(reviewOf(approval)), path.join("."))
    }
  )
})
