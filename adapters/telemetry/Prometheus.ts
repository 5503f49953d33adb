/**
 * Effect's metric registry in the Prometheus text exposition format (version 0.0.4), for
 * `GET /metrics`. Counters and gauges as themselves, histograms as `_bucket`/`_sum`/`_count`,
 * frequencies as a counter per word (label `key`), summaries as quantiles.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as MetricPair from "effect/MetricPair"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"

/**
 * The content type of the text format.
 */
export const contentType: string = "text/plain; version=0.0.4; charset=utf-8"

const metricName = (name: string): string => {
  const cleaned = name.replace(/[^a-zA-Z0-9_:]/g, "_")
  return /^[a-zA-Z_:]/.test(cleaned) ? cleaned : `_${cleaned}`
}

const labelName = (name: string): string => {
  const cleaned = name.replace(/[^a-zA-Z0-9_]/g, "_")
  return /^[a-zA-Z_]/.test(cleaned) ? cleaned : `_${cleaned}`
}

const escapeLabel = (value: string): string => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')

const escapeHelp = (value: string): string => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

const labels = (pairs: ReadonlyArray<readonly [string, string]>): string =>
  pairs.length === 0 ? "" : `{${pairs.map(([key, value]) => `${labelName(key)}="${escapeLabel(value)}"`).join(",")}}`

const number = (value: number | bigint): string =>
  typeof value === "bigint"
    ? value.toString()
    : Number.isNaN(value)
      ? "NaN"
      : value === Infinity
        ? "+Inf"
        : value === -Infinity
          ? "-Inf"
          : String(value)

interface Family {
  readonly type: string
  readonly help: string | undefined
  readonly lines: Array<string>
}

/**
 * The text for a snapshot of metric pairs, one family per metric name, sorted by name.
 */
export const format = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, Family>()
  const family = (name: string, type: string, help: Option.Option<string>): Family => {
    const known = families.get(name)
    if (known !== undefined) return known
    const created: Family = { type, help: Option.getOrUndefined(help), lines: [] }
    families.set(name, created)
    return created
  }
  for (const { metricKey, metricState } of pairs) {
    const name = metricName(metricKey.name)
    const tags = metricKey.tags.map((tag) => [tag.key, tag.value] as const)
    const state: unknown = metricState
    if (MetricState.isCounterState(state)) {
      family(name, "counter", metricKey.description).lines.push(`${name}${labels(tags)} ${number(state.count)}`)
    } else if (MetricState.isGaugeState(state)) {
      family(name, "gauge", metricKey.description).lines.push(`${name}${labels(tags)} ${number(state.value)}`)
    } else if (MetricState.isFrequencyState(state)) {
      const lines = family(name, "counter", metricKey.description).lines
      for (const [word, count] of state.occurrences) lines.push(`${name}${labels([...tags, ["key", word]])} ${count}`)
    } else if (MetricState.isHistogramState(state)) {
      const lines = family(name, "histogram", metricKey.description).lines
      for (const [boundary, count] of state.buckets) {
        lines.push(`${name}_bucket${labels([...tags, ["le", number(boundary)]])} ${count}`)
      }
      if (!state.buckets.some(([boundary]) => boundary === Infinity)) {
        lines.push(`${name}_bucket${labels([...tags, ["le", "+Inf"]])} ${state.count}`)
      }
      lines.push(`${name}_sum${labels(tags)} ${number(state.sum)}`, `${name}_count${labels(tags)} ${state.count}`)
    } else if (MetricState.isSummaryState(state)) {
      const lines = family(name, "summary", metricKey.description).lines
      for (const [quantile, value] of state.quantiles) {
        lines.push(
          `${name}${labels([...tags, ["quantile", String(quantile)]])} ${number(Option.getOrElse(value, () => NaN))}`
        )
      }
      lines.push(`${name}_sum${labels(tags)} ${number(state.sum)}`, `${name}_count${labels(tags)} ${state.count}`)
    }
  }
  const out: Array<string> = []
  for (const name of [...families.keys()].sort()) {
    const { help, lines, type } = families.get(name)!
    if (help !== undefined) out.push(`# HELP ${name} ${escapeHelp(help)}`)
    out.push(`# TYPE ${name} ${type}`, ...lines.sort())
  }
  return out.length === 0 ? "" : out.join("\n") + "\n"
}

/**
 * Everything recorded in this process so far, as Prometheus text.
 */
export const scrape: Effect.Effect<string> = Effect.map(Metric.snapshot, format)
