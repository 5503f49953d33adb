/**
 * Shared fixtures for the ingestion tests: a receiving clock and well-formed events.
 */
import * as Either from "effect/Either"
import { type ValidEvent, validateEvent } from "../../../core/ingest/Event.ts"

/** The receiving clock of every test: 2026-11-22T12:00:00.000Z. */
export const now = Date.UTC(2026, 10, 22, 12, 0, 0)

export type Json = Record<string, unknown>

/** A minimal valid event, one minute before `now`. */
export const baseEvent = (): Json => ({
  event_name: "checkout_completed",
  account_id: "acct_42",
  timestamp: "2026-11-22T11:59:00.000Z",
  event_id: "checkout_completed:cs_123"
})

/** A valid usage rollup for yesterday (a closed daily bucket). */
export const rollupEvent = (): Json => ({
  event_id: "usage_rollup_recorded:acct_42:api:requests:2026-11-21T00:00:00.000Z:2026-11-22T00:00:00.000Z",
  event_name: "usage_rollup_recorded",
  account_id: "acct_42",
  timestamp: "2026-11-22T00:05:00.000Z",
  semantic_type: "usage",
  event_kind: "product_action",
  value: 1250,
  properties: {
    product_key: "api",
    metric_key: "requests",
    unit: "request",
    usage_start: "2026-11-21T00:00:00.000Z",
    usage_end: "2026-11-22T00:00:00.000Z",
    aggregation_grain: "day",
    source_system: "billing_worker"
  }
})

/** Validates `raw` at `now` and fails the test if it is invalid. */
export const valid = (raw: unknown, at: number = now): ValidEvent => {
  const result = validateEvent(raw, at)
  if (Either.isLeft(result)) throw new Error("expected a valid event: " + JSON.stringify(result.left))
  return result.right
}

/** A deep copy of `body` with `properties` merged in. */
export const withProperties = (body: Json, properties: Json): Json => ({
  ...structuredClone(body),
  properties: { ...((body.properties as Json | undefined) ?? {}), ...properties }
})
