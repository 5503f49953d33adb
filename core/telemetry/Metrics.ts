/**
 * Accord's metrics, as plain Effect `Metric`s so core and adapters record them alike; the runtime
 * exports whatever is recorded (`GET /metrics` in the Prometheus text format, and OTLP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set, `adapters/telemetry/`).
 *
 * Labels carry only values from closed sets Accord itself defines (problem codes, state names,
 * outbox kinds, verification reasons), passed through `label`: never a workspace, account, key,
 * endpoint, secret or any received value.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"

/**
 * A label value as recorded: lowercase snake_case words of at most 64 characters, else `other`.
 * Codes and state names pass unchanged; anything that looks like data (digits, dots, `@`, dashes,
 * capitals: identifiers, emails, keys, hosts) does not.
 */
export const label = (value: string): string => (/^[a-z][a-z_]{0,63}$/.test(value) ? value : "other")

/**
 * Ingest requests accepted (`POST /api/events/ingest` answered 2xx).
 */
export const ingestAccepted: Metric.Metric.Counter<number> = Metric.counter("accord_ingest_accepted_total", {
  description: "Ingest requests accepted",
  incremental: true
})

/**
 * Ingest requests refused, tagged `code` (the problem's code).
 */
export const ingestRefused: Metric.Metric.Counter<number> = Metric.counter("accord_ingest_refused_total", {
  description: "Ingest requests refused, by problem code",
  incremental: true
})

/**
 * Outbound connector calls (executions, handshakes, reconciliation reads) waiting for their answer.
 */
export const dispatchInFlight: Metric.Metric.Gauge<number> = Metric.gauge("accord_dispatch_in_flight", {
  description: "Outbound connector calls in flight"
})

/**
 * Deliveries (executions, reconciliation reads) rescheduled for another attempt.
 */
export const dispatchRetries: Metric.Metric.Counter<number> = Metric.counter("accord_dispatch_retries_total", {
  description: "Outbox deliveries rescheduled for another attempt",
  incremental: true
})

/**
 * Deliveries whose outcome is unknown (no valid answer: the action may or may not have run).
 */
export const dispatchUnknownOutcomes: Metric.Metric.Counter<number> = Metric.counter(
  "accord_dispatch_unknown_outcomes_total",
  { description: "Deliveries with an unknown outcome", incremental: true }
)

/**
 * Completion callbacks applied to an action, tagged `state` (the action's state afterwards).
 */
export const completions: Metric.Metric.Counter<number> = Metric.counter("accord_completions_total", {
  description: "Completion callbacks applied, by resulting action state",
  incremental: true
})

/**
 * Actions whose evidence window passed without the evidence their `succeeded` completion pointed
 * to (now `evidence_overdue`), tagged `type` (the catalog evidence type that was awaited).
 */
export const evidenceOverdue: Metric.Metric.Counter<number> = Metric.counter("accord_evidence_overdue_total", {
  description: "Actions whose evidence window passed without the evidence, by awaited evidence type",
  incremental: true
})

/**
 * Signed messages refused by verification, tagged `reason` (the verification error, snake_case).
 */
export const verificationFailures: Metric.Metric.Counter<number> = Metric.counter(
  "accord_verification_failures_total",
  { description: "Signed messages refused by verification, by reason", incremental: true }
)

/**
 * Customer responses the service refused in its own verification, tagged `message`
 * (`acknowledgement`, `observation`, `handshake`) and `reason` (the verification error,
 * snake_case: `invalid_signature`, `stale_timestamp`, `future_timestamp`, `replayed_nonce`, …).
 * Counted where the service verifies the customer endpoint's signed answer to its execution
 * request, reconciliation read or handshake; no value of the response is a label.
 */
export const customerResponseVerificationFailures: Metric.Metric.Counter<number> = Metric.counter(
  "accord_customer_response_verification_failures_total",
  {
    description: "Customer endpoint responses refused by the service's verification, by message and reason",
    incremental: true
  }
)

/**
 * Adds one to `customerResponseVerificationFailures` for a refused customer response; `tag` is the
 * verification error's tag (`InvalidSignature`, …).
 */
export const customerResponseRefused = (
  message: "acknowledgement" | "observation" | "handshake",
  tag: string
): Effect.Effect<void> =>
  Metric.increment(
    Metric.tagged(Metric.tagged(customerResponseVerificationFailures, "message", message), "reason", reasonOf(tag))
  )

/**
 * Database connections, tagged `state`: `total`, `idle`, `waiting` (clients queued for one).
 */
export const databasePool: Metric.Metric.Gauge<number> = Metric.gauge("accord_db_pool_connections", {
  description: "Database pool connections, by state"
})

/**
 * Storage faults met, tagged `cause`: one of the fixed `StorageFault` kinds (`connection`,
 * `timeout`, `conflict`, `overloaded`, `refused`, `other`), all listed from the start.
 */
export const storageFaults: Metric.Metric.Counter<number> = Metric.counter("accord_storage_faults_total", {
  description: "Storage faults met, by cause",
  incremental: true
})

/**
 * Adds one to `counter` under `key=label(value)`.
 */
export const count = (counter: Metric.Metric.Counter<number>, key: string, value: string): Effect.Effect<void> =>
  Metric.increment(Metric.tagged(counter, key, label(value)))

/**
 * The same, at once, outside an effect (a hot path that is not a fiber).
 */
export const unsafeCount = (counter: Metric.Metric.Counter<number>, key: string, value: string): void =>
  counter.unsafeUpdate(1, [MetricLabel.make(key, label(value))])

/**
 * Snake_case of a tag such as `InvalidSignature` (`invalid_signature`), for `verificationFailures`.
 */
export const reasonOf = (tag: string): string => label(tag.replace(/(?<=[a-z])(?=[A-Z])/g, "_").toLowerCase())

/**
 * Runs `effect` counted in `gauge` while it runs (one up before, one down after, whatever the exit).
 */
export const inFlight =
  (gauge: Metric.Metric.Gauge<number>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Metric.increment(gauge),
      () => effect,
      () => Metric.incrementBy(gauge, -1)
    )

/**
 * Records zero on every untagged metric, so a scrape lists their families before the first event
 * (tagged families appear with their first value).
 */
export const preregister: Effect.Effect<void> = Effect.all(
  [
    Metric.incrementBy(ingestAccepted, 0),
    Metric.incrementBy(dispatchInFlight, 0),
    Metric.incrementBy(dispatchRetries, 0),
    Metric.incrementBy(dispatchUnknownOutcomes, 0)
  ],
  { discard: true }
)
