/**
 * Account profile facts (spec "Account profile facts": properties on normal account-scoped events).
 *
 * | Fact | From |
 * |---|---|
 * | `signup_at` | "Customer signup date (the product signup, not first sight by the service)": `account_created_at`, `signup_at`, `customer_created_at` |
 * | `last_login_at`, `last_login_user_id` | "events `user_logged_in` or `session_started` with `semantic_type` `login`, with `user_id` when a user caused it" |
 * | `active_users_7d`, `active_users_30d` | the same login events: distinct users whose last login is within 7 or 30 days of the read |
 * | `plan`, `account_status`, `subscription_status` | "`plan`, `plan_name`, `current_plan`, `account_status`, `subscription_status` (bounded stable values)" |
 * | `is_in_trial`, `trial_started_at`, `trial_ends_at` | "Trial state" |
 * | `user_count`, `active_user_count`, `seat_count`, `member_count` | "current counts, not user lists" |
 *
 * These property names are reserved: a value of the wrong form is a field issue and the event is
 * rejected, so the sender learns at once instead of a profile silently going stale. When several
 * names feed one fact (`plan`, `plan_name`, `current_plan`), the first present in that order wins.
 * Every fact carries the event's occurrence time and Accord's id of the event; the store keeps the
 * newest (`AccountProfileStore.isNewer`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AccountProfileStore, type LoginActivity, type ProfileFact } from "../ports/AccountProfileStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import type { FieldIssue } from "../protocol/Json.ts"
import { occurredAt, parseUtcTimestamp, utcTimestampExpectation, type ValidEvent } from "./Event.ts"

/**
 * The facts an account profile can hold.
 */
export type ProfileFactName =
  | "signup_at"
  | "plan"
  | "account_status"
  | "subscription_status"
  | "is_in_trial"
  | "trial_started_at"
  | "trial_ends_at"
  | "user_count"
  | "active_user_count"
  | "seat_count"
  | "member_count"
  | "last_login_at"
  | "last_login_user_id"

/**
 * A "bounded stable value": a lower-case code of 1 to 64 characters, letters and digits joined by
 * `_`, `-`, `.` or `:` (`pro_annual`, `past_due`, `enterprise-2024`).
 */
export const isStableCode = (value: unknown): value is string =>
  typeof value === "string" && value.length <= 64 && /^[a-z0-9]+(?:[_.:-][a-z0-9]+)*$/.test(value)

interface FactRule {
  readonly fact: ProfileFactName
  readonly properties: ReadonlyArray<string>
  readonly expectation: string
  /** The fact's value, or `undefined` when the property's value is not of the fact's form. */
  readonly read: (value: unknown) => unknown
}

const timestamp = (value: unknown): string | undefined => {
  const millis = parseUtcTimestamp(value)
  return millis === undefined ? undefined : formatTimestamp(millis)
}
const code = (value: unknown): string | undefined => (isStableCode(value) ? value : undefined)
const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined
const flag = (value: unknown): boolean | undefined => (typeof value === "boolean" ? value : undefined)

const codeExpectation = "a stable lower-case code of at most 64 characters, such as pro_annual"
const countExpectation = "a non-negative integer (a current count, not a list)"

const rules: ReadonlyArray<FactRule> = [
  {
    fact: "signup_at",
    properties: ["account_created_at", "signup_at", "customer_created_at"],
    expectation: utcTimestampExpectation,
    read: timestamp
  },
  { fact: "plan", properties: ["plan", "plan_name", "current_plan"], expectation: codeExpectation, read: code },
  { fact: "account_status", properties: ["account_status"], expectation: codeExpectation, read: code },
  { fact: "subscription_status", properties: ["subscription_status"], expectation: codeExpectation, read: code },
  { fact: "is_in_trial", properties: ["is_in_trial"], expectation: "true or false", read: flag },
  { fact: "trial_started_at", properties: ["trial_started_at"], expectation: utcTimestampExpectation, read: timestamp },
  { fact: "trial_ends_at", properties: ["trial_ends_at"], expectation: utcTimestampExpectation, read: timestamp },
  { fact: "user_count", properties: ["user_count"], expectation: countExpectation, read: count },
  { fact: "active_user_count", properties: ["active_user_count"], expectation: countExpectation, read: count },
  { fact: "seat_count", properties: ["seat_count"], expectation: countExpectation, read: count },
  { fact: "member_count", properties: ["member_count"], expectation: countExpectation, read: count }
]

/**
 * The property names that feed profile facts.
 */
export const profileFactProperties: ReadonlyArray<string> = rules.flatMap((rule) => rule.properties)

const hasOwn = (object: object, key: string): boolean => Object.hasOwn(object, key)

/**
 * Issues for profile-fact properties whose value is not of the fact's form (a reserved name used
 * for something else).
 */
export const profileFactIssues = (event: Partial<Pick<ValidEvent, "properties">>): ReadonlyArray<FieldIssue> => {
  const properties = event.properties
  const issues: Array<FieldIssue> = []
  if (properties === undefined) return issues
  for (const rule of rules) {
    for (const name of rule.properties) {
      if (hasOwn(properties, name) && rule.read(properties[name]) === undefined) {
        issues.push({ path: `properties.${name}`, message: `is a profile fact and must be ${rule.expectation}` })
      }
    }
  }
  return issues
}

/**
 * Whether the event is login activity: `user_logged_in` or `session_started` with `semantic_type`
 * `login`.
 */
export const isLoginActivity = (event: Pick<ValidEvent, "event_name" | "semantic_type">): boolean =>
  (event.event_name === "user_logged_in" || event.event_name === "session_started") && event.semantic_type === "login"

/**
 * The login an event records for the account's active-user counts: login activity with the
 * `user_id` who caused it (a login without one counts towards `last_login_at` only).
 */
export const loginActivityOf = (
  event: ValidEvent,
  context: { readonly workspaceId: string; readonly sourceEventId: string }
): Option.Option<LoginActivity> =>
  isLoginActivity(event) && event.user_id !== undefined
    ? Option.some({
        workspaceId: context.workspaceId,
        accountId: event.account_id,
        userId: event.user_id,
        observedAt: occurredAt(event),
        sourceEventId: context.sourceEventId
      })
    : Option.none()

/**
 * The active-user counts the profile shows, by fact name: distinct users whose last login is
 * within that many days of the read.
 */
export const activeUserWindows: ReadonlyArray<readonly [name: "active_users_7d" | "active_users_30d", days: number]> = [
  ["active_users_7d", 7],
  ["active_users_30d", 30]
]

/**
 * An active-user count as of a read.
 */
export interface ActiveUsers {
  readonly name: (typeof activeUserWindows)[number][0]
  readonly value: number
  /** The read time (epoch ms) the window ends at. */
  readonly asOf: number
}

/**
 * The account's active-user counts now (the `Clock`): one per {@link activeUserWindows}, none when
 * no login with a `user_id` was ever recorded for the account (no signal rather than zero).
 */
export const readActiveUsers = (
  workspaceId: string,
  accountId: string
): Effect.Effect<ReadonlyArray<ActiveUsers>, StorageError, AccountProfileStore> =>
  Effect.gen(function* () {
    const asOf = yield* Clock.currentTimeMillis
    const since = activeUserWindows.map(([, days]) => asOf - days * 86_400_000)
    // the first count, since 0, is every user with a recorded login
    const [ever, ...counts] = yield* (yield* AccountProfileStore).countActiveUsers(workspaceId, accountId, [
      0,
      ...since
    ])
    if (ever === 0) return []
    return activeUserWindows.map(([name], i) => ({ name, value: counts[i] ?? 0, asOf }))
  })

/**
 * The facts a (validated) event sets, in a fixed order, observed when it occurred (`observedAt`,
 * when the caller has already parsed it). Properties of the wrong form are skipped (see
 * {@link profileFactIssues}, which rejects such events before this runs).
 */
export const extractProfileFacts = (
  event: ValidEvent,
  sourceEventId: string,
  observedAt: number = occurredAt(event)
): ReadonlyArray<ProfileFact> => {
  const facts: Array<ProfileFact> = []
  const properties = event.properties
  if (properties !== undefined) {
    for (const rule of rules) {
      for (const name of rule.properties) {
        const value = hasOwn(properties, name) ? rule.read(properties[name]) : undefined
        if (value !== undefined) {
          facts.push({ name: rule.fact, value, observedAt, sourceEventId })
          break
        }
      }
    }
  }
  if (isLoginActivity(event)) {
    facts.push({ name: "last_login_at", value: formatTimestamp(observedAt), observedAt, sourceEventId })
    if (event.user_id !== undefined)
      facts.push({ name: "last_login_user_id", value: event.user_id, observedAt, sourceEventId })
  }
  return facts
}
