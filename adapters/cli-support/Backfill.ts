/**
 * `accord backfill FILE`: historical usage rollups, sent the way the spec's "Limits" ask:
 *
 * 1. "Aggregate before sending": every row is validated offline first with the ingest route's own
 *    rules; nothing is sent while one is refused.
 * 2. "Send only closed buckets": the rollup rules refuse a bucket that has not ended.
 * 3. "Backfills are split into small date ranges, oldest closed periods first": rows are grouped
 *    by UTC day of their period start (`properties.usage_start`, else `timestamp`) and the days
 *    are sent oldest first, one day finished before the next begins.
 * 4. "Start with low concurrency and raise it only while accepts stay healthy": one request in
 *    flight at first; after a wave with no 429 or 5xx the next wave has one more, up to
 *    `maxConcurrency`; a 429 or 5xx halves it and waits `Retry-After` (or the shared backoff)
 *    before the rows are retried.
 * 5. "Very large historical backfills ... use a bulk import plan, not higher concurrency": past
 *    {@link maxBackfillRows} rows the command refuses and prints a plan instead.
 *
 * Each row keeps its `event_id` (a rollup without one gets the deterministic id of
 * `UsageRollup.suggestedEventId`), so a rerun is idempotent; a state file beside the input records
 * the ids already answered, so a rerun resumes where the last one stopped.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { parseUtcTimestamp } from "../../core/ingest/Event.ts"
import { suggestedEventId, usageRollupEventName } from "../../core/ingest/UsageRollup.ts"
import { randomBackoffDelay } from "../../core/protocol/Backoff.ts"
import { type IngestAttempt, type IngestEvent, make as makeDirectApi } from "../sdk/DirectApiClient.ts"
import { FindingsReported, UsageError } from "./CliError.ts"
import type { Entry } from "./EventFile.ts"
import { formatReport, validateEntries } from "./Validation.ts"

/**
 * The most rows one backfill run sends. Past it, the run refuses and prints a bulk import plan:
 * at a sustained few hundred requests per second this is already minutes of ingest traffic.
 */
export const maxBackfillRows = 10_000

/**
 * The default ceiling of requests in flight.
 */
export const defaultMaxConcurrency = 8

/** Consecutive waves that failed to reach the service before the run stops (resumable). */
const maxUnreachableWaves = 5

/**
 * One date range: the rows of one UTC day.
 */
export interface DateRange {
  readonly day: string
  readonly events: ReadonlyArray<IngestEvent & { readonly event_id: string }>
}

/**
 * The run's outcome.
 */
export interface BackfillSummary {
  readonly rows: number
  readonly ranges: number
  readonly accepted: number
  readonly duplicate: number
  readonly skipped: number
  readonly refused: ReadonlyArray<{ readonly event_id: string; readonly code: string }>
  readonly throttled: number
  readonly maxConcurrencyReached: number
  readonly seconds: number
}

const dayOf = (event: Record<string, unknown>): string => {
  const properties = (event["properties"] ?? {}) as Record<string, unknown>
  const at = parseUtcTimestamp(properties["usage_start"]) ?? parseUtcTimestamp(event["timestamp"]) ?? 0
  return new Date(at).toISOString().slice(0, 10)
}

/**
 * The bulk import plan printed instead of a too-large run.
 */
export const bulkImportPlan = (rows: number): string =>
  [
    `refused: ${rows} rows is more than one backfill run sends (${maxBackfillRows}); raising concurrency is not the answer.`,
    "bulk import plan:",
    "  1. aggregate further: one usage_rollup_recorded per account, product, metric and closed day (or week/month",
    "     for old history); drop rows that are not revenue-relevant.",
    `  2. split the file by period into files of at most ${maxBackfillRows} rows, oldest period first`,
    "     (for example one file per month), and run accord backfill on each in turn; each run resumes on rerun.",
    "  3. run them off-peak, one at a time; a run keeps concurrency low and backs off on 429 and 5xx by itself.",
    "  4. if the history is still larger, ask the service operator for a bulk import into storage instead of",
    "     the ingest route, with the same event_ids, so a later backfill of the same periods stays idempotent."
  ].join("\n")

/**
 * Splits validated rows into day ranges, oldest first; every row gets its `event_id`.
 * `Left` lists the rows that have no `event_id` and no deterministic one.
 */
export const planRanges = (
  entries: ReadonlyArray<Entry>
): { ranges: ReadonlyArray<DateRange>; missingIds: ReadonlyArray<number> } => {
  const byDay = new Map<string, Array<IngestEvent & { event_id: string }>>()
  const missingIds: Array<number> = []
  entries.forEach((entry, index) => {
    const event = entry.value as IngestEvent
    let id = typeof event["event_id"] === "string" ? event["event_id"] : undefined
    if (id === undefined && event.event_name === usageRollupEventName) {
      id = Option.getOrUndefined(suggestedEventId(event as never))
    }
    if (id === undefined) {
      missingIds.push(index)
      return
    }
    const day = dayOf(event)
    const list = byDay.get(day) ?? []
    list.push({ ...event, event_id: id })
    byDay.set(day, list)
  })
  const ranges = [...byDay.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([day, events]) => ({ day, events }))
  return { ranges, missingIds }
}

/**
 * The ids already answered by an earlier run (state file), written atomically.
 */
export interface StateFile {
  readonly done: Set<string>
  readonly save: () => void
}

const openState = (path: string): StateFile => {
  const done = new Set<string>()
  if (existsSync(path)) {
    try {
      const parsed = JSON.parse(readFileSync(path, "utf8")) as { done?: Array<unknown> }
      for (const id of parsed.done ?? []) if (typeof id === "string") done.add(id)
    } catch {
      // an unreadable state only costs duplicates: the event_ids keep the rerun idempotent
    }
  }
  return {
    done,
    save: () => {
      writeFileSync(`${path}.tmp`, JSON.stringify({ done: [...done] }))
      renameSync(`${path}.tmp`, path)
    }
  }
}

/**
 * How progress is shown: a bar with rate and ETA on a terminal, plain lines otherwise.
 */
export interface Progress {
  readonly update: (done: number, total: number, rate: number, concurrency: number) => void
  readonly rangeDone: (range: DateRange, done: number, total: number, rate: number, concurrency: number) => void
  readonly finish: () => void
}

const eta = (remaining: number, rate: number) => (rate > 0 ? `${Math.ceil(remaining / rate)}s` : "?")

export const progressFor = (stream: NodeJS.WriteStream, plain: (line: string) => void): Progress => {
  if (stream.isTTY !== true) {
    return {
      update: () => {},
      rangeDone: (range, done, total, rate, concurrency) =>
        plain(
          `range ${range.day}: ${range.events.length} rows; ${done}/${total} done, ${rate.toFixed(1)}/s, concurrency ${concurrency}, eta ${eta(total - done, rate)}`
        ),
      finish: () => {}
    }
  }
  const width = 30
  return {
    update: (done, total, rate, concurrency) => {
      const filled = total === 0 ? width : Math.round((done / total) * width)
      stream.write(
        `\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total} ${rate.toFixed(1)}/s eta ${eta(total - done, rate)} c=${concurrency}  `
      )
    },
    rangeDone: () => {},
    finish: () => stream.write("\n")
  }
}

/**
 * Runs a backfill of already-read entries.
 */
export const run = (options: {
  readonly entries: ReadonlyArray<Entry>
  readonly serviceUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly statePath: string
  readonly maxConcurrency: number
  readonly progress: Progress
  readonly print: (text: string) => Effect.Effect<void>
}): Effect.Effect<BackfillSummary, UsageError | FindingsReported> =>
  Effect.gen(function* () {
    const { entries } = options
    if (entries.length > maxBackfillRows) {
      yield* options.print(bulkImportPlan(entries.length))
      return yield* new FindingsReported()
    }
    const report = validateEntries(entries, yield* Clock.currentTimeMillis)
    if (!report.ok) {
      yield* options.print(`${formatReport(report)}\nnothing sent: fix the refused rows first`)
      return yield* new FindingsReported()
    }
    const { missingIds, ranges } = planRanges(entries)
    if (missingIds.length > 0) {
      yield* options.print(
        `nothing sent: ${missingIds.length} row(s) have no event_id (rows ${missingIds
          .slice(0, 10)
          .map((i) => i + 1)
          .join(", ")}); ` + "a backfill needs stable event_ids so that a rerun is idempotent"
      )
      return yield* new FindingsReported()
    }
    const state = openState(options.statePath)
    const client = makeDirectApi({ baseUrl: options.serviceUrl, apiKey: options.apiKey, timeoutMillis: 15_000 })
    const started = yield* Clock.currentTimeMillis
    const total = entries.length
    let finished = 0
    let accepted = 0
    let duplicate = 0
    let skipped = 0
    let throttled = 0
    let concurrency = 1
    let highest = 1
    let retryRound = 0
    let unreachable = 0
    const refused: Array<{ event_id: string; code: string }> = []
    const rate = (now: number) => finished / Math.max(0.001, (now - started) / 1000)

    for (const range of ranges) {
      const pending = range.events.filter((event) => {
        if (!state.done.has(event.event_id)) return true
        skipped++
        finished++
        return false
      })
      while (pending.length > 0) {
        const wave = pending.splice(0, concurrency)
        const outcomes: ReadonlyArray<IngestAttempt> = yield* Effect.forEach(wave, (event) => client.attempt(event), {
          concurrency: "unbounded"
        })
        const retry: Array<(typeof wave)[number]> = []
        let waitMillis = 0
        let reached = false
        outcomes.forEach((outcome, i) => {
          const event = wave[i]!
          if (outcome._tag === "Retry") {
            retry.push(event)
            if (outcome.reason.startsWith("http_")) {
              reached = true
              throttled++
            }
            waitMillis = Math.max(waitMillis, outcome.afterMillis ?? 0)
            return
          }
          reached = true
          finished++
          state.done.add(event.event_id)
          if (outcome._tag === "Done") {
            if (outcome.value.status === "accepted") accepted++
            else duplicate++
          } else {
            refused.push({ event_id: event.event_id, code: outcome.error.code })
          }
        })
        const now = yield* Clock.currentTimeMillis
        options.progress.update(finished, total, rate(now), concurrency)
        if (retry.length === 0) {
          retryRound = 0
          unreachable = 0
          concurrency = Math.min(options.maxConcurrency, concurrency + 1)
          highest = Math.max(highest, concurrency)
          continue
        }
        if (!reached && ++unreachable >= maxUnreachableWaves) {
          state.save()
          return yield* new UsageError({
            message: `cannot reach the service at ${options.serviceUrl}; ${finished}/${total} rows done, rerun to resume`
          })
        }
        // unhealthy: halve the concurrency, wait, and retry these rows first
        concurrency = Math.max(1, Math.floor(concurrency / 2))
        pending.unshift(...retry)
        const delay = Math.max(
          waitMillis,
          yield* randomBackoffDelay({ baseMillis: 250, capMillis: 30_000 }, retryRound++)
        )
        yield* Effect.sleep(Duration.millis(delay))
      }
      state.save()
      options.progress.rangeDone(range, finished, total, rate(yield* Clock.currentTimeMillis), concurrency)
    }
    state.save()
    options.progress.finish()
    const seconds = ((yield* Clock.currentTimeMillis) - started) / 1000
    return {
      rows: total,
      ranges: ranges.length,
      accepted,
      duplicate,
      skipped,
      refused,
      throttled,
      maxConcurrencyReached: highest,
      seconds
    }
  })
