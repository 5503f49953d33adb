/**
 * The stored catalog's routes (`PUT /catalog` and its reads), relative to
 * `/api/admin/v1/workspaces/{workspaceId}`:
 *
 * - `PUT /catalog` (admin): publishes the whole catalog document as the next version (201 with
 *   `version` and the new `publishedVersionId` that actions bind to). Schema errors and references
 *   that do not resolve are 400 naming the field; nothing is stored then.
 * - `GET /catalog` (admin or developer): the current version with its document; 404
 *   `catalog_not_published` before the first publish.
 * - `GET /catalog/versions` and `GET /catalog/versions/{version}`: every version (the audit trail:
 *   who published which version, when), and one version's document.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { validateCatalog } from "../../../core/catalog/Catalog.ts"
import { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import type { ApiKeyRecord, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import { CatalogStore, type PublishedCatalog } from "../../../core/ports/CatalogStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import type { StorageError } from "../../../core/ports/StorageError.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { randomUuid } from "../../../core/protocol/Uuid.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOnly, adminOrDeveloper, guarded, guardedAs } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Problem from "../Problem.ts"
import * as CatalogApi from "../api/CatalogApi.ts"
import { adminPrefix } from "../Paths.ts"

/**
 * The largest catalog document taken (bytes): larger than other admin bodies, since a catalog
 * lists every offer, action and decision of a workspace.
 */
export const catalogMaxBytes = 1024 * 1024

export type CatalogServices = CatalogStore | ApiKeyStore | Crypto

const summary = (c: PublishedCatalog) => ({
  version: c.version,
  publishedVersionId: c.publishedVersionId,
  publishedAt: formatTimestamp(c.publishedAt),
  publishedBy: c.publishedBy
})

const notPublished = (workspaceId: string) =>
  Problem.make(
    404,
    "catalog_not_published",
    `no catalog is published yet; publish one with PUT ${adminPrefix}/${workspaceId}/catalog`
  )

const publish = (workspaceId: string, key: ApiKeyRecord) =>
  Effect.gen(function* () {
    const document = yield* readJson(CatalogDocument, catalogMaxBytes, {
      "": "must be a JSON object with offers, actions and decisions"
    })
    const issues = validateCatalog(document)
    if (issues.length > 0)
      return yield* Problem.badRequest("invalid_catalog", "the catalog's references do not resolve", issues)
    const published = yield* (yield* CatalogStore).publish({
      workspaceId,
      publishedVersionId: document.publishedVersionId ?? (yield* randomUuid),
      publishedAt: yield* Clock.currentTimeMillis,
      publishedBy: `api_key:${key.id}`,
      document
    })
    if (published === "published_version_exists") {
      return yield* Problem.make(
        409,
        "published_version_exists",
        "this publishedVersionId was already published; a republish needs a new one (or none)",
        {
          errors: [{ path: "publishedVersionId", message: "already published in this workspace" }]
        }
      )
    }
    return json(summary(published), 201)
  })

const current = (workspaceId: string) =>
  Effect.gen(function* () {
    const found = yield* (yield* CatalogStore).current(workspaceId)
    if (Option.isNone(found)) return yield* notPublished(workspaceId)
    return json({ ...summary(found.value), document: found.value.document })
  })

const versions = (workspaceId: string) =>
  Effect.map(
    Effect.flatMap(CatalogStore, (store) => store.versions(workspaceId)),
    (all) => json({ data: all.map(summary), nextCursor: null })
  )

const oneVersion = (workspaceId: string) =>
  Effect.gen(function* () {
    const text = (yield* HttpRouter.params)["version"] ?? ""
    const version = /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : undefined
    const found =
      version === undefined
        ? undefined
        : (yield* (yield* CatalogStore).versions(workspaceId)).find((c) => c.version === version)
    if (found === undefined) return yield* Problem.notFound("no such catalog version in this workspace")
    return json({ ...summary(found), document: found.document })
  })

export const routes: HttpRouter.HttpRouter<Problem.Problem | StorageError, CatalogServices> = HttpRouter.empty.pipe(
  HttpRouter.put(CatalogApi.publishCatalog.path, guardedAs(adminOnly)(publish)),
  HttpRouter.get(CatalogApi.getCatalog.path, guarded(adminOrDeveloper)(current)),
  HttpRouter.get(CatalogApi.listCatalogVersions.path, guarded(adminOrDeveloper)(versions)),
  HttpRouter.get(CatalogApi.getCatalogVersion.path, guarded(adminOrDeveloper)(oneVersion))
)
