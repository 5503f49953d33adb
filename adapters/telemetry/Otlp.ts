/**
 * OTLP/HTTP export of traces and metrics (`@effect/opentelemetry`'s own exporters, no OpenTelemetry
 * SDK) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: spans to `<endpoint>/v1/traces`, every Effect
 * metric (`core/telemetry/Metrics.ts` and the rest of the registry) to `<endpoint>/v1/metrics`,
 * JSON-encoded, over `fetch` (Node, Bun and Deno alike). Logs stay on stdout.
 *
 * `@effect/opentelemetry` is an optional peer dependency: it is loaded only when the exporters are
 * built, so a server without an OTLP endpoint neither loads it nor needs it installed.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

export interface OtlpOptions {
  /** The collector's OTLP/HTTP base URL, without a trailing slash (`http://localhost:4318`). */
  readonly endpoint: string
  readonly serviceName: string
  /** How often spans and metrics are sent; the last batch is sent when the layer closes. */
  readonly exportInterval?: Duration.DurationInput
}

/**
 * The exporters; closing the layer sends what is buffered (bounded by a short timeout).
 */
export const layer = (options: OtlpOptions): Layer.Layer<never> => {
  const resource = { serviceName: options.serviceName }
  const interval = options.exportInterval ?? "10 seconds"
  return Layer.unwrapEffect(
    Effect.promise(async () => {
      const [OtlpMetrics, OtlpSerialization, OtlpTracer] = await Promise.all([
        import("@effect/opentelemetry/OtlpMetrics"),
        import("@effect/opentelemetry/OtlpSerialization"),
        import("@effect/opentelemetry/OtlpTracer")
      ])
      return Layer.mergeAll(
        OtlpTracer.layer({
          url: `${options.endpoint}/v1/traces`,
          resource,
          exportInterval: interval,
          shutdownTimeout: "3 seconds"
        }),
        OtlpMetrics.layer({
          url: `${options.endpoint}/v1/metrics`,
          resource,
          exportInterval: interval,
          shutdownTimeout: "3 seconds"
        })
      ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))
    })
  )
}

/**
 * The exporters when configured (`AccordConfig.otlp`), else nothing.
 */
export const layerFromConfig = (
  otlp: Option.Option<{ readonly endpoint: string; readonly serviceName: string }>,
  exportInterval?: Duration.DurationInput
): Layer.Layer<never> =>
  Option.match(otlp, {
    onNone: () => Layer.empty,
    onSome: (settings) => layer({ ...settings, ...(exportInterval === undefined ? {} : { exportInterval }) })
  })
