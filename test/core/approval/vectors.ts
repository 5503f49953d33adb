/**
 * Known-answer vectors of the approval commitment (`core/approval/Commitment.ts`), shared by the
 * commitment tests and the per-runtime smoke run (Node, Bun, Deno).
 */
import type { CommitmentInput } from "../../../core/approval/Commitment.ts"

export const input: CommitmentInput = {
  workspaceId: "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20",
  accountId: "acct_42",
  approvalId: "9e1b3d5f-7a9c-4b1d-8f3a-5c7e9b1d3f5a",
  requester: { sessionId: "c4e6a8b0-2d4f-4a6c-8e0b-2d4f6a8c0e2b", subject: "user_viewer", role: "viewer" },
  reviewer: { sessionId: "d5f7b9c1-3e5a-4b7d-9f1c-3e5a7b9d1f3c", subject: "user_owner", role: "billing_owner" },
  projection: {
    action: { key: "extend_trial_14", label: "Extend trial", confirmation: "Extend your trial by 14 days?" },
    operation: { family: "extend_trial", extensionDays: 14, target: "subscription sub_1 (version 3)" },
    offer: { offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b", label: "Pro plan", priceDisplay: "49.00 USD" },
    timing: { effectiveAt: "2026-11-25T10:00:00.000Z" },
    requester: { roleKey: "viewer" },
    approvalExpiresAt: "2026-11-26T10:00:00.000Z",
    dependencyHash: "d".repeat(64)
  },
  binding: {
    decisionId: "2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f",
    journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
    publishedVersionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c"
  },
  action: {
    actionId: "1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e",
    actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",
    key: "extend_trial_14",
    family: "extend_trial",
    operationFingerprint: "a".repeat(64),
    safeTermsFingerprint: "b".repeat(64)
  },
  offer: {
    offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b",
    offerVersionId: "7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e",
    priceFingerprint: null
  },
  revision: 1,
  approvalExpiresAt: "2026-11-26T10:00:00.000Z",
  reviewValidUntil: "2026-11-25T10:10:00.000Z",
  dependencyHash: "d".repeat(64)
}

/** The exact bytes hashed for `input`, spelled out: the domain line, a newline, canonical JSON. */
export const encodedInput =
  "accord-approval-commitment-v2\n" +
  `{"accountId":"acct_42","action":{"actionId":"1c3e5a7b-9d2f-4b6a-8c0e-2f4a6b8c0d1e","actionVersionId":"6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",` +
  `"family":"extend_trial","key":"extend_trial_14","operationFingerprint":"${"a".repeat(64)}","safeTermsFingerprint":"${"b".repeat(64)}"},` +
  `"approvalExpiresAt":"2026-11-26T10:00:00.000Z","approvalId":"9e1b3d5f-7a9c-4b1d-8f3a-5c7e9b1d3f5a",` +
  `"binding":{"decisionId":"2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f","journeyId":"3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a","publishedVersionId":"5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c"},` +
  `"dependencyHash":"${"d".repeat(64)}",` +
  `"offer":{"offerId":"4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b","offerVersionId":"7c9e1a3b-5d7f-4b9c-8e2a-4b6d8f0a2c4e","priceFingerprint":null},` +
  `"projection":{"action":{"confirmation":"Extend your trial by 14 days?","key":"extend_trial_14","label":"Extend trial"},` +
  `"approvalExpiresAt":"2026-11-26T10:00:00.000Z","dependencyHash":"${"d".repeat(64)}",` +
  `"offer":{"label":"Pro plan","offerId":"4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b","priceDisplay":"49.00 USD"},` +
  `"operation":{"extensionDays":14,"family":"extend_trial","target":"subscription sub_1 (version 3)"},` +
  `"requester":{"roleKey":"viewer"},"timing":{"effectiveAt":"2026-11-25T10:00:00.000Z"}},` +
  `"requester":{"role":"viewer","sessionId":"c4e6a8b0-2d4f-4a6c-8e0b-2d4f6a8c0e2b","subject":"user_viewer"},` +
  `"reviewValidUntil":"2026-11-25T10:10:00.000Z",` +
  `"reviewer":{"role":"billing_owner","sessionId":"d5f7b9c1-3e5a-4b7d-9f1c-3e5a7b9d1f3c","subject":"user_owner"},` +
  `"revision":1,"workspaceId":"0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"}`

/**
 * Known answers, computed independently (Python's `json.dumps(sort_keys=True, separators=(",", ":"))`
 * and `hashlib.sha256` over the same values) when the encoding was defined: a change here is a
 * protocol change.
 */
export const vectors = {
  commitment: "7dc60cce6a9ee0a05cf0c5422bcb93b393ea487a40f197fcaaed83fe512e5bda",
  dependency: "f98be87046bc591a07a78bc0fbb569070fece472bf16853895432cc8020c9431",
  fingerprint: "98a52fdef15aff37700643f08dc079096bae7bde8f91c0d9d4464f4243833098"
}

export const dependencies = {
  publishedVersionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c",
  actionVersionId: "6b8d0f2a-4c6e-4a8b-9d1f-3a5c7e9b1d3f",
  offerVersionId: null,
  price: { amountMinor: 4900, currency: "usd" },
  decisionValidUntil: null,
  accountStatuses: null,
  connector: null
}

export const operation = {
  family: "extend_trial",
  extensionDays: 14,
  trialRef: { entityKey: "sub_1", entityKind: "subscription", version: 3 }
}
