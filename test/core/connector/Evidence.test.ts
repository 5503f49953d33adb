import { assert, describe, it } from "@effect/vitest"
import { type EvidenceBinding, type EvidenceMismatch, matchEvidence } from "../../../core/connector/Evidence.ts"
import type { Completion } from "../../../core/protocol/messages/Completion.ts"

const binding: EvidenceBinding = {
  workspaceId: "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
  accountId: "acct_42",
  actionRequestId: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b",
  providerIdempotencyKey: "pva_" + "a".repeat(64)
}

const completion = (over: Partial<Completion> = {}, evidence: Record<string, unknown> = {}) => ({
  workspaceId: binding.workspaceId,
  actionRequestId: binding.actionRequestId,
  providerIdempotencyKey: binding.providerIdempotencyKey,
  outcome: "succeeded" as const,
  ...over,
  evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "entitlement_state", accountId: "acct_42", ...evidence } as Completion["evidence"]
})

describe("matchEvidence", () => {
  it("matches catalog evidence bound to the action", () => {
    assert.deepStrictEqual(matchEvidence(binding, completion()), { _tag: "Matched", type: "entitlement_state" })
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
      assert.deepStrictEqual(matchEvidence(binding, c), { _tag: "Unmatched", reason })
    })
  }
  it("a completion with exactly the spec's evidence fields (entitlement, reasonCode, source) matches: evidence.accountId is optional", () => {
    const spec = { ...completion(), evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "entitlement_state" } as Completion["evidence"] }
    assert.deepStrictEqual(matchEvidence(binding, spec), { _tag: "Matched", type: "entitlement_state" })
  })
  it("a present accountId other than the action's does not match, and says so", () => {
    assert.deepStrictEqual(matchEvidence(binding, completion({}, { accountId: "acct_other" })), { _tag: "Unmatched", reason: "account_mismatch" })
  })
  it("accepts every catalog type", () => {
    for (const source of ["authenticated_completion", "provider_event", "customer_server_event", "billing_change", "subscription_state", "entitlement_state", "credit_balance", "approval_recorded"]) {
      assert.strictEqual(matchEvidence(binding, completion({}, { source }))._tag, "Matched")
    }
  })
})
