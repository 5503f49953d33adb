/**
 * Event-candidate classification for a coding tool (spec `direct-api-ingestion.md`, "What the
 * service does" 5): "`direct_api_now` (durable backend event to send now), `existing_source`
 * (already covered by a reliable source), `web_sdk_follow_up` (browser-visible intent or UI
 * friction)".
 *
 * A candidate is described by its name, where it happens, what durable state confirms it and which
 * connected source already covers it. The first rule that applies decides, in this order:
 *
 * 1. `covered_by_connected_source` -> `existing_source`: a reliable connected source already sends it.
 * 2. `billing_provider_authoritative` -> `existing_source`: a billing event while a billing
 *    provider is connected ("Prefer the billing provider's events when it is connected").
 * 3. `client_side_only` -> `web_sdk_follow_up`: it happens only in a browser, mobile or desktop
 *    client, where the ingest key must never be ("Authentication" 3).
 * 4. `not_revenue_relevant` -> `web_sdk_follow_up`: the ingest route would refuse it as page
 *    views, clicks, modals, hovers or toggles (`Relevance.checkRevenueRelevance`, the route's rule).
 * 5. `no_durable_state` -> `web_sdk_follow_up`: nothing durable confirms it ("backend
 *    source-of-truth events that are confirmed by durable product, billing, setup or integration
 *    state"), so it is intent, not an outcome.
 * 6. `durable_backend_event` -> `direct_api_now`.
 *
 * A name that breaks the event-name rule is still classified; `nameProblem` says what to rename.
 */
import * as Schema from "effect/Schema"
import { isBillingEvent } from "./EmissionRules.ts"
import { eventNameProblem } from "./Event.ts"
import { checkRevenueRelevance } from "./Relevance.ts"

/**
 * Where a candidate happens.
 */
export const Surface = Schema.Literal("backend", "background_job", "webhook", "browser", "mobile", "desktop")

export type Surface = typeof Surface.Type

/**
 * The surfaces that are clients: the ingest key must never be there.
 */
export const clientSurfaces: ReadonlyArray<Surface> = ["browser", "mobile", "desktop"]

const Text = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))

/**
 * One candidate as a coding tool describes it (snake_case, like the event contract).
 */
export const Candidate = Schema.Struct({
  name: Text,
  where: Surface,
  /** The durable state that confirms it happened (a table row, a provider confirmation), if any. */
  confirmed_by: Schema.optional(Schema.NullOr(Text)),
  /** The connected source that already covers it reliably (`stripe`, `segment`), if any. */
  covered_by: Schema.optional(Schema.NullOr(Text)),
  event_kind: Schema.optional(Text)
})

export type Candidate = typeof Candidate.Type

/**
 * A file of candidates: a list, or an object with the list and the billing provider, if connected.
 */
export const CandidateFile = Schema.Union(
  Schema.Array(Candidate),
  Schema.Struct({
    billing_provider: Schema.optional(Schema.NullOr(Text)),
    candidates: Schema.Array(Candidate)
  })
)

export type CandidateFile = typeof CandidateFile.Type

export type Classification = "direct_api_now" | "existing_source" | "web_sdk_follow_up"

export type ClassificationRule =
  | "covered_by_connected_source"
  | "billing_provider_authoritative"
  | "client_side_only"
  | "not_revenue_relevant"
  | "no_durable_state"
  | "durable_backend_event"

/**
 * What each rule answers and why, in the order they are tried.
 */
export const classificationRules: ReadonlyArray<{
  readonly rule: ClassificationRule
  readonly classification: Classification
  readonly reason: string
}> = [
  {
    rule: "covered_by_connected_source",
    classification: "existing_source",
    reason: "a reliable connected source already sends it; do not send it twice"
  },
  {
    rule: "billing_provider_authoritative",
    classification: "existing_source",
    reason:
      "a billing provider is connected: prefer its events; use the Direct API for billing only when the backend is the billing source of truth"
  },
  {
    rule: "client_side_only",
    classification: "web_sdk_follow_up",
    reason: "it happens only in a client, where the secret ingest key must never be; it belongs to the web SDK"
  },
  {
    rule: "not_revenue_relevant",
    classification: "web_sdk_follow_up",
    reason:
      "browser-visible intent or UI friction (page views, clicks, modals, hovers, toggles) that the ingest route refuses"
  },
  {
    rule: "no_durable_state",
    classification: "web_sdk_follow_up",
    reason:
      "no durable product, billing, setup or integration state confirms it, so it is intent rather than an outcome"
  },
  {
    rule: "durable_backend_event",
    classification: "direct_api_now",
    reason: "a backend event confirmed by durable state: send it now with the ingest key"
  }
]

export interface ClassifyContext {
  /** The connected billing provider, if any (`stripe`). */
  readonly billingProvider?: string | null | undefined
}

/**
 * The verdict on one candidate.
 */
export interface Verdict {
  readonly name: string
  readonly classification: Classification
  readonly rule: ClassificationRule
  readonly reason: string
  /** Why the name is not a valid `event_name`, when it is not. */
  readonly nameProblem?: string
}

const present = (value: string | null | undefined): boolean => typeof value === "string" && value.trim() !== ""

const ruleOf = (candidate: Candidate, context: ClassifyContext): ClassificationRule => {
  if (present(candidate.covered_by)) return "covered_by_connected_source"
  if (
    present(context.billingProvider) &&
    isBillingEvent({ event_name: candidate.name, event_kind: candidate.event_kind })
  ) {
    return "billing_provider_authoritative"
  }
  if (clientSurfaces.includes(candidate.where)) return "client_side_only"
  if (
    checkRevenueRelevance({
      event_name: candidate.name,
      ...(candidate.event_kind ? { event_kind: candidate.event_kind } : {})
    })._tag === "Some"
  )
    return "not_revenue_relevant"
  if (!present(candidate.confirmed_by)) return "no_durable_state"
  return "durable_backend_event"
}

/**
 * Classifies one candidate: the first rule that applies decides (see the module comment).
 */
export const classify = (candidate: Candidate, context: ClassifyContext = {}): Verdict => {
  const rule = ruleOf(candidate, context)
  const { classification, reason } = classificationRules.find((r) => r.rule === rule)!
  const nameProblem = eventNameProblem(candidate.name)
  return { name: candidate.name, classification, rule, reason, ...(nameProblem === undefined ? {} : { nameProblem }) }
}

/**
 * Classifies a whole candidate file.
 */
export const classifyFile = (file: CandidateFile): ReadonlyArray<Verdict> => {
  const [candidates, context] = Array.isArray(file)
    ? [file as ReadonlyArray<Candidate>, {}]
    : [
        (file as { candidates: ReadonlyArray<Candidate> }).candidates,
        { billingProvider: (file as { billing_provider?: string | null }).billing_provider }
      ]
  return candidates.map((candidate) => classify(candidate, context))
}
