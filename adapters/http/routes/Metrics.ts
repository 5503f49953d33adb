/**
 * `GET /metrics`: the process's metrics in the Prometheus text format (`adapters/telemetry/Prometheus.ts`).
 *
 * Authentication: with `ACCORD_METRICS_TOKEN` set, a scraper must send `Authorization: Bearer
 * <token>` (401 otherwise); without it the route is open, as Prometheus endpoints usually are. Its
 * labels never carry a workspace, account, key or received value (`core/telemetry/Metrics.ts`), so
 * an open endpoint shows aggregate counts only.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Prometheus from "../../telemetry/Prometheus.ts"
import { parseBearer } from "../Auth.ts"
import * as Problem from "../Problem.ts"
import * as ServiceApi from "../api/ServiceApi.ts"

/** The `/metrics` route's settings: the bearer token it requires, if any. */
export interface MetricsOptions {
  /** `ACCORD_METRICS_TOKEN`: when set, the bearer token `/metrics` requires. */
  readonly metricsToken?: Option.Option<Redacted.Redacted<string>>
}

/**
 * The path.
 */
export const metricsPath: `/${string}` = ServiceApi.metrics.path

/** Equal strings, compared without an early exit on the first differing character. */
const sameToken = (given: string, expected: string): boolean => {
  let difference = given.length ^ expected.length
  for (let i = 0; i < expected.length; i++) difference |= (given.charCodeAt(i) || 0) ^ expected.charCodeAt(i)
  return difference === 0
}

/** `GET /metrics`: the Prometheus text of every Accord metric, behind the token when one is set. */
export const routes = (options: MetricsOptions): HttpRouter.HttpRouter<never, never> =>
  HttpRouter.empty.pipe(
    HttpRouter.get(
      metricsPath,
      Effect.gen(function* () {
        const token = options.metricsToken ?? Option.none()
        if (Option.isSome(token)) {
          const request = yield* HttpServerRequest.HttpServerRequest
          const given = parseBearer(request.headers["authorization"])
          if (Option.isNone(given) || !sameToken(Redacted.value(given.value), Redacted.value(token.value))) {
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
    )
  )
