/**
 * The workspace administrator's API keys (`POST /api-keys`, `GET /api-keys`, `DELETE /api-keys/{id}`:
 * keys with a scope (`ingest`, `developer:read`, `admin`); the secret is returned once), relative to
 * `/api/admin/v1/workspaces/{workspaceId}`, admin keys only. Keys are stored as SHA-256 hashes
 * (docs/decisions.md, "Secret handling"), so the secret exists only in the answer to `POST`.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { issue } from "../../../core/access/ApiKeys.ts"
import { type ApiKeyRecord, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { canonicalUuid } from "../../../core/protocol/Uuid.ts"
import { NotFound } from "../../../core/protocol/NotFound.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOnly, guarded } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Api from "../api/Api.ts"
import * as ApiKeysApi from "../api/ApiKeysApi.ts"

/** What the API-key routes need: the key store and hashing. */
export type ApiKeysServices = ApiKeyStore | Crypto

/** Fixed wording for its field errors, so that none can echo a received value. */
const createApiKeyMessages = {
  "": "must be a JSON object",
  scope: "must be one of ingest, developer:read, admin",
  name: "must be a string of 1 to 200 characters"
}

const keyView = (key: ApiKeyRecord) => ({
  id: key.id,
  scope: key.scope,
  name: key.name,
  createdAt: formatTimestamp(key.createdAt),
  revokedAt: key.revokedAt === null ? null : formatTimestamp(key.revokedAt)
})

const createApiKey = (maxBodyBytes: number) => (workspaceId: string) =>
  Effect.gen(function* () {
    const body = yield* readJson(ApiKeysApi.CreateApiKeyBody, maxBodyBytes, createApiKeyMessages)
    const { record, secret } = yield* issue({ workspaceId, scope: body.scope, name: body.name ?? null })
    const { createdAt, id, name, scope } = keyView(record)
    return json({ id, scope, name, secret: Redacted.value(secret), createdAt }, 201)
  })

const listApiKeys = (workspaceId: string) =>
  Effect.map(
    Effect.flatMap(ApiKeyStore, (store) => store.list(workspaceId)),
    (keys) => json({ data: keys.map(keyView), nextCursor: null })
  )

const revokeApiKey = (workspaceId: string, id: string) =>
  Effect.gen(function* () {
    const store = yield* ApiKeyStore
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    const key = canonicalUuid(id)
    const revoked = Option.isSome(key) && (yield* store.revoke(workspaceId, key.value, now))
    if (!revoked) return yield* new NotFound({ resource: "api_key" })
    return HttpServerResponse.empty({ status: 204 })
  })

/**
 * The group's handlers, bound to the declaration (`api/ApiKeysApi.ts`).
 */
export const group = (maxBodyBytes: number) =>
  HttpApiBuilder.group(Api.api, "apiKeys", (handlers) =>
    handlers
      .handleRaw("createApiKey", () => guarded(adminOnly)(createApiKey(maxBodyBytes)))
      .handleRaw("listApiKeys", () => guarded(adminOnly)(listApiKeys))
      .handleRaw("revokeApiKey", ({ path }) => guarded(adminOnly)((workspaceId) => revokeApiKey(workspaceId, path.id)))
  )
