import { assert, describe, it } from "@effect/vitest"
import {
  emissionWarnings,
  eventFamilies,
  isBillingEvent,
  isCompletedStateChange,
  maxFirstIntegrationEventNames
} from "../../../core/ingest/EmissionRules.ts"
import { checkRevenueRelevance } from "../../../core/ingest/Relevance.ts"

const at = "2026-11-20T10:00:00.000Z"
const event = (event_name: string, fields: Record<string, unknown> = {}) => ({
  event_name,
  account_id: "a",
  timestamp: at,
  ...fields
})

describe("EmissionRules", () => {
  it("every recommended name passes the ingest route's relevance rule", () => {
    for (const family of eventFamilies)
      for (const name of family.names) assert.isTrue(checkRevenueRelevance({ event_name: name })._tag === "None", name)
  })

  it("reads completed state changes from the name", () => {
    for (const name of [
      "checkout_completed",
      "seat_added",
      "integration_connected",
      "limit_hit",
      "entitlement_active",
      "plan_upgraded"
    ]) {
      assert.isTrue(isCompletedStateChange(name), name)
    }
    for (const name of ["feature_used_count", "support_needed_now", "red", "user_logged_in"]) {
      assert.isFalse(isCompletedStateChange(name), name)
    }
  })

  it("billing events are the billing families' names or event_kind billing_event", () => {
    assert.isTrue(isBillingEvent({ event_name: "invoice_payment_failed" }))
    assert.isTrue(isBillingEvent({ event_name: "renewal_charged", event_kind: "billing_event" }))
    assert.isFalse(isBillingEvent({ event_name: "report_exported" }))
  })

  it("missing_event_id only for a completed state change without event_id", () => {
    assert.deepStrictEqual(
      emissionWarnings([event("checkout_completed")]).map((w) => [w.index, w.code]),
      [[0, "missing_event_id"]]
    )
    assert.deepStrictEqual(emissionWarnings([event("checkout_completed", { event_id: "checkout_completed:1" })]), [])
    assert.deepStrictEqual(
      emissionWarnings([event("checkout_completed", { event_id: "" })]).map((w) => w.code),
      ["missing_event_id"]
    )
  })

  it("first_milestone for any first_* name", () => {
    assert.deepStrictEqual(
      emissionWarnings([event("first_value_completed", { event_id: "f:1" })]).map((w) => w.code),
      ["first_milestone"]
    )
  })

  it("too_many_event_names past the first-integration allowlist, once for the file", () => {
    const names = [
      "seat_added",
      "report_exported",
      "sync_completed",
      "feature_used",
      "role_assigned",
      "oauth_connected",
      "limit_hit"
    ]
    const six = emissionWarnings(
      names.slice(0, maxFirstIntegrationEventNames).map((n) => event(n, { event_id: `${n}:1` }))
    )
    assert.deepStrictEqual(six, [])
    const seven = emissionWarnings(names.map((n) => event(n, { event_id: `${n}:1` })))
    assert.deepStrictEqual(
      seven.map((w) => [w.index, w.code]),
      [[undefined, "too_many_event_names"]]
    )
  })

  it("billing_provider_source_of_truth only when a provider is the billing source of truth", () => {
    const events = [event("subscription_upgraded", { event_id: "s:1" })]
    assert.deepStrictEqual(
      emissionWarnings(events, { billingSource: "provider" }).map((w) => w.code),
      ["billing_provider_source_of_truth"]
    )
    assert.deepStrictEqual(emissionWarnings(events, { billingSource: "backend" }), [])
    assert.deepStrictEqual(emissionWarnings(events), [])
  })

  it("no warnings for entries without a valid name (the contract reports those)", () => {
    assert.deepStrictEqual(
      emissionWarnings([null, 3, [], { event_name: "Checkout Completed" }, { account_id: "a" }]),
      []
    )
  })
})
