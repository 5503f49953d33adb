/**
 * The service's own routes: probes, metrics, this reference and the admin console. Served by
 * `routes/Service.ts` (handlers in `routes/Health.ts`, `Metrics.ts`, `Reference.ts`, `Console.ts`).
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { problem } from "./Common.ts"

const text = (contentType: string, description: string) =>
  HttpApiSchema.Text({ contentType }).annotations({ description })

export const healthz = HttpApiEndpoint.get("healthz", "/healthz")
  .addSuccess(Schema.Struct({ status: Schema.Literal("ok") }).annotations({ examples: [{ status: "ok" as const }] }))
  .annotate(OpenApi.Summary, "Liveness: the process is up")

export const readyz = HttpApiEndpoint.get("readyz", "/readyz")
  .addSuccess(
    Schema.Struct({ status: Schema.Literal("ready") }).annotations({ examples: [{ status: "ready" as const }] })
  )
  .addError(
    problem(503, ["not_ready", "shutting_down"], "storage is not reachable or not migrated", {
      description: "Not ready, or draining"
    })
  )
  .annotate(OpenApi.Summary, "Readiness: storage reachable and migrated, and the server not shutting down")

export const metrics = HttpApiEndpoint.get("metrics", "/metrics")
  .addSuccess(text("text/plain", "Prometheus text exposition format"))
  .addError(
    problem(401, ["unauthorized"], "GET /metrics needs Authorization: Bearer <ACCORD_METRICS_TOKEN>", {
      description: "When ACCORD_METRICS_TOKEN is set: a missing or different bearer token"
    })
  )
  .annotate(OpenApi.Summary, "Metrics in the Prometheus text format")

export const openApiDocument = HttpApiEndpoint.get("openApiDocument", "/openapi.json")
  .addSuccess(
    Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
      description: "This OpenAPI 3.1 document",
      examples: [{ openapi: "3.1.0", info: { title: "Accord API", version: "0.1.0" }, paths: {} }]
    })
  )
  .annotate(OpenApi.Summary, "This document")

export const reference = HttpApiEndpoint.get("reference", "/reference")
  .addSuccess(text("text/html", "This document as an HTML page (no scripts)"))
  .annotate(OpenApi.Summary, "The API reference page")

export const referenceStyle = HttpApiEndpoint.get("referenceStyle", "/reference/reference.css")
  .addSuccess(text("text/css", "The reference page's style sheet"))
  .annotate(OpenApi.Summary, "The API reference page's style sheet")

export const consolePage = HttpApiEndpoint.get("consolePage", "/console")
  .addSuccess(text("text/html", "The console page"))
  .annotate(OpenApi.Summary, "The admin console (sign in with an admin key, kept in the session only)")

export const consoleScript = HttpApiEndpoint.get("consoleScript", "/console/console.js")
  .addSuccess(text("text/javascript", "The console's script"))
  .annotate(OpenApi.Summary, "The console's script")

export const consoleStyle = HttpApiEndpoint.get("consoleStyle", "/console/console.css")
  .addSuccess(text("text/css", "The console's style sheet"))
  .annotate(OpenApi.Summary, "The console's style sheet")

export const consoleIcon = HttpApiEndpoint.get("consoleIcon", "/console/icon.svg")
  .addSuccess(text("image/svg+xml", "The console's icon"))
  .annotate(OpenApi.Summary, "The console's icon")

export const group = HttpApiGroup.make("service")
  .add(healthz)
  .add(readyz)
  .add(metrics)
  .add(openApiDocument)
  .add(reference)
  .add(referenceStyle)
  .add(consolePage)
  .add(consoleScript)
  .add(consoleStyle)
  .add(consoleIcon)
  .annotate(OpenApi.Title, "Service")
  .annotate(
    OpenApi.Description,
    "Probes, metrics, this reference and the admin console. No key needed (except /metrics when ACCORD_METRICS_TOKEN is set)."
  )
