import { assert, describe, it } from "@effect/vitest"
import * as Option from "effect/Option"
import { checkRevenueRelevance } from "../../../core/ingest/Relevance.ts"

const refused = (event_name: string, event_kind?: string) =>
  checkRevenueRelevance(event_kind === undefined ? { event_name } : { event_name, event_kind })

describe("Relevance", () => {
  // [event_name, a phrase the reason must contain]
  const noise: ReadonlyArray<readonly [string, string]> = [
    ["page_view", "page views"],
    ["page_viewed", "page views"],
    ["pageview", "page views"],
    ["pricing_page_viewed", "page views"],
    ["viewed_page", "page views"],
    ["screen_view", "page views"],
    ["settings_screen_viewed", "page views"],
    ["page_loaded", "page views"],
    ["pricing_viewed", "page views"],
    ["viewed_pricing", "page views"],
    ["plans_viewed", "page views"],
    ["home_visited", "page views"],
    ["landing_loaded", "page views"],
    ["checkout_page_opened", "page views"],
    ["billing_shown", "page views"],
    ["login_viewed", "auth page views"],
    ["signup_viewed", "auth page views"],
    ["login_page_viewed", "auth page views"],
    ["signup_page_viewed", "auth page views"],
    ["auth_page_view", "auth page views"],
    ["sign_in_page_viewed", "auth page views"],
    ["modal_opened", "modal"],
    ["modal_shown", "modal"],
    ["dialog_opened", "modal"],
    ["upgrade_modal_opened", "modal"],
    ["popup_shown", "modal"],
    ["hover", "hovers"],
    ["pricing_card_hovered", "hovers"],
    ["mouse_over", "hovers"],
    ["toggle", "toggles"],
    ["toggle_sidebar", "toggles"],
    ["sidebar_toggled", "toggles"],
    ["ui_toggle", "toggles"],
    ["switch_toggled", "toggles"],
    ["sidebar_collapsed", "toggles"],
    ["dark_mode_enabled", "toggles"],
    ["debug", "debug"],
    ["debug_log", "debug"],
    ["log", "debug"],
    ["console_log", "debug"],
    ["trace", "debug"],
    ["request_trace", "debug"],
    ["error_log", "debug"],
    // clicks, taps, scrolls
    ["button_clicked", "clicks"],
    ["click", "clicks"],
    ["cta_clicked", "clicks"],
    ["upgrade_button_clicked", "clicks"],
    ["link_clicked", "clicks"],
    ["pricing_card_clicked", "clicks"],
    ["nav_item_tapped", "clicks"],
    ["page_scrolled", "clicks"],
    ["scroll_depth_reached", "clicks"],
    ["input_focused", "clicks"],
    ["search_box_blurred", "clicks"],
    ["key_pressed", "clicks"],
    // opens of UI elements
    ["menu_opened", "toggles"],
    ["dropdown_opened", "toggles"],
    ["tab_opened", "toggles"],
    ["settings_panel_opened", "toggles"],
    ["drawer_closed", "modal"],
    ["accordion_expanded", "toggles"],
    ["app_opened", "toggles"],
    ["notification_dismissed", "toggles"],
    // views of UI elements other than the spec's
    ["banner_viewed", "views and impressions"],
    ["upgrade_banner_shown", "views and impressions"],
    ["button_displayed", "views and impressions"],
    ["tooltip_seen", "modal"],
    ["ad_impression", "views and impressions"],
    ["component_rendered", "views and impressions"],
    ["widget_mounted", "views and impressions"],
    // heartbeats and pings
    ["heartbeat", "heartbeats"],
    ["session_heartbeat", "heartbeats"],
    ["ping", "heartbeats"],
    ["client_ping", "heartbeats"],
    ["keep_alive", "heartbeats"],
    ["keepalive", "heartbeats"],
    ["health_check", "heartbeats"],
    ["healthcheck_passed", "heartbeats"],
    // debug and logs
    ["debug_info", "debug"],
    ["console_error", "debug"],
    ["app_log", "debug"],
    ["trace_event", "debug"]
  ]

  it(`the table covers at least 60 names (${noise.length} refused)`, () => {
    assert.isAtLeast(noise.length, 60)
  })

  for (const [name, phrase] of noise) {
    it(`refuses ${name} and says why`, () => {
      const refusal = refused(name)
      assert.isTrue(Option.isSome(refusal))
      const { code, reason } = Option.getOrThrow(refusal)
      assert.strictEqual(code, "not_revenue_relevant")
      assert.include(reason, phrase)
      assert.include(reason, "not revenue-relevant")
    })
  }

  it("the page-view reason points to the backend event that confirms the outcome", () => {
    assert.include(Option.getOrThrow(refused("page_view")).reason, "checkout_completed")
  })

  for (const [kind, phrase] of [
    ["page_view", "page views"],
    ["ui_interaction", "toggles"],
    ["debug", "debug"],
    ["hover", "hovers"],
    ["modal", "modal"],
    ["click", "clicks"],
    ["heartbeat", "heartbeats"],
    ["impression", "views and impressions"]
  ] as const) {
    it(`refuses event_kind ${kind} whatever the name`, () => {
      assert.include(Option.getOrThrow(refused("report_exported", kind)).reason, phrase)
    })
  }

  const allowed = [
    // every example name of the spec's "Events" table
    "account_activated",
    "first_value_completed",
    "onboarding_completed",
    "feature_used",
    "workflow_completed",
    "report_exported",
    "api_credits_used",
    "generation_completed",
    "sync_completed",
    "limit_hit",
    "quota_blocked",
    "overage_prompt_viewed",
    "usage_limit_hit",
    "overage_started",
    "checkout_started",
    "checkout_completed",
    "checkout_abandoned",
    "subscription_updated",
    "subscription_upgraded",
    "invoice_payment_failed",
    "payment_succeeded",
    "plan_changed",
    "plan_upgraded",
    "downgrade_completed",
    "cancel_completed",
    "subscription_paused",
    "team_member_invited",
    "seat_added",
    "role_assigned",
    "integration_connected",
    "oauth_connected",
    "destination_configured",
    "sync_failed",
    "setup_failed",
    "support_needed",
    "entitlement_active",
    "feature_adopted",
    "user_logged_in",
    "session_started",
    "usage_rollup_recorded",
    // near misses
    "audit_log_exported",
    "report_viewed",
    "dashboard_shared",
    "log_retention_upgraded",
    "invoice_viewed",
    "quote_viewed",
    "upgrade_prompt_shown",
    "plan_upgraded",
    "pricing_plan_changed",
    "checkout_completed",
    "deal_closed",
    "ticket_opened",
    "card_added",
    "payment_method_updated",
    "api_key_created",
    "trial_started",
    "trial_extended",
    "seat_removed",
    "report_scheduled",
    "export_completed",
    "invoice_paid",
    "usage_exceeded",
    "contract_signed",
    "user_logged_out",
    "data_source_linked",
    "workspace_created",
    "press_release_published"
  ]

  for (const name of allowed) {
    it(`allows ${name}`, () => assert.isTrue(Option.isNone(refused(name))))
  }

  it("keeps overage_prompt_viewed (limit friction), also with a friction kind", () => {
    assert.isTrue(Option.isNone(refused("overage_prompt_viewed")))
    assert.isTrue(Option.isNone(refused("overage_prompt_viewed", "friction_event")))
  })

  for (const kind of ["product_action", "billing_event", "friction_event", "login"]) {
    it(`allows event_kind ${kind}`, () => assert.isTrue(Option.isNone(refused("checkout_completed", kind))))
  }
})
