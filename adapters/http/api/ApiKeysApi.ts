/**
 * API keys (Settings > Integrations > Direct API), under `/api/admin/v1/workspaces/{workspaceId}`;
 * admin keys only. Handled by `routes/ApiKeys.ts`.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { ApiKeyScope } from "../../../core/ports/ApiKeyStore.ts"
import { adminGuarded, adminPath, bodyProblems, notFound, page, Timestamp, UuidText } from "./Common.ts"

/**
 * `POST /api-keys` body.
 */
export const CreateApiKeyBody = Schema.Struct({
  scope: ApiKeyScope.annotations({
    description:
      "ingest (the Direct API), developer:read (the reads of the Events view, profiles, gates, connector) or admin"
  }),
  name: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)), { exact: true })
}).annotations({ examples: [{ scope: "ingest", name: "web backend" }] })

const keyFields = {
  id: UuidText,
  scope: ApiKeyScope,
  name: Schema.NullOr(Schema.String),
  createdAt: Timestamp
}

const keyExample = {
  id: "0b6f3f7e-9a51-4d1c-8e2f-5a7c0d9e1b23",
  scope: "ingest" as const,
  name: "web backend",
  createdAt: "2026-11-22T10:15:30.000Z"
}

/**
 * A key as listed: never its secret.
 */
export const ApiKeyView = Schema.Struct({ ...keyFields, revokedAt: Schema.NullOr(Timestamp) })

export const createApiKey = HttpApiEndpoint.post("createApiKey", "/api-keys")
  .setPath(adminPath({}))
  .setPayload(CreateApiKeyBody)
  .addSuccess(
    Schema.Struct({
      ...keyFields,
      secret: Schema.String.annotations({ description: "the key's secret: shown here once, never again" })
    }).annotations({ examples: [{ ...keyExample, secret: "acc_ingest_2c1f0e9d8b7a6f5e4d3c2b1a0f9e8d7c" }] }),
    { status: 201 }
  )
  .addError(bodyProblems[0])
  .addError(bodyProblems[1])
  .addError(bodyProblems[2])
  .annotate(OpenApi.Summary, "Create an API key (the secret is answered once)")

export const listApiKeys = HttpApiEndpoint.get("listApiKeys", "/api-keys")
  .setPath(adminPath({}))
  .addSuccess(page(ApiKeyView, { ...keyExample, revokedAt: null }))
  .annotate(OpenApi.Summary, "List the workspace's API keys, live and revoked (one page: nextCursor is always null)")

export const revokeApiKey = HttpApiEndpoint.del("revokeApiKey", "/api-keys/:id")
  .setPath(adminPath({ id: UuidText }))
  .addSuccess(HttpApiSchema.NoContent)
  .addError(notFound("api_key"))
  .annotate(OpenApi.Summary, "Revoke an API key")

export const group = HttpApiGroup.make("apiKeys")
  .add(createApiKey)
  .add(listApiKeys)
  .add(revokeApiKey)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "API keys")
  .annotate(
    OpenApi.Description,
    "Keys with a scope (`ingest`, `developer:read`, `admin`); the secret is returned once. Admin keys only."
  )
