import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { validateEvent } from "../../../core/ingest/Event.ts"
import {
  checkStableMeaning,
  meterKey,
  rollupBucketKey,
  suggestedEventId,
  usageMeter,
  validateRollup
} from "../../../core/ingest/UsageRollup.ts"
import { baseEvent, type Json, now, rollupEvent, valid, withProperties } from "./support.ts"

const rollupIssues = (raw: Json, at = now) => validateRollup(valid(raw, at), at)

const without = (raw: Json, field: string): Json => {
  const copy = structuredClone(raw)
  delete copy[field]
  return copy
}
const withoutProperty = (raw: Json, name: string): Json => {
  const copy = structuredClone(raw)
  delete (copy.properties as Json)[name]
  return copy
}

describe("UsageRollup", () => {
  it("accepts the spec's rollup", () => {
    assert.deepStrictEqual(rollupIssues(rollupEvent()), [])
  })

  it("ignores other events", () => {
    assert.deepStrictEqual(rollupIssues(baseEvent()), [])
  })

  // each mutation breaks exactly one rule; [label, event, path]
  const broken: ReadonlyArray<readonly [string, Json, string]> = [
    ["semantic_type missing", without(rollupEvent(), "semantic_type"), "semantic_type"],
    ["semantic_type not usage", { ...rollupEvent(), semantic_type: "activation" }, "semantic_type"],
    ["event_kind missing", without(rollupEvent(), "event_kind"), "event_kind"],
    ["event_kind not product_action", { ...rollupEvent(), event_kind: "billing_event" }, "event_kind"],
    ["value missing", without(rollupEvent(), "value"), "value"],
    ["value negative", { ...rollupEvent(), value: -1 }, "value"],
    ["product_key missing", withoutProperty(rollupEvent(), "product_key"), "properties.product_key"],
    ["product_key not lower_snake", withProperties(rollupEvent(), { product_key: "API" }), "properties.product_key"],
    ["metric_key missing", withoutProperty(rollupEvent(), "metric_key"), "properties.metric_key"],
    ["metric_key too long", withProperties(rollupEvent(), { metric_key: "m".repeat(65) }), "properties.metric_key"],
    ["unit missing", withoutProperty(rollupEvent(), "unit"), "properties.unit"],
    ["unit not a code", withProperties(rollupEvent(), { unit: "GB hours" }), "properties.unit"],
    ["usage_start missing", withoutProperty(rollupEvent(), "usage_start"), "properties.usage_start"],
    [
      "usage_start not UTC",
      withProperties(rollupEvent(), { usage_start: "2026-11-21T01:00:00+01:00" }),
      "properties.usage_start"
    ],
    ["usage_end missing", withoutProperty(rollupEvent(), "usage_end"), "properties.usage_end"],
    ["usage_end not a timestamp", withProperties(rollupEvent(), { usage_end: "2026-11-22" }), "properties.usage_end"],
    [
      "usage_end before usage_start",
      withProperties(rollupEvent(), { usage_start: "2026-11-22T00:00:00Z", usage_end: "2026-11-21T00:00:00Z" }),
      "properties.usage_end"
    ],
    [
      "usage_end after now (an open bucket)",
      withProperties(rollupEvent(), { usage_start: "2026-11-22T00:00:00Z", usage_end: "2026-11-23T00:00:00Z" }),
      "properties.usage_end"
    ],
    ["aggregation_grain missing", withoutProperty(rollupEvent(), "aggregation_grain"), "properties.aggregation_grain"],
    [
      "aggregation_grain unknown",
      withProperties(rollupEvent(), { aggregation_grain: "daily" }),
      "properties.aggregation_grain"
    ],
    [
      "aggregation_grain not the period",
      withProperties(rollupEvent(), { aggregation_grain: "hour" }),
      "properties.aggregation_grain"
    ],
    ["source_system missing", withoutProperty(rollupEvent(), "source_system"), "properties.source_system"],
    [
      "source_system too long",
      withProperties(rollupEvent(), { source_system: "s".repeat(65) }),
      "properties.source_system"
    ],
    [
      "pricing_version not a code",
      withProperties(rollupEvent(), { pricing_version: "v 2" }),
      "properties.pricing_version"
    ],
    ["tier not a code", withProperties(rollupEvent(), { tier: 3 }), "properties.tier"]
  ]

  for (const [label, raw, path] of broken) {
    it(`rejects ${label}, and only that`, () => {
      const issues = rollupIssues(raw)
      assert.deepStrictEqual(
        issues.map((issue) => issue.path),
        [path],
        JSON.stringify(issues)
      )
    })
  }

  it("accepts a bucket ending exactly now, and refuses one ending a millisecond later", () => {
    const hourly = (end: number) =>
      withProperties(rollupEvent(), {
        usage_start: new Date(end - 3_600_000).toISOString(),
        usage_end: new Date(end).toISOString(),
        aggregation_grain: "hour"
      })
    assert.deepStrictEqual(rollupIssues(hourly(now)), [])
    assert.deepStrictEqual(
      rollupIssues(hourly(now + 1)).map((issue) => issue.path),
      ["properties.usage_end"]
    )
  })

  it("accepts local days of 23 and 25 hours (daylight saving), weeks and months", () => {
    const bucket = (start: string, end: string, grain: string) =>
      rollupIssues(withProperties(rollupEvent(), { usage_start: start, usage_end: end, aggregation_grain: grain }))
    assert.deepStrictEqual(bucket("2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", "day"), [])
    assert.deepStrictEqual(bucket("2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", "day"), [])
    assert.deepStrictEqual(bucket("2026-11-09T00:00:00Z", "2026-11-16T00:00:00Z", "week"), [])
    assert.deepStrictEqual(bucket("2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "month"), [])
    assert.deepStrictEqual(bucket("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "month"), [])
    assert.lengthOf(bucket("2026-10-01T00:00:00Z", "2026-11-15T00:00:00Z", "month"), 1)
  })

  it("accepts a zero and a fractional value", () => {
    assert.deepStrictEqual(rollupIssues({ ...rollupEvent(), value: 0 }), [])
    assert.deepStrictEqual(rollupIssues({ ...rollupEvent(), value: 12.75 }), [])
  })

  describe("meterKey", () => {
    it("is product_key/metric_key", () => {
      assert.deepStrictEqual(meterKey(valid(rollupEvent())), Option.some("api/requests"))
    })

    it("adds pricing_version, plan and tier when present", () => {
      const raw = withProperties(rollupEvent(), { tier: "gold", plan: "pro", pricing_version: "2026-01" })
      assert.deepStrictEqual(
        meterKey(valid(raw)),
        Option.some("api/requests;pricing_version=2026-01;plan=pro;tier=gold")
      )
    })

    it("is None without the keys", () => {
      assert.isTrue(Option.isNone(meterKey(valid(baseEvent()))))
    })
  })

  describe("checkStableMeaning", () => {
    it("passes a new meter or the same unit", () => {
      assert.isTrue(Option.isNone(checkStableMeaning(Option.none(), "request")))
      assert.isTrue(Option.isNone(checkStableMeaning(Option.some("request"), "request")))
    })

    it("refuses a changed unit with the spec's advice", () => {
      const issue = Option.getOrThrow(checkStableMeaning(Option.some("request"), "token"))
      assert.strictEqual(issue.path, "properties.unit")
      assert.include(issue.message, "add a pricing_version property instead of changing the unit of an existing metric")
    })
  })

  describe("suggestedEventId", () => {
    it("is deterministic from account, product, metric and period", () => {
      assert.deepStrictEqual(
        suggestedEventId(valid(rollupEvent())),
        Option.some("usage_rollup_recorded:acct_42:api:requests:2026-11-21T00:00:00.000Z:2026-11-22T00:00:00.000Z")
      )
      assert.deepStrictEqual(suggestedEventId(valid(rollupEvent())), suggestedEventId(valid(rollupEvent())))
    })

    it("is always a valid event_id: the account id percent-encoded, the period in the sending form", () => {
      const at = (account_id: string, start = "2026-11-21T00:00:00Z", end = "2026-11-22T00:00:00+00:00") =>
        suggestedEventId(
          valid(withProperties({ ...rollupEvent(), account_id }, { usage_start: start, usage_end: end }))
        )
      assert.deepStrictEqual(
        at("Acme Corp: EU/1 ü"),
        Option.some(
          "usage_rollup_recorded:Acme%20Corp%3A%20EU%2F1%20%C3%BC:api:requests:2026-11-21T00:00:00.000Z:2026-11-22T00:00:00.000Z"
        )
      )
      assert.deepStrictEqual(at("acct_42"), suggestedEventId(valid(rollupEvent())))
      for (const account of ["a b", "emoji 🚀", "x".repeat(40), "%41", "ada's (team)"]) {
        const id = Option.getOrThrow(at(account))
        assert.isTrue(Either.isRight(validateEvent({ ...baseEvent(), event_id: id }, now)), id)
      }
      assert.notDeepEqual(at("%41"), at("A"))
    })

    it("is None when the id would be longer than 256 characters, or the account id is not well-formed UTF-16", () => {
      assert.isTrue(Option.isSome(suggestedEventId(valid({ ...rollupEvent(), account_id: "a".repeat(150) }))))
      assert.isTrue(Option.isNone(suggestedEventId(valid({ ...rollupEvent(), account_id: "a".repeat(200) }))))
      // ingest refuses such an account id (the identifier rule); the function stays total anyway
      assert.isTrue(Option.isNone(suggestedEventId({ ...valid(rollupEvent()), account_id: "acct\ud800" })))
    })

    it("is None for other events or a rollup missing a part", () => {
      assert.isTrue(Option.isNone(suggestedEventId(valid(baseEvent()))))
      assert.isTrue(Option.isNone(suggestedEventId(valid(withoutProperty(rollupEvent(), "usage_end")))))
    })
  })
})

describe("usageMeter", () => {
  it("a rollup feeds its meter in its unit", () => {
    assert.deepStrictEqual(usageMeter(valid(rollupEvent())), { meterKey: "api/requests", unit: "request" })
    assert.deepStrictEqual(usageMeter(valid(withProperties(rollupEvent(), { plan: "pro" }))), {
      meterKey: "api/requests;plan=pro",
      unit: "request"
    })
  })

  it("any other event feeds no meter", () => {
    assert.isUndefined(usageMeter(valid(baseEvent())))
    assert.isUndefined(
      usageMeter({
        event_name: "checkout_completed",
        properties: { product_key: "api", metric_key: "requests", unit: "request" }
      })
    )
  })
})

describe("rollupBucketKey", () => {
  const key = (event: Json) => rollupBucketKey(valid(event))
  const { event_id: _, ...withoutId } = rollupEvent()

  it("a rollup without event_id has a bucket key; with an event_id or another event, none", () => {
    assert.isTrue(Option.isSome(key(withoutId)))
    assert.isTrue(Option.isNone(key({ ...withoutId, event_id: "usage:1" })))
    assert.isTrue(Option.isNone(key(baseEvent())))
  })

  it("the same bucket has the same key whatever the value or how its times were written", () => {
    const props = (withoutId.properties ?? {}) as Record<string, unknown>
    assert.deepStrictEqual(key({ ...withoutId, value: 99 }), key(withoutId))
    const start = new Date(String(props.usage_start))
    const offset = new Date(start.getTime()).toISOString().replace("Z", "+00:00")
    assert.deepStrictEqual(key(withProperties(withoutId, { usage_start: offset })), key(withoutId))
  })

  it("another account, meter, period or pricing_version is another bucket", () => {
    const base = key(withoutId)
    for (const other of [
      { ...withoutId, account_id: "acct_other" },
      withProperties(withoutId, { metric_key: "other_metric" }),
      withProperties(withoutId, { product_key: "other_product" }),
      withProperties(withoutId, { pricing_version: "v2" }),
      withProperties(withoutId, {
        usage_end: new Date(
          Date.parse(String(((withoutId.properties ?? {}) as Record<string, unknown>).usage_end)) - 1000
        ).toISOString()
      })
    ]) {
      assert.notDeepEqual(key(other), base)
    }
  })
})
