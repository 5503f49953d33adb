/**
 * Revenue relevance (spec "Emission rules" 5, "Errors" 1).
 *
 * "Do not send generic page views, auth page views, modal opens, hovers, local UI toggles or debug
 * logs", and "rejected payloads explain ... missing revenue relevance". The Direct API carries
 * backend source-of-truth events; browser-visible intent and UI friction belong to the web SDK.
 * An event is judged by its `event_name` words and its `event_kind` only. A page view is named
 * after a page (`page_viewed`, `pricing_page_viewed`) or after what a page shows (`pricing_viewed`,
 * `viewed_plans`, `login_viewed`); limit friction that the spec lists by name, such as
 * `overage_prompt_viewed`, and views of product objects (`report_viewed`) stay allowed.
 *
 * The rule is by meaning, over the words of the name: clicks, taps, scrolls and focus changes
 * (any name with such a word); opens, closes and views of UI elements (menus, tabs, panels,
 * banners, buttons, widgets) and impressions or renders; heartbeats, pings, keep-alives and
 * health checks; debug events and logs. Business objects that happen to open or close
 * (`ticket_opened`, `deal_closed`) are not UI elements and stay allowed.
 */
import * as Option from "effect/Option"
import type { Event } from "./Event.ts"
import { remembering } from "./Memo.ts"

/**
 * Why an event is refused as noise.
 */
export interface RelevanceRefusal {
  readonly code: "not_revenue_relevant"
  /** The field the judgement rests on. */
  readonly path: "event_name" | "event_kind"
  readonly reason: string
}

type Category = "auth_page_view" | "page_view" | "modal" | "click" | "hover" | "toggle" | "view" | "heartbeat" | "debug"

const reasons: Readonly<Record<Category, string>> = {
  auth_page_view:
    "auth page views are not revenue-relevant; send user_logged_in or session_started with " +
    "semantic_type login after the sign-in succeeds, or account_activated once signup is persisted",
  page_view:
    "page views are not revenue-relevant; send the backend event that confirms the outcome, such as " +
    "checkout_completed (browser-visible intent belongs to the web SDK)",
  modal:
    "modal and dialog opens are not revenue-relevant; send the backend event that confirms what the user " +
    "did next, such as plan_upgraded (UI friction belongs to the web SDK)",
  click:
    "clicks, taps and scrolls are not revenue-relevant; send the backend event that confirms what the click " +
    "did, such as checkout_started or report_exported (UI interactions belong to the web SDK)",
  view:
    "views and impressions of UI elements (banners, buttons, menus, tabs, widgets) are not revenue-relevant; " +
    "send the backend event that confirms an outcome (the spec's own views, such as overage_prompt_viewed, are allowed)",
  heartbeat:
    "heartbeats, pings, keep-alives and health checks are not revenue-relevant; report usage as " +
    "usage_rollup_recorded with current counts",
  hover: "hovers are not revenue-relevant; send backend events confirmed by durable product, billing or setup state",
  toggle:
    "local UI toggles and opens of menus, tabs or panels are not revenue-relevant; send a backend event only when a setting change is persisted " +
    "and matters to revenue, such as integration_connected",
  debug:
    "debug logs, traces and raw logs are not revenue-relevant and must not be sent; report failures as bounded " +
    "friction events such as sync_failed with an error code"
}

const has = (words: ReadonlyArray<string>, set: ReadonlySet<string>): boolean => words.some((word) => set.has(word))

/** Whether `second` directly follows some word of `first`. */
const pair = (words: ReadonlyArray<string>, first: ReadonlySet<string>, second: ReadonlySet<string>): boolean =>
  words.some((word, i) => first.has(word) && i + 1 < words.length && second.has(words[i + 1]!))

const set = (words: string): ReadonlySet<string> => new Set(words.split(" "))

const pageWords = set("page pages screen screens")
const viewWords = set("view views viewed visit visited load loaded opened shown seen displayed")
const viewedWords = set("view viewed visit visited")
/** What a page is named after: `pricing_viewed` is a page view even without the word page. */
const pageNames = set(
  "pricing plans plan home homepage landing settings billing checkout cart docs documentation blog about features " +
    "contact faq help website site url route login logins signin signup register registration auth"
)
const pageViewWords = set("pageview pageviews pageviewed screenview screenviews")
const authWords = set("login logins signin signup register registration auth password sign")
const modalWords = set("modal modals dialog dialogs popup popups popover tooltip tooltips drawer lightbox")
const hoverWords = set("hover hovers hovered hovering mouseover mouseenter")
const mouseWords = set("mouse")
const overWords = set("over enter entered moved")
const widgetWords = set("sidebar accordion menu dropdown tab tabs panel theme")
const widgetStateWords = set("collapsed expanded switched changed selected opened closed")
const darkWords = set("dark")
const modeWords = set("mode")
const debugWords = set("debug debugging console")
const clickWords = set(
  "click clicks clicked clicking doubleclick dblclick tap taps tapped tapping pressed swipe swiped scroll scrolls " +
    "scrolled scrolling keypress keydown keyup focus focused blur blurred rightclick"
)
const heartbeatWords = set("heartbeat heartbeats ping pings pinged pong keepalive healthcheck healthchecks")
const keepWords = set("keep")
const aliveWords = set("alive")
const healthWords = set("health")
const checkWords = set("check checks checked")
/** UI elements: opening, showing or viewing one is UI noise. */
const elementWords = set(
  "menu dropdown tab tabs panel sidebar accordion drawer banner button buttons link links cta tooltip toast " +
    "notification widget carousel slide slider section nav navbar navigation footer header icon element component " +
    "card overlay sheet app"
)
const openWords = set("open opens opened close closed dismissed expanded collapsed")
const elementViewWords = set("view views viewed shown displayed seen rendered impression impressions mounted visible")
const impressionWords = set("impression impressions render rendered mounted")
const logNames = set("log logs trace traces log_message log_entry log_line log_event trace_event")
const logTails = set("log logs trace traces")

const byKind: ReadonlyMap<string, Category> = new Map<string, Category>([
  ["page_view", "page_view"],
  ["page_views", "page_view"],
  ["pageview", "page_view"],
  ["screen_view", "page_view"],
  ["auth_page_view", "auth_page_view"],
  ["ui_interaction", "toggle"],
  ["ui_event", "toggle"],
  ["ui", "toggle"],
  ["ui_toggle", "toggle"],
  ["toggle", "toggle"],
  ["modal", "modal"],
  ["modal_open", "modal"],
  ["hover", "hover"],
  ["debug", "debug"],
  ["debug_log", "debug"],
  ["log", "debug"],
  ["logs", "debug"],
  ["trace", "debug"],
  ["console", "debug"],
  ["click", "click"],
  ["ui_click", "click"],
  ["tap", "click"],
  ["scroll", "click"],
  ["impression", "view"],
  ["ui_view", "view"],
  ["heartbeat", "heartbeat"],
  ["ping", "heartbeat"],
  ["keepalive", "heartbeat"],
  ["health_check", "heartbeat"]
])

/** The category a (valid) event name falls in, remembered per name. */
const categoryOfName = remembering((name: string): Category | undefined => {
  const words = name.split("_")
  const pageView =
    has(words, pageViewWords) ||
    pair(words, pageWords, viewWords) ||
    pair(words, viewedWords, pageWords) ||
    pair(words, pageNames, viewWords) ||
    pair(words, viewedWords, pageNames)
  if (pageView) return has(words, authWords) ? "auth_page_view" : "page_view"
  if (has(words, modalWords)) return "modal"
  if (has(words, hoverWords) || pair(words, mouseWords, overWords)) return "hover"
  if (
    words.some((word) => word.startsWith("toggle")) ||
    pair(words, widgetWords, widgetStateWords) ||
    pair(words, darkWords, modeWords)
  )
    return "toggle"
  if (has(words, clickWords)) return "click"
  if (has(words, heartbeatWords) || pair(words, keepWords, aliveWords) || pair(words, healthWords, checkWords))
    return "heartbeat"
  if (has(words, elementWords) && (has(words, openWords) || has(words, elementViewWords))) {
    return has(words, openWords) ? "toggle" : "view"
  }
  if (has(words, impressionWords)) return "view"
  if (has(words, debugWords) || logNames.has(name) || logTails.has(words[words.length - 1]!)) return "debug"
  return undefined
})

/**
 * `Some` with the reason when the event is noise the Direct API refuses (code
 * `not_revenue_relevant`), `None` when it may be ingested.
 */
export const checkRevenueRelevance = (
  event: Pick<Event, "event_name"> & { readonly event_kind?: string | undefined }
): Option.Option<RelevanceRefusal> => {
  const byName = categoryOfName(event.event_name)
  if (byName !== undefined)
    return Option.some({ code: "not_revenue_relevant", path: "event_name", reason: reasons[byName] })
  const kind = event.event_kind === undefined ? undefined : byKind.get(event.event_kind)
  return kind === undefined
    ? Option.none()
    : Option.some({ code: "not_revenue_relevant", path: "event_kind", reason: reasons[kind] })
}
