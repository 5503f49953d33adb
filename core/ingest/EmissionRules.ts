/**
 * The emission rules of the Direct API (spec `direct-api-ingestion.md`, "Events"), the recommended
 * event names by family and the never-send list, as data, and the warnings a validator gives for
 * events that break a rule without being refused by the ingest route ("smells"):
 *
 * - rule 1 "Start with an allowlist of 3 to 6 high-signal backend events": more than
 *   {@link maxFirstIntegrationEventNames} distinct names in one file (`too_many_event_names`);
 * - rule 2 "Use stable `event_id` values for completed state changes": a completed state change
 *   (a past-tense name, or one the spec lists as a state) without `event_id` (`missing_event_id`);
 * - rule 3 "Emit `first_*` milestones only when persisted state proves first occurrence
 *   race-safely": any `first_*` name (`first_milestone`), since a file cannot prove it;
 * - rule 4 "Prefer the billing provider's events when it is connected": a billing event when the
 *   caller says a billing provider is the source of truth (`billing_provider_source_of_truth`).
 *
 * The same definitions feed the CLI's validator, the agent handoff file, the classification and
 * the context server, so none of them can drift from another.
 */
import { eventNameProblem } from "./Event.ts"
import { usageRollupEventName } from "./UsageRollup.ts"

/**
 * One family of the spec's "Event names accepted or recommended, by family" table.
 */
export interface EventFamily {
  readonly family: string
  readonly names: ReadonlyArray<string>
  /** What the spec adds to the family, if anything. */
  readonly note?: string
  /** Billing events: the billing provider's own events win when it is connected (rule 4). */
  readonly billing: boolean
}

/**
 * The spec's families, in its order.
 */
export const eventFamilies: ReadonlyArray<EventFamily> = [
  {
    family: "Activation and first value",
    names: ["account_activated", "first_value_completed", "onboarding_completed"],
    billing: false
  },
  {
    family: "High-value usage",
    names: [
      "feature_used",
      "workflow_completed",
      "report_exported",
      "api_credits_used",
      "generation_completed",
      "sync_completed"
    ],
    billing: false
  },
  {
    family: "Limit friction",
    names: ["limit_hit", "quota_blocked", "overage_prompt_viewed", "usage_limit_hit", "overage_started"],
    billing: false
  },
  { family: "Checkout", names: ["checkout_started", "checkout_completed", "checkout_abandoned"], billing: true },
  {
    family: "Billing lifecycle",
    names: [
      "subscription_updated",
      "subscription_upgraded",
      "invoice_payment_failed",
      "payment_succeeded",
      "plan_changed",
      "plan_upgraded"
    ],
    billing: true
  },
  {
    family: "Downgrade or cancel",
    names: ["downgrade_completed", "cancel_completed", "subscription_paused"],
    note: "with a bounded reason_code, never free text",
    billing: true
  },
  { family: "Team expansion", names: ["team_member_invited", "seat_added", "role_assigned"], billing: false },
  {
    family: "Integration connected",
    names: ["integration_connected", "oauth_connected", "destination_configured"],
    billing: false
  },
  {
    family: "Friction",
    names: ["sync_failed", "setup_failed", "support_needed"],
    note: "bounded error codes or statuses only",
    billing: false
  },
  {
    family: "Feature access",
    names: ["entitlement_active", "feature_adopted"],
    note: "entitlement_active unlocks the feature-gate Funnel",
    billing: false
  },
  { family: "Account facts", names: ["user_logged_in", "session_started", usageRollupEventName], billing: false }
]

/**
 * The spec's emission rules, word for word.
 */
export const emissionRules: ReadonlyArray<string> = [
  "Start with an allowlist of 3 to 6 high-signal backend events.",
  "Use stable `event_id` values for completed state changes, for example of the form `checkout_completed:<checkout_id>` or `integration_connected:<provider>:<account_id>`.",
  "Emit `first_*` milestones only when persisted state proves first occurrence race-safely. Otherwise skip the event or use a non-`first_*` name.",
  "Prefer the billing provider's events when it is connected. Use Direct API for billing only when the backend is the billing source of truth.",
  "Do not send generic page views, auth page views, modal opens, hovers, local UI toggles or debug logs.",
  "Refresh profile facts on lifecycle changes or daily rollups, without noisy page-view events.",
  "Send feature access only after the host's entitlement check succeeded for that account."
]

/**
 * The spec's "Data that must never be sent", word for word.
 */
export const neverSend: ReadonlyArray<string> = [
  "passwords, tokens, cookies, signatures, auth headers, API keys, session values, invite links, webhook URLs, provider tokens, destination secrets;",
  "personal data outside the `user` object, full URLs with query strings, full request or response bodies, stack traces, raw logs, prompts, comments, notes, support messages, descriptions;",
  "free-text feedback, survey responses, chat messages, support transcripts or AI summaries as sentiment context."
]

/**
 * Rule 1's upper bound of distinct event names in a first integration.
 */
export const maxFirstIntegrationEventNames = 6

export type EmissionWarningCode =
  | "missing_event_id"
  | "first_milestone"
  | "too_many_event_names"
  | "billing_provider_source_of_truth"

/**
 * One warning: which event (its index in the file; absent for a warning about the whole file),
 * which field, a stable code and a message. Never a value from the event.
 */
export interface EmissionWarning {
  readonly index?: number
  readonly path: string
  readonly code: EmissionWarningCode
  readonly message: string
}

/**
 * Who is the billing source of truth: a connected billing `provider`, or the `backend` itself.
 */
export type BillingSource = "provider" | "backend"

export interface EmissionContext {
  /** When `provider`, billing events sent through the Direct API get a warning (rule 4). */
  readonly billingSource?: BillingSource | undefined
}

const billingNames: ReadonlySet<string> = new Set(eventFamilies.filter((f) => f.billing).flatMap((f) => f.names))

/** The spec's named states whose last word is not past tense. */
const stateNames: ReadonlySet<string> = new Set(["limit_hit", "usage_limit_hit", "entitlement_active"])

/**
 * Whether an event is a billing event (rule 4): a name of a billing family, or `event_kind`
 * `billing_event`.
 */
export const isBillingEvent = (event: { readonly event_name: string; readonly event_kind?: unknown }): boolean =>
  billingNames.has(event.event_name) || event.event_kind === "billing_event"

/**
 * Whether a name reads as a completed state change (rule 2): its last word is past tense
 * (`checkout_completed`, `seat_added`) or it is one of the spec's named states (`limit_hit`,
 * `entitlement_active`).
 */
export const isCompletedStateChange = (eventName: string): boolean => {
  if (stateNames.has(eventName)) return true
  const words = eventName.split("_")
  const last = words[words.length - 1] ?? ""
  return last.length > 3 && last.endsWith("ed")
}

/**
 * Whether a name is a `first_*` milestone (rule 3).
 */
export const isFirstMilestone = (eventName: string): boolean => eventName.startsWith("first_")

const record = (value: unknown): Readonly<Record<string, unknown>> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

/**
 * The emission-rule warnings of a set of events (one file, one first integration). Entries that
 * are not objects or have no string `event_name` get none: the contract's own issues cover them.
 */
export const emissionWarnings = (
  events: ReadonlyArray<unknown>,
  context: EmissionContext = {}
): ReadonlyArray<EmissionWarning> => {
  const warnings: Array<EmissionWarning> = []
  const names = new Set<string>()
  events.forEach((raw, index) => {
    const event = record(raw)
    const name = event?.["event_name"]
    // a name that breaks the contract is reported by the contract's own issue
    if (event === undefined || typeof name !== "string" || eventNameProblem(name) !== undefined) return
    names.add(name)
    if (isCompletedStateChange(name) && (typeof event["event_id"] !== "string" || event["event_id"] === "")) {
      warnings.push({
        index,
        path: "event_id",
        code: "missing_event_id",
        message:
          "a completed state change should carry a stable event_id (such as checkout_completed:<checkout_id>) " +
          "so that a retry is not counted twice"
      })
    }
    if (isFirstMilestone(name)) {
      warnings.push({
        index,
        path: "event_name",
        code: "first_milestone",
        message:
          "emit first_* milestones only when persisted state proves the first occurrence race-safely; " +
          "otherwise skip the event or use a name without first_"
      })
    }
    if (context.billingSource === "provider" && isBillingEvent({ event_name: name, event_kind: event["event_kind"] })) {
      warnings.push({
        index,
        path: "event_name",
        code: "billing_provider_source_of_truth",
        message:
          "a billing provider is the source of truth: prefer its events and send billing through the Direct API " +
          "only when the backend is the billing source of truth"
      })
    }
  })
  if (names.size > maxFirstIntegrationEventNames) {
    warnings.push({
      path: "event_name",
      code: "too_many_event_names",
      message:
        `${names.size} distinct event names; start with an allowlist of 3 to ${maxFirstIntegrationEventNames} ` +
        "high-signal backend events"
    })
  }
  return warnings
}

/**
 * The event contract's fields, as the spec's Event table lists them, for generated documents.
 */
export const eventFields: ReadonlyArray<{
  readonly field: string
  readonly required: "yes" | "recommended" | "optional"
  readonly rule: string
}> = [
  { field: "event_name", required: "yes", rule: "static lower_snake_case string" },
  {
    field: "account_id",
    required: "yes",
    rule: "stable string identifying the customer, account, workspace, tenant, company or organization"
  },
  { field: "timestamp", required: "yes", rule: "ISO 8601 UTC timestamp of when the event occurred" },
  {
    field: "event_id",
    required: "recommended",
    rule: "stable idempotency string for retryable completed events; reuse only when retrying the same event"
  },
  { field: "user_id", required: "optional", rule: "string, the acting user" },
  { field: "user", required: "optional", rule: "object with `name` and `email` strings for the user in `user_id`" },
  {
    field: "semantic_type",
    required: "recommended",
    rule: "one of the revenue event families, such as `limit_friction`, `activation`, `login`, `usage`"
  },
  {
    field: "event_kind",
    required: "recommended",
    rule: "`product_action`, `billing_event`, `friction_event`, `login`, or another normalized kind"
  },
  {
    field: "value",
    required: "optional",
    rule: "number: amount, count, usage value, credit amount or revenue magnitude"
  },
  { field: "properties", required: "optional", rule: "bounded structured object" },
  { field: "sentiment", required: "optional", rule: "`positive`, `neutral`, `negative`, `unknown`" },
  { field: "sentiment_score", required: "optional", rule: "number from -1 to 1" },
  { field: "sentiment_confidence", required: "optional", rule: "number from 0 to 1" },
  { field: "sentiment_source", required: "optional", rule: "`explicit`, `inferred`, `ai`, `integration`, `unknown`" }
]
