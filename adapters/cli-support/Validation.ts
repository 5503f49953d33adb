/**
 * `accord validate`: the ingest route's own rules (`core/ingest/Ingest.ts` `prepareEvent`: the
 * event contract, data safety and revenue relevance, with the route's precedence) applied offline
 * to every event of a file, plus the emission-rule warnings (`core/ingest/EmissionRules.ts`).
 * Each issue has the event, the field path, a stable code and a message; never the value.
 */
import * as Either from "effect/Either"
import { type BillingSource, type EmissionWarning, emissionWarnings } from "../../core/ingest/EmissionRules.ts"
import { eventNameProblem } from "../../core/ingest/Event.ts"
import { type EventIssue, prepareEvent } from "../../core/ingest/Ingest.ts"
import { checkRevenueRelevance } from "../../core/ingest/Relevance.ts"
import type { Entry } from "./EventFile.ts"

/**
 * One issue of one event, as reported.
 */
export interface ReportedIssue {
  readonly path: string
  readonly code: EventIssue["code"] | "batch_not_accepted"
  readonly message: string
}

/**
 * The verdict on one event.
 */
export interface EventReport {
  /** 0-based position in the file. */
  readonly index: number
  /** Line number, for JSON Lines. */
  readonly line?: number
  /** The name, only when it is a valid static name (so never a value the rules refused). */
  readonly event_name?: string
  readonly status: "valid" | "refused"
  /** The refusal's problem code, as the ingest route would answer. */
  readonly refusal?: string
  readonly issues: ReadonlyArray<ReportedIssue>
  readonly warnings: ReadonlyArray<Omit<EmissionWarning, "index">>
  /** For a usage rollup without `event_id`: the deterministic id it should carry. */
  readonly suggested_event_id?: string
}

/**
 * The whole report (`--json` prints it as is).
 */
export interface ValidationReport {
  readonly ok: boolean
  readonly source: "direct"
  readonly events: ReadonlyArray<EventReport>
  /** Warnings about the file as a whole (rule 1: too many distinct names). */
  readonly warnings: ReadonlyArray<EmissionWarning>
  readonly summary: {
    readonly events: number
    readonly valid: number
    readonly refused: number
    readonly warnings: number
  }
}

const issuesOf = (
  raw: unknown,
  now: number
): { issues: ReadonlyArray<ReportedIssue>; refusal?: string; suggested?: string } => {
  const result = prepareEvent(raw, { id: "validate", workspaceId: "validate", now })
  if (Either.isRight(result)) {
    const suggested = result.right.suggestedEventId
    return { issues: [], ...(suggested._tag === "Some" ? { suggested: suggested.value } : {}) }
  }
  const error = result.left
  switch (error._tag) {
    case "BatchNotAccepted":
      return { refusal: error.code, issues: [{ path: "", code: "batch_not_accepted", message: error.message }] }
    case "NotRevenueRelevant": {
      const event = raw as { event_name: string; event_kind?: string }
      const found = checkRevenueRelevance(event)
      const path = found._tag === "Some" ? found.value.path : "event_name"
      return { refusal: error.code, issues: [{ path, code: "not_revenue_relevant", message: error.reason }] }
    }
    case "InvalidEvent":
    case "UnsafeEvent":
      return { refusal: error.code, issues: error.issues.map(({ code, message, path }) => ({ path, code, message })) }
  }
}

const safeName = (raw: unknown, issues: ReadonlyArray<ReportedIssue>): string | undefined => {
  const name = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>)["event_name"] : undefined
  if (typeof name !== "string" || eventNameProblem(name) !== undefined) return undefined
  return issues.some((issue) => issue.path === "event_name" && issue.code === "unsafe_property") ? undefined : name
}

/**
 * Validates every entry at the clock `now` (epoch ms).
 */
export const validateEntries = (
  entries: ReadonlyArray<Entry>,
  now: number,
  options: { readonly billingSource?: BillingSource | undefined } = {}
): ValidationReport => {
  const warnings = emissionWarnings(
    entries.map((entry) => entry.value),
    { billingSource: options.billingSource }
  )
  const events = entries.map((entry, index): EventReport => {
    const { issues, refusal, suggested } = issuesOf(entry.value, now)
    const name = safeName(entry.value, issues)
    return {
      index,
      ...(entry.line === undefined ? {} : { line: entry.line }),
      ...(name === undefined ? {} : { event_name: name }),
      status: refusal === undefined ? "valid" : "refused",
      ...(refusal === undefined ? {} : { refusal }),
      issues,
      // a refused page view or click is not a state change: its refusal says all
      warnings:
        refusal === "not_revenue_relevant"
          ? []
          : warnings.filter((w) => w.index === index).map(({ code, message, path }) => ({ path, code, message })),
      ...(suggested === undefined ? {} : { suggested_event_id: suggested })
    }
  })
  const fileWarnings = warnings.filter((w) => w.index === undefined)
  const refused = events.filter((e) => e.status === "refused").length
  return {
    ok: refused === 0,
    source: "direct",
    events,
    warnings: fileWarnings,
    summary: {
      events: events.length,
      valid: events.length - refused,
      refused,
      warnings: fileWarnings.length + events.reduce((n, e) => n + e.warnings.length, 0)
    }
  }
}

const where = (event: EventReport): string =>
  `event ${event.index + 1}${event.line === undefined ? "" : ` (line ${event.line})`}${event.event_name === undefined ? "" : ` ${event.event_name}`}`

/**
 * The human form: one line per event, one indented line per issue or warning, then a summary.
 */
export const formatReport = (report: ValidationReport): string => {
  const lines: Array<string> = []
  for (const event of report.events) {
    lines.push(
      `${event.status === "valid" ? "ok     " : "refused"} ${where(event)}${event.refusal ? `: ${event.refusal}` : ""}`
    )
    for (const issue of event.issues)
      lines.push(`  error   ${issue.path || "(event)"} [${issue.code}] ${issue.message}`)
    for (const warning of event.warnings) lines.push(`  warning ${warning.path} [${warning.code}] ${warning.message}`)
    if (event.suggested_event_id !== undefined)
      lines.push(`  hint    event_id: send ${event.suggested_event_id} for safe retries`)
  }
  for (const warning of report.warnings) lines.push(`warning ${warning.path} [${warning.code}] ${warning.message}`)
  const s = report.summary
  lines.push(
    `${s.events} event${s.events === 1 ? "" : "s"}: ${s.valid} valid, ${s.refused} refused, ${s.warnings} warning${s.warnings === 1 ? "" : "s"}`
  )
  return lines.join("\n")
}
