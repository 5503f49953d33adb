/**
 * The service's own routes, bound to the declaration (`api/ServiceApi.ts`) like every other group:
 * the probes (`Health.ts`), the metrics (`Metrics.ts`), the API reference (`Reference.ts`) and the
 * admin console (`Console.ts`). Raw handlers: each answers with its own content type and headers,
 * and none fails (a refusal, the metrics token's 401 or a probe's 503, is an answer).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Api from "../api/Api.ts"
import * as Console from "./Console.ts"
import * as Health from "./Health.ts"
import * as Metrics from "./Metrics.ts"
import * as Reference from "./Reference.ts"

/**
 * The group's handlers.
 */
export const group = (options: Metrics.MetricsOptions) =>
  HttpApiBuilder.group(Api.api, "service", (handlers) =>
    handlers
      .handleRaw("healthz", () => Health.healthz)
      .handleRaw("readyz", () => Health.readyz)
      .handleRaw("metrics", () => Metrics.metrics(options))
      .handleRaw("openApiDocument", () => Reference.openApiDocument)
      .handleRaw("reference", () => Reference.reference)
      .handleRaw("referenceStyle", () => Reference.referenceStyle)
      .handleRaw("consolePage", () => Console.page)
      .handleRaw("consoleScript", () => Console.script)
      .handleRaw("consoleStyle", () => Console.style)
      .handleRaw("consoleIcon", () => Console.icon)
  )
