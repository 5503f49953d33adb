/**
 * The whole HTTP API as one `HttpApi` declaration, one group per file, and the OpenAPI document
 * generated from it (`OpenApi.fromApi`), served at `/openapi.json` and rendered at `/reference`.
 *
 * Every group is served from this declaration by `HttpApiBuilder` (`Declared.ts`, handlers in
 * `routes/*.ts`); on Node and Deno the `node:http` dispatcher answers the ingest endpoint through its
 * direct route (`NodeIngest.ts`), with the same pipeline (docs/decisions.md, "API reference").
 * `npm run check:openapi` confirms the document and the
 * served routes agree.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import * as Problem from "../Problem.ts"
import * as ActionRequestsApi from "./ActionRequestsApi.ts"
import * as ApiKeysApi from "./ApiKeysApi.ts"
import * as ApprovalsApi from "./ApprovalsApi.ts"
import * as CatalogApi from "./CatalogApi.ts"
import * as ConnectorApi from "./ConnectorApi.ts"
import * as EventsApi from "./EventsApi.ts"
import * as FeatureGatesApi from "./FeatureGatesApi.ts"
import * as ImportsApi from "./ImportsApi.ts"
import * as IngestApi from "./IngestApi.ts"
import * as PrivacyApi from "./PrivacyApi.ts"
import * as RetentionApi from "./RetentionApi.ts"
import * as RuntimeApi from "./RuntimeApi.ts"
import * as ServiceApi from "./ServiceApi.ts"

/**
 * What the document says of the API as a whole, naming rule included.
 */
export const description = [
  "Accord: signed customer actions and Direct API ingestion.",
  "",
  "**Admin API** under `/api/admin/v1/workspaces/{workspaceId}`: bearer API keys of the workspace (`admin`, or `developer:read` for reads). **Direct API**: `POST /api/events/ingest` with an `ingest` key. **Runtime**: signed callbacks from the customer's systems.",
  "",
  "**JSON naming.** The admin API is camelCase (the connector protocol's own names: `actionRequestId`, `publishedVersionId`); the Direct API is snake_case (the event contract's own names: `event_name`, `account_id`). Events read back through the admin API keep the snake_case they were sent in; everything Accord adds around them is camelCase (`nextCursor`). Problem documents follow RFC 9457 (`type`, `title`, `status`, `detail`) plus `code` and `errors`.",
  "",
  "**Errors** are `application/problem+json` with a stable snake_case `code`; every answer is `cache-control: no-store`. A wrong method on a known path is 405 `method_not_allowed` with `Allow`; an unknown path is 404 `not_found`; an unexpected failure is 500 `internal_error` (its cause stays in the server log).",
  "",
  "**Lists** answer `{ data, nextCursor }`, newest first unless said otherwise; pass `nextCursor` as `cursor` for the next page."
].join("\n")

const declared = HttpApi.make("accord")

/*
 * The API. `HttpApi.make` adds its own `HttpApiDecodeError` (400) to every endpoint; no served
 * endpoint declares a query, header or payload schema whose decoding by `HttpApiBuilder` can fail
 * (handlers read bodies with `Body.readJson`, the completion's signature headers are optional
 * strings, a list's query parameters are `Common.queryParam`s), and path parameters are plain strings, so that error can never be answered, and it is
 * left out.
 */
const withoutDecodeError = Object.assign(Object.create(Object.getPrototypeOf(declared)), declared, {
  errorSchema: Schema.Never
}) as HttpApi.HttpApi<"accord">

export const api = withoutDecodeError
  .add(ApiKeysApi.group)
  .add(EventsApi.group)
  .add(FeatureGatesApi.group)
  .add(PrivacyApi.group)
  .add(RetentionApi.group)
  .add(CatalogApi.group)
  .add(ActionRequestsApi.group)
  .add(ConnectorApi.group)
  .add(RuntimeApi.group)
  .add(ApprovalsApi.adminGroup)
  .add(ApprovalsApi.runtimeGroup)
  .add(IngestApi.group)
  .add(ImportsApi.group)
  .add(ServiceApi.group)
  .annotate(OpenApi.Title, "Accord API")
  .annotate(OpenApi.Version, "0.1.0")
  .annotate(OpenApi.Description, description)
  .annotate(OpenApi.Transform, (spec) => problemAnswers(spec))

/**
 * The header every 503 and 429 answer carries (`ErrorMap.retryableUnavailable`,
 * `ErrorMap.tooManyRequests`, the server's own `not_serving`): the same request may be sent again after
 * that many seconds, and the clients (the SDK, the customer kit) wait exactly that long.
 */
export const retryAfterHeader = {
  description: "whole seconds to wait before sending the same request again",
  required: true,
  schema: { type: "string", pattern: "^[0-9]+$" }
} as const

/**
 * Several problems on one status are one union, whose media type the generator cannot read from
 * its members; every error answer is `application/problem+json`. A 401 behind the bearer key
 * carries its challenge; every 503 and 429 its `Retry-After` ({@link retryAfterHeader}).
 */
const problemAnswers = (spec: Record<string, any>): Record<string, any> => {
  for (const operations of Object.values<Record<string, any>>(spec["paths"] ?? {})) {
    for (const operation of Object.values<Record<string, any>>(operations)) {
      for (const [status, response] of Object.entries<Record<string, any>>(operation["responses"] ?? {})) {
        const content = response["content"]
        if (Number(status) >= 400 && content?.["application/json"] !== undefined) {
          content[Problem.contentType] = content["application/json"]
          delete content["application/json"]
        }
        if (status === "401" && operation["security"]?.length > 0) {
          response["headers"] = {
            ...response["headers"],
            "www-authenticate": { description: "`Bearer` (RFC 6750)", required: true, schema: { type: "string" } }
          }
        }
        if (status === "503" || status === "429") {
          response["headers"] = { ...response["headers"], "retry-after": retryAfterHeader }
        }
      }
    }
  }
  return spec
}

/**
 * The OpenAPI 3.1 document.
 */
export const document: OpenApi.OpenAPISpec = OpenApi.fromApi(api)
