import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import {
  type Candidate,
  CandidateFile,
  classify,
  type Classification,
  type ClassificationRule,
  classifyFile
} from "../../../core/ingest/Classify.ts"

type Row = readonly [
  candidate: Candidate,
  billingProvider: string | null,
  classification: Classification,
  rule: ClassificationRule
]

const backend = (
  name: string,
  confirmed_by: string | null = "a committed row",
  extra: Partial<Candidate> = {}
): Candidate => ({
  name,
  where: "backend",
  confirmed_by,
  ...extra
})

// [candidate, connected billing provider, expected classification, deciding rule]
const table: ReadonlyArray<Row> = [
  // durable backend events: send now
  [backend("checkout_completed", "orders.status = paid"), null, "direct_api_now", "durable_backend_event"],
  [backend("integration_connected", "oauth_tokens row stored"), null, "direct_api_now", "durable_backend_event"],
  [backend("report_exported", "exports row"), null, "direct_api_now", "durable_backend_event"],
  [backend("team_member_invited", "invitations row"), null, "direct_api_now", "durable_backend_event"],
  [backend("seat_added", "seats row"), null, "direct_api_now", "durable_backend_event"],
  [backend("limit_hit", "quota counter at limit"), null, "direct_api_now", "durable_backend_event"],
  [backend("entitlement_active", "entitlement check succeeded"), null, "direct_api_now", "durable_backend_event"],
  [
    { name: "usage_rollup_recorded", where: "background_job", confirmed_by: "closed daily bucket" },
    null,
    "direct_api_now",
    "durable_backend_event"
  ],
  [
    { name: "sync_failed", where: "background_job", confirmed_by: "job status failed" },
    null,
    "direct_api_now",
    "durable_backend_event"
  ],
  [
    { name: "oauth_connected", where: "webhook", confirmed_by: "provider callback stored" },
    null,
    "direct_api_now",
    "durable_backend_event"
  ],
  [backend("user_logged_in", "sessions row"), null, "direct_api_now", "durable_backend_event"],
  // billing while the backend is the billing source of truth: send now
  [backend("subscription_upgraded", "subscriptions row"), null, "direct_api_now", "durable_backend_event"],
  [backend("invoice_payment_failed", "invoices row"), null, "direct_api_now", "durable_backend_event"],
  // billing while a provider is connected: existing source
  [
    backend("subscription_upgraded", "subscriptions row"),
    "stripe",
    "existing_source",
    "billing_provider_authoritative"
  ],
  [backend("checkout_completed", "orders row"), "stripe", "existing_source", "billing_provider_authoritative"],
  [backend("payment_succeeded", "charges row"), "paddle", "existing_source", "billing_provider_authoritative"],
  [backend("cancel_completed", "subscriptions row"), "stripe", "existing_source", "billing_provider_authoritative"],
  [
    backend("renewal_charged", "ledger row", { event_kind: "billing_event" }),
    "stripe",
    "existing_source",
    "billing_provider_authoritative"
  ],
  // a provider connected does not touch non-billing events
  [backend("report_exported", "exports row"), "stripe", "direct_api_now", "durable_backend_event"],
  // covered by a connected source: existing source, whatever else holds
  [
    backend("integration_connected", "oauth row", { covered_by: "segment" }),
    null,
    "existing_source",
    "covered_by_connected_source"
  ],
  [
    { name: "pricing_page_viewed", where: "browser", covered_by: "web analytics" },
    null,
    "existing_source",
    "covered_by_connected_source"
  ],
  [
    backend("plan_changed", "plans row", { covered_by: "chargebee" }),
    "stripe",
    "existing_source",
    "covered_by_connected_source"
  ],
  // client-only: web SDK
  [{ name: "checkout_started", where: "browser", confirmed_by: null }, null, "web_sdk_follow_up", "client_side_only"],
  [
    { name: "feature_used", where: "mobile", confirmed_by: "local storage" },
    null,
    "web_sdk_follow_up",
    "client_side_only"
  ],
  [
    { name: "report_exported", where: "desktop", confirmed_by: "file written" },
    null,
    "web_sdk_follow_up",
    "client_side_only"
  ],
  [{ name: "upgrade_modal_opened", where: "browser" }, null, "web_sdk_follow_up", "client_side_only"],
  // noise the ingest route refuses, even from a backend
  [backend("pricing_page_viewed", "request log"), null, "web_sdk_follow_up", "not_revenue_relevant"],
  [backend("upgrade_button_clicked", "click table"), null, "web_sdk_follow_up", "not_revenue_relevant"],
  [backend("upsell_modal_opened", "modal table"), null, "web_sdk_follow_up", "not_revenue_relevant"],
  [backend("sidebar_toggled", "preferences row"), null, "web_sdk_follow_up", "not_revenue_relevant"],
  [backend("debug_log", "log line"), null, "web_sdk_follow_up", "not_revenue_relevant"],
  [
    backend("plan_selected", "ui state", { event_kind: "ui_interaction" }),
    null,
    "web_sdk_follow_up",
    "not_revenue_relevant"
  ],
  // nothing durable confirms it: intent
  [backend("upgrade_considered", null), null, "web_sdk_follow_up", "no_durable_state"],
  [backend("feature_used", "   "), null, "web_sdk_follow_up", "no_durable_state"],
  [{ name: "export_requested", where: "backend" }, null, "web_sdk_follow_up", "no_durable_state"]
]

describe("Classify", () => {
  it("has at least 30 candidates in its table", () => {
    assert.isAtLeast(table.length, 30)
  })

  for (const [candidate, billingProvider, classification, rule] of table) {
    it(`${candidate.name} (${candidate.where}${billingProvider ? `, ${billingProvider}` : ""}) -> ${classification} by ${rule}`, () => {
      const verdict = classify(candidate, { billingProvider })
      assert.strictEqual(verdict.classification, classification)
      assert.strictEqual(verdict.rule, rule)
      assert.isAbove(verdict.reason.length, 10)
    })
  }

  it("reports a name that breaks the event-name rule, and still classifies it", () => {
    const verdict = classify(backend("Checkout-Completed", "orders row"))
    assert.strictEqual(verdict.classification, "direct_api_now")
    assert.match(verdict.nameProblem ?? "", /lower_snake_case/)
    assert.isUndefined(classify(backend("checkout_completed")).nameProblem)
  })

  it("reads both file forms, and the object form's billing provider", () => {
    const decode = Schema.decodeUnknownEither(CandidateFile)
    const list = decode([{ name: "checkout_completed", where: "backend", confirmed_by: "orders row" }])
    const object = decode({
      billing_provider: "stripe",
      candidates: [{ name: "checkout_completed", where: "backend", confirmed_by: "orders row" }]
    })
    assert.isTrue(Either.isRight(list) && Either.isRight(object))
    if (Either.isRight(list) && Either.isRight(object)) {
      assert.strictEqual(classifyFile(list.right)[0]!.classification, "direct_api_now")
      assert.strictEqual(classifyFile(object.right)[0]!.classification, "existing_source")
    }
  })

  it("refuses a candidate with an unknown surface", () => {
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(CandidateFile)([{ name: "x_done", where: "fridge" }])))
  })
})
