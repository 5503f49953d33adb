import { assert, describe, it } from "@effect/vitest"
import {
  type EvidenceBinding,
  type EvidenceMismatch,
  evidenceObservers,
  evidenceStanding,
  matchEvidence
} from "../../../core/connector/Evidence.ts"
import { CatalogEvidenceType, type Completion } from "../../../core/protocol/messages/Completion.ts"

const binding: EvidenceBinding = {
  workspaceId: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
  accountId: "acct_42",
  actionRequestId: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b",
  providerIdempotencyKey: "pva_" + "a".repeat(64)
}

const all = CatalogEvidenceType.literals

const completion = (over: Partial<Completion> = {}, evidence: Record<string, unknown> = {}) => ({
  workspaceId: binding.workspaceId,
  actionRequestId: binding.actionRequestId,
  providerIdempotencyKey: binding.providerIdempotencyKey,
  outcome: "succeeded" as const,
  ...over,
  evidence: {
    entitlement: "trial_extended",
    reasonCode: "extended",
    source: "entitlement_state",
    accountId: "acct_42",
    ...evidence
  } as Completion["evidence"]
})

describe("matchEvidence", () => {
  it("matches catalog evidence bound to the action", () => {
    assert.deepStrictEqual(matchEvidence(binding, completion(), all), { _tag: "Matched", type: "entitlement_state" })
  })
  const cases: ReadonlyArray<readonly [EvidenceMismatch, ReturnType<typeof completion>]> = [
    ["workspace_mismatch", completion({ workspaceId: "1b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11" })],
    ["action_mismatch", completion({ actionRequestId: "7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b" })],
    ["idempotency_key_mismatch", completion({ providerIdempotencyKey: "pva_" + "b".repeat(64) })],
    ["account_mismatch", completion({}, { accountId: null })],
    ["account_mismatch", completion({}, { accountId: "acct_43" })],
    ["source_not_catalog", completion({}, { source: "browser_success_screen" })],
    ["outcome_not_succeeded", completion({ outcome: "failed" })]
  ]
  for (const [reason, c] of cases) {
    it(`refuses: ${reason}`, () => {
      assert.deepStrictEqual(matchEvidence(binding, c, all), { _tag: "Unmatched", reason })
    })
  }
  it("a completion with exactly the spec's evidence fields (entitlement, reasonCode, source) matches: evidence.accountId is optional", () => {
    const spec = {
      ...completion(),
      evidence: {
        entitlement: "trial_extended",
        reasonCode: "extended",
        source: "entitlement_state"
      } as Completion["evidence"]
    }
    assert.deepStrictEqual(matchEvidence(binding, spec, all), { _tag: "Matched", type: "entitlement_state" })
  })
  it("a present accountId other than the action's does not match, and says so", () => {
    assert.deepStrictEqual(matchEvidence(binding, completion({}, { accountId: "acct_other" }), all), {
      _tag: "Unmatched",
      reason: "account_mismatch"
    })
  })
  it("accepts every catalog type", () => {
    for (const source of [
      "authenticated_completion",
      "provider_event",
      "customer_server_event",
      "billing_change",
      "subscription_state",
      "entitlement_state",
      "credit_balance",
      "approval_recorded"
    ]) {
      assert.strictEqual(matchEvidence(binding, completion({}, { source }), all)._tag, "Matched")
    }
  })
  it("refuses a catalog type the action's catalog entry does not accept: source_not_accepted", () => {
    assert.deepStrictEqual(matchEvidence(binding, completion(), ["authenticated_completion"]), {
      _tag: "Unmatched",
      reason: "source_not_accepted"
    })
  })
})

describe("evidence the service observes itself (one table)", () => {
  it("names an observer for every catalog type", () => {
    assert.deepStrictEqual(Object.keys(evidenceObservers).sort(), [...CatalogEvidenceType.literals].sort())
  })
  it("the signed completion is observed at once for an action that is not a payment", () => {
    assert.strictEqual(evidenceStanding("authenticated_completion", false, false), "observed")
  })
  it("a Direct API event type waits until the service holds the event", () => {
    for (const type of ["customer_server_event", "entitlement_state"] as const) {
      assert.strictEqual(evidenceStanding(type, false, false), "awaiting")
      assert.strictEqual(evidenceStanding(type, false, true), "observed")
    }
  })
  it("a provider type never verifies an action that is not a payment (nothing is read back)", () => {
    for (const type of ["provider_event", "billing_change", "subscription_state", "credit_balance"] as const) {
      assert.strictEqual(evidenceStanding(type, false, true), "not_observable")
    }
  })
  it("a Payment action is never verified by a completion alone: the completion type is not observable, the rest go through a read", () => {
    assert.strictEqual(evidenceStanding("authenticated_completion", true, true), "not_observable")
    for (const type of [
      "provider_event",
      "billing_change",
      "subscription_state",
      "credit_balance",
      "entitlement_state",
      "customer_server_event",
      "approval_recorded"
    ] as const) {
      assert.strictEqual(evidenceStanding(type, true, true), "via_reconciliation")
    }
  })
  it("an approval is observed only once recorded", () => {
    assert.strictEqual(evidenceStanding("approval_recorded", false, false), "awaiting")
    assert.strictEqual(evidenceStanding("approval_recorded", false, true), "observed")
  })
})
