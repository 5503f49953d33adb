/**
 * The usage rollup event (spec "Usage rollup event", "Limits" 1–3).
 *
 * "One aggregate event per account, product, metric and closed time bucket": `event_name`
 * `usage_rollup_recorded`, `semantic_type` `usage`, `event_kind` `product_action`, `value` the
 * amount, and `properties` `product_key`, `metric_key`, `unit`, `usage_start`, `usage_end`,
 * `aggregation_grain`, `source_system`. "Send only closed buckets": `usage_end` must not be after
 * the receiving clock. "`product_key`, `metric_key` and `unit` must keep a stable meaning over
 * time. When packaging changes, add properties such as `plan`, `tier` or `pricing_version` instead
 * of changing the unit of an existing key."
 *
 * Rules the spec leaves open, fixed here: keys and units are lower_snake_case of at most 64
 * characters; `value` is a non-negative finite number; `aggregation_grain` is `hour`, `day`, `week`
 * or `month` and must match the period (an hour exactly, a day 23–25 hours and a week 7 days ± 1
 * hour for daylight-saving days in the sender's zone, a month 28–31 days ± 1 hour);
 * `source_system` is 1–64 characters; `pricing_version` and `tier`, when sent, are codes like
 * `plan`.
 */
import * as Option from "effect/Option"
import { isStorableText } from "../protocol/Text.ts"
import { formatTimestamp } from "../protocol/Timestamp.ts"
import type { FieldIssue } from "../protocol/Json.ts"
import { isLowerSnake, parseUtcTimestamp, utcTimestampExpectation, type ValidEvent } from "./Event.ts"

/** The Direct API event that carries a usage rollup. */
export const usageRollupEventName = "usage_rollup_recorded"

/** The bucket sizes a usage rollup may use. */
export const aggregationGrains = ["hour", "day", "week", "month"] as const

/** One of `aggregationGrains`. */
export type AggregationGrain = (typeof aggregationGrains)[number]

const hour = 3_600_000
const day = 24 * hour

/** The accepted bucket length for each grain, inclusive. */
const grainSpans: Readonly<Record<AggregationGrain, readonly [number, number]>> = {
  hour: [hour, hour],
  day: [day - hour, day + hour],
  week: [7 * day - hour, 7 * day + hour],
  month: [28 * day - hour, 31 * day + hour]
}

/** A bounded machine code (`pricing_version`, `tier`), as `Common.Code`. */
const isCode = (value: unknown): boolean => typeof value === "string" && /^[A-Za-z0-9_.:-]{1,64}$/.test(value)

const isGrain = (value: unknown): value is AggregationGrain =>
  typeof value === "string" && (aggregationGrains as ReadonlyArray<string>).includes(value)

/**
 * Every rule of the usage rollup event that `event` breaks, at `now` (the receiving clock); empty
 * for other event names. Reads only the fields given, so it also runs on the valid fields of an
 * event whose other fields broke the contract.
 */
export const validateRollup = (
  event: Partial<Pick<ValidEvent, "event_name" | "semantic_type" | "event_kind" | "value" | "properties">>,
  now: number
): ReadonlyArray<FieldIssue> => {
  if (event.event_name !== usageRollupEventName) return []
  const issues: Array<FieldIssue> = []
  const issue = (path: string, message: string) => issues.push({ path, message })
  const properties = event.properties ?? {}
  const required = " (required for usage_rollup_recorded)"

  if (event.semantic_type !== "usage") issue("semantic_type", "must be usage" + required)
  if (event.event_kind !== "product_action") issue("event_kind", "must be product_action" + required)
  if (event.value === undefined || event.value < 0) {
    issue("value", "must be the non-negative amount of usage in the bucket" + required)
  }
  for (const key of ["product_key", "metric_key", "unit"] as const) {
    if (!isLowerSnake(properties[key])) {
      issue(`properties.${key}`, "must be a lower_snake_case code of at most 64 characters" + required)
    }
  }
  const start = parseUtcTimestamp(properties.usage_start)
  const end = parseUtcTimestamp(properties.usage_end)
  if (start === undefined) issue("properties.usage_start", `must be ${utcTimestampExpectation}${required}`)
  if (end === undefined) issue("properties.usage_end", `must be ${utcTimestampExpectation}${required}`)
  if (start !== undefined && end !== undefined && start >= end) {
    issue("properties.usage_end", "must be after usage_start")
  }
  if (end !== undefined && end > now) {
    issue("properties.usage_end", "must not be in the future: send only closed buckets (the previous hour or day)")
  }
  const grain = properties.aggregation_grain
  if (!isGrain(grain)) {
    issue("properties.aggregation_grain", `must be one of ${aggregationGrains.join(", ")}${required}`)
  } else if (start !== undefined && end !== undefined && start < end) {
    const [min, max] = grainSpans[grain]
    if (end - start < min || end - start > max) {
      issue(
        "properties.aggregation_grain",
        "does not match the period from usage_start to usage_end; send one event per bucket"
      )
    }
  }
  const source = properties.source_system
  if (typeof source !== "string" || source.length < 1 || source.length > 64 || /[\u0000-\u001f\u007f]/.test(source)) {
    issue(
      "properties.source_system",
      "must be a string of 1 to 64 characters naming the system that computed the usage" + required
    )
  }
  for (const key of ["pricing_version", "tier"] as const) {
    if (properties[key] !== undefined && !isCode(properties[key])) {
      issue(`properties.${key}`, "must be a code of 1 to 64 letters, digits, _ . : or -")
    }
  }
  return issues
}

/** Packaging dimensions that distinguish meters with the same product and metric keys. */
const meterDimensions = ["pricing_version", "plan", "tier"] as const

/**
 * The meter a rollup feeds: `product_key/metric_key`, then `;name=value` for each of
 * `pricing_version`, `plan` and `tier` that is present. `None` when the keys are missing.
 */
export const meterKey = (event: Pick<ValidEvent, "properties">): Option.Option<string> => {
  const properties = event.properties ?? {}
  const product = properties.product_key
  const metric = properties.metric_key
  if (typeof product !== "string" || typeof metric !== "string") return Option.none()
  let key = `${product}/${metric}`
  for (const name of meterDimensions) {
    const value = properties[name]
    if (typeof value === "string" || typeof value === "number") key += `;${name}=${encodeURIComponent(String(value))}`
  }
  return Option.some(key)
}

/**
 * The meter a usage rollup feeds and the unit it is sent in, whose stability the commit checks.
 */
export interface UsageMeter {
  readonly meterKey: string
  readonly unit: string
}

/**
 * The usage meter an accepted event feeds: for a usage rollup with its keys and a `unit`, the
 * meter and the unit; for any other event, `undefined`.
 */
export const usageMeter = (event: Pick<ValidEvent, "event_name" | "properties">): UsageMeter | undefined => {
  if (event.event_name !== usageRollupEventName) return undefined
  const key = meterKey(event)
  const unit = event.properties?.["unit"]
  return Option.isSome(key) && typeof unit === "string" ? { meterKey: key.value, unit } : undefined
}

/**
 * "`product_key`, `metric_key` and `unit` must keep a stable meaning over time": `Some` issue when
 * the meter already has a different unit.
 */
export const checkStableMeaning = (existingUnit: Option.Option<string>, unit: string): Option.Option<FieldIssue> =>
  Option.isSome(existingUnit) && existingUnit.value !== unit
    ? Option.some({
        path: "properties.unit",
        message:
          "differs from the unit this product_key and metric_key already use; add a pricing_version property " +
          "instead of changing the unit of an existing metric"
      })
    : Option.none()

/** The most characters an `event_id` may have (`Event`: 1 to 256 visible ASCII characters). */
const maxEventIdLength = 256

/**
 * "`event_id` deterministic for safe retry": the id a rollup without one should carry,
 * `usage_rollup_recorded:<account_id>:<product_key>:<metric_key>:<usage_start>:<usage_end>`, with
 * the account id percent-encoded (UTF-8; any character but letters, digits and `-_.!~*'()`) and
 * the period in the sending form, so it is always a valid `event_id` and the same for the same
 * bucket however its times were written. `None` for other events, when a part is missing, or when
 * the id would be longer than an `event_id` may be (a very long account id).
 */
export const suggestedEventId = (
  event: Pick<ValidEvent, "event_name" | "account_id" | "properties">
): Option.Option<string> => {
  const properties = event.properties ?? {}
  const { metric_key, product_key } = properties
  const start = parseUtcTimestamp(properties.usage_start)
  const end = parseUtcTimestamp(properties.usage_end)
  if (
    event.event_name !== usageRollupEventName ||
    typeof product_key !== "string" ||
    typeof metric_key !== "string" ||
    start === undefined ||
    end === undefined ||
    !isStorableText(event.account_id)
  )
    return Option.none()
  const id = [
    usageRollupEventName,
    encodeURIComponent(event.account_id),
    product_key,
    metric_key,
    formatTimestamp(start),
    formatTimestamp(end)
  ].join(":")
  return id.length <= maxEventIdLength ? Option.some(id) : Option.none()
}

/**
 * The bucket a usage rollup sent without `event_id` is identified by (DAI "Limits" 7, "counts are
 * current values"): its account, its meter (`meterKey`: `product_key`, `metric_key` and the
 * `pricing_version`, `plan` and `tier` that name a different meter) and its period
 * (`usage_start`, `usage_end`, however their times were written). A resend of the same bucket
 * replaces the stored value and never adds to it. `None` for other events, for a rollup that
 * carries its own `event_id` (the sender's identity wins), or when a part is missing.
 */
export const rollupBucketKey = (
  event: Pick<ValidEvent, "event_name" | "event_id" | "account_id" | "properties">
): Option.Option<string> => {
  if (event.event_name !== usageRollupEventName || event.event_id !== undefined) return Option.none()
  const properties = event.properties ?? {}
  const start = parseUtcTimestamp(properties.usage_start)
  const end = parseUtcTimestamp(properties.usage_end)
  if (start === undefined || end === undefined) return Option.none()
  return Option.map(meterKey(event), (meter) =>
    JSON.stringify([event.account_id, meter, formatTimestamp(start), formatTimestamp(end)])
  )
}
