/**
 * The Prometheus text format of Effect metrics, and the label rule that keeps data out of labels.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as Prometheus from "../../../adapters/telemetry/Prometheus.ts"
import * as Metrics from "../../../core/telemetry/Metrics.ts"

/** The lines of `name`'s family in a scrape (HELP, TYPE, samples). */
const familyLines = (text: string, name: string) => text.split("\n").filter((line) => line.includes(name))

describe("Prometheus.format", () => {
  it.effect("counters with labels, gauges, HELP and TYPE, one family per name", () =>
    Effect.gen(function* () {
      const counter = Metric.counter("test_prom_requests_total", { description: "requests\nseen" })
      yield* Metric.incrementBy(Metric.tagged(counter, "code", "bad_key"), 2)
      yield* Metric.increment(Metric.tagged(counter, "code", "rate_limited"))
      yield* Metric.set(Metric.gauge("test_prom_in_flight"), 3)
      const text = yield* Prometheus.scrape
      assert.deepStrictEqual(familyLines(text, "test_prom_requests_total"), [
        "# HELP test_prom_requests_total requests\\nseen",
        "# TYPE test_prom_requests_total counter",
        'test_prom_requests_total{code="bad_key"} 2',
        'test_prom_requests_total{code="rate_limited"} 1'
      ])
      assert.deepStrictEqual(familyLines(text, "test_prom_in_flight"), [
        "# TYPE test_prom_in_flight gauge",
        "test_prom_in_flight 3"
      ])
      assert.isTrue(text.endsWith("\n"))
    })
  )

  it.effect("escapes label values and cleans names", () =>
    Effect.gen(function* () {
      yield* Metric.increment(Metric.tagged(Metric.counter("test-prom.odd name"), "quote", 'a"b\\c\nd'))
      const text = yield* Prometheus.scrape
      assert.include(text, 'test_prom_odd_name{quote="a\\"b\\\\c\\nd"} 1')
    })
  )

  it.effect("histograms as buckets, sum and count", () =>
    Effect.gen(function* () {
      const histogram = Metric.histogram("test_prom_seconds", MetricBoundaries.fromIterable([1, 5]))
      yield* Metric.update(histogram, 0.5)
      yield* Metric.update(histogram, 3)
      const lines = familyLines(yield* Prometheus.scrape, "test_prom_seconds")
      assert.includeMembers(lines, [
        "# TYPE test_prom_seconds histogram",
        'test_prom_seconds_bucket{le="1"} 1',
        'test_prom_seconds_bucket{le="5"} 2',
        'test_prom_seconds_bucket{le="+Inf"} 2',
        "test_prom_seconds_sum 3.5",
        "test_prom_seconds_count 2"
      ])
    })
  )
})

describe("Metrics.label", () => {
  it("keeps codes and state names", () => {
    for (const value of ["invalid_api_key", "rate_limited", "completed", "total"])
      assert.strictEqual(Metrics.label(value), value)
  })

  it("turns anything that looks like data into other", () => {
    for (const value of [
      "acct_42",
      "ada@example.com",
      "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11",
      "ak_live_Secret",
      "api.example.com",
      "",
      "x".repeat(65)
    ])
      assert.strictEqual(Metrics.label(value), "other", value)
  })

  it("reasonOf: a verification error tag in snake_case", () => {
    assert.strictEqual(Metrics.reasonOf("InvalidSignature"), "invalid_signature")
    assert.strictEqual(Metrics.reasonOf("StaleTimestamp"), "stale_timestamp")
  })
})
