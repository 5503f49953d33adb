/**
 * `GET /metrics`: the process's metrics in the Prometheus text format (`adapters/telemetry/Prometheus.ts`).
 *
 * Authentication: with `ACCORD_METRICS_TOKEN` set, a scraper must send `Authorization: Bearer
 * <token>` (401 otherwise); without it the route is open, as Prometheus endpoints usually are. Its
 * labels never carry a workspace, account, key or received value (`core/telemetry/Metrics.ts`), so
 * an open endpoint shows aggregate counts only.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Prometheus from "../../telemetry/Prometheus.ts"
import { parseBearer } from "../Auth.ts"
import * as Problem from "../Problem.ts"
import { constantTimeEqual } from "../../../core/protocol/Hex.ts"

/** The `/metrics` route's settings: the bearer token it requires, if any. */
export interface MetricsOptions {
  /** `ACCORD_METRICS_TOKEN`: when set, the bearer token `/metrics` requires. */
  readonly metricsToken?: Option.Option<Redacted.Redacted<string>>
}

/**
 * `GET /metrics`: the scrape, behind the metrics token when one is configured.
 */
export const metrics = (options: MetricsOptions) =>
  Effect.gen(function* () {
    const token = options.metricsToken ?? Option.none()
    if (Option.isSome(token)) {
      const request = yield* HttpServerRequest.HttpServerRequest
      const given = parseBearer(request.headers["authorization"])
      if (Option.isNone(given) || !constantTimeEqual(Redacted.value(given.value), Redacted.value(token.value))) {
        return Problem.toResponse(
          Problem.unauthorized("GET /metrics needs Authorization: Bearer <ACCORD_METRICS_TOKEN>")
        )
      }
    }
    return HttpServerResponse.text(yield* Prometheus.scrape, {
      contentType: Prometheus.contentType,
      headers: { "cache-control": "no-store" }
    })
  })
