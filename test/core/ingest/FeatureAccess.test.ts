import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as FeatureAccess from "../../../core/ingest/FeatureAccess.ts"
import type { ApiKeyScope } from "../../../core/ports/ApiKeyStore.ts"
import { validateEvent } from "../../../core/ingest/Event.ts"
import {
  buildFeatureAccessEvent,
  type FeatureAccessInput,
  type UnlockCondition,
  isAccessEvidence
} from "../../../core/ingest/FeatureAccess.ts"
import { prepareEvent } from "../../../core/ingest/Ingest.ts"
import { now } from "./support.ts"

const gate: UnlockCondition = {
  accountId: "acct_42",
  journeyId: "2f1b6a0e-9c4d-4f7e-8a3b-5d6c7e8f9a0b",
  versionId: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
  featureKey: "advanced_exports",
  startedAt: now - 10 * 60_000
}

const input: FeatureAccessInput = {
  accountId: gate.accountId,
  featureKey: gate.featureKey,
  journeyId: gate.journeyId,
  versionId: gate.versionId,
  occurredAt: "2026-11-22T11:55:00.000Z",
  actionRequestId: "0b7e5c1a-3d2f-4e6a-9b8c-1d2e3f4a5b6c"
}

const server = { keyScope: "ingest" as ApiKeyScope }
const evidence = buildFeatureAccessEvent(input)

describe("FeatureAccess", () => {
  it("the event_id is deterministic: the same access always has the same id, whatever the send", () => {
    assert.strictEqual(buildFeatureAccessEvent(input).event_id, buildFeatureAccessEvent({ ...input }).event_id)
    assert.strictEqual(
      buildFeatureAccessEvent(input).event_id,
      `entitlement_active:${input.actionRequestId}:${input.featureKey}`
    )
    // another feature or another action (which binds account, journey and version) is another event
    assert.notStrictEqual(
      buildFeatureAccessEvent({ ...input, featureKey: "other_feature" }).event_id,
      evidence.event_id
    )
    assert.notStrictEqual(
      buildFeatureAccessEvent({ ...input, actionRequestId: "1c8f6d2b-4e3a-4f7b-8c9d-2e3f4a5b6c7d" }).event_id,
      evidence.event_id
    )
  })

  it("builds the spec's event", () => {
    assert.deepStrictEqual(evidence, {
      event_id: "entitlement_active:0b7e5c1a-3d2f-4e6a-9b8c-1d2e3f4a5b6c:advanced_exports",
      event_name: "entitlement_active",
      account_id: "acct_42",
      timestamp: "2026-11-22T11:55:00.000Z",
      semantic_type: "activation",
      event_kind: "product_action",
      properties: {
        feature_key: "advanced_exports",
        funnel_journey_id: gate.journeyId,
        funnel_version_id: gate.versionId
      }
    })
  })

  it("has a stable retry identity", () => {
    assert.deepStrictEqual(buildFeatureAccessEvent({ ...input }), evidence)
    assert.notStrictEqual(buildFeatureAccessEvent({ ...input, featureKey: "sso" }).event_id, evidence.event_id)
    assert.notStrictEqual(buildFeatureAccessEvent({ ...input, actionRequestId: "other" }).event_id, evidence.event_id)
  })

  it("passes validation and every ingestion rule", () => {
    assert.isTrue(Either.isRight(validateEvent(evidence, now)))
    const prepared = prepareEvent(evidence, { id: "evt_1", workspaceId: "ws", now })
    assert.isTrue(Either.isRight(prepared), JSON.stringify(prepared))
  })

  it("unlocks the gate when everything matches", () => {
    assert.isTrue(isAccessEvidence(evidence, gate, server))
  })

  describe("does not unlock", () => {
    const props = evidence.properties!
    const cases: ReadonlyArray<readonly [string, Parameters<typeof isAccessEvidence>[0], ApiKeyScope?]> = [
      ["for another account", { ...evidence, account_id: "acct_43" }],
      ["for another journey", { ...evidence, properties: { ...props, funnel_journey_id: "j2" } }],
      ["for another version", { ...evidence, properties: { ...props, funnel_version_id: "v2" } }],
      ["for another feature", { ...evidence, properties: { ...props, feature_key: "sso" } }],
      ["without funnel identifiers", { ...evidence, properties: { feature_key: gate.featureKey } }],
      [
        "without properties",
        { event_name: evidence.event_name, account_id: evidence.account_id, timestamp: evidence.timestamp }
      ],
      ["at the journey's start", { ...evidence, timestamp: new Date(gate.startedAt).toISOString() }],
      ["before the journey began", { ...evidence, timestamp: new Date(gate.startedAt - 1).toISOString() }],
      ["from feature_adopted", { ...evidence, event_name: "feature_adopted" }],
      ["from a billing receipt: payment_succeeded", { ...evidence, event_name: "payment_succeeded" }],
      ["from a billing receipt: invoice_paid", { ...evidence, event_name: "invoice_paid" }],
      ["from a billing receipt: checkout_completed", { ...evidence, event_name: "checkout_completed" }],
      ["with an unparseable timestamp", { ...evidence, timestamp: "soon" }],
      ["sent with a developer:read key", evidence, "developer:read"],
      ["sent with an admin key", evidence, "admin"]
    ]
    for (const [label, event, scope] of cases) {
      it(label, () => {
        assert.isFalse(isAccessEvidence(event, gate, { keyScope: scope ?? "ingest" }))
      })
    }
  })

  it("funnel ids match whatever their letter case, on either side", () => {
    const upper = {
      ...evidence,
      properties: {
        ...evidence.properties,
        funnel_journey_id: gate.journeyId.toUpperCase(),
        funnel_version_id: gate.versionId.toUpperCase()
      }
    }
    assert.isTrue(isAccessEvidence(upper, gate, server))
    assert.isTrue(
      isAccessEvidence(
        evidence,
        { ...gate, journeyId: gate.journeyId.toUpperCase(), versionId: gate.versionId.toUpperCase() },
        server
      )
    )
    assert.isFalse(
      isAccessEvidence(
        { ...evidence, properties: { ...evidence.properties, feature_key: "ADVANCED_EXPORTS" } },
        gate,
        server
      )
    )
  })

  it("a millisecond after the start is enough", () => {
    assert.isTrue(
      isAccessEvidence({ ...evidence, timestamp: new Date(gate.startedAt + 1).toISOString() }, gate, server)
    )
  })
})

describe("FeatureKey", () => {
  const isFeatureKey = Schema.is(FeatureAccess.FeatureKey)
  it("accepts a lowercase code of 1 to 64 characters starting with a letter", () => {
    for (const key of ["a", "exports.csv", "advanced_reports", "seats:team-2", `a${"b".repeat(63)}`]) {
      assert.isTrue(isFeatureKey(key), key)
    }
  })
  it("refuses an uppercase letter", () => assert.isFalse(isFeatureKey("Exports")))
  it("refuses an empty key", () => assert.isFalse(isFeatureKey("")))
  it("refuses a key over 64 characters", () => assert.isFalse(isFeatureKey(`a${"b".repeat(64)}`)))
  it("refuses a key not starting with a letter", () => assert.isFalse(isFeatureKey("1exports")))
})
