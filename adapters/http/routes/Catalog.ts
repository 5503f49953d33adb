/**
 * The stored catalog's routes (`PUT /catalog` and its reads), relative to
 * `/api/admin/v1/workspaces/{workspaceId}`:
 *
 * - `PUT /catalog` (admin): publishes the whole catalog document as the next version (201 with
 *   `version` and the new `publishedVersionId` that actions bind to). Schema errors and references
 *   that do not resolve are 400 naming the field; nothing is stored then.
 * - `GET /catalog` (admin or developer): the current version with its document; 404
 *   `catalog_not_published` before the first publish.
 * - `GET /catalog/versions?cursor&limit`: the audit trail (who published which version, when),
 *   newest first, paged over summaries (no document is read), and `GET /catalog/versions/{version}`:
 *   one version with its document.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Publish from "../../../core/catalog/Publish.ts"
import { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import type { ApiKeyRecord, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { CatalogStore, CatalogVersionSummary, PublishedCatalog } from "../../../core/ports/CatalogStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOnly, adminOrDeveloper, guarded, guardedAs } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Api from "../api/Api.ts"
import { encodeTextCursor, listQuery, pageOf, textCursor, validQuery } from "../Paging.ts"

/**
 * The largest catalog document taken (bytes): larger than other admin bodies, since a catalog
 * lists every offer, action and decision of a workspace.
 */
export const catalogMaxBytes = 1024 * 1024

/** What the catalog routes need: the catalog store and key authentication. */
export type CatalogServices = CatalogStore | ApiKeyStore | Crypto

const summary = (c: CatalogVersionSummary) => ({
  version: c.version,
  publishedVersionId: c.publishedVersionId,
  publishedAt: formatTimestamp(c.publishedAt),
  publishedBy: c.publishedBy
})

const publish = (workspaceId: string, key: ApiKeyRecord) =>
  Effect.gen(function* () {
    const document = yield* readJson(CatalogDocument, catalogMaxBytes, {
      "": "must be a JSON object with offers, actions and decisions"
    })
    return json(summary(yield* Publish.publish({ workspaceId, publishedBy: `api_key:${key.id}`, document })), 201)
  })

const withDocument = (c: PublishedCatalog) => json({ ...summary(c), document: c.document })

const current = (workspaceId: string) => Effect.map(Publish.current(workspaceId), withDocument)

const versions = (workspaceId: string) =>
  Effect.gen(function* () {
    const query = yield* listQuery
    const before = Option.filter(textCursor(query), (text) => /^[1-9][0-9]{0,8}$/.test(text))
    if (query.params.get("cursor") !== null && Option.isNone(before) && query.errors.length === 0) {
      query.errors.push({ path: "cursor", message: "is not a cursor from this API" })
    }
    yield* validQuery(query)
    const rows = yield* Publish.versions(workspaceId, {
      limit: query.limit + 1,
      ...(Option.isSome(before) ? { before: Number(before.value) } : {})
    })
    return json(pageOf(rows, query.limit, summary, (c) => encodeTextCursor(String(c.version))))
  })

/**
 * The group's handlers, bound to the declaration (`api/CatalogApi.ts`).
 */
export const group = HttpApiBuilder.group(Api.api, "catalog", (handlers) =>
  handlers
    .handleRaw("publishCatalog", () => guardedAs(adminOnly)(publish))
    .handleRaw("getCatalog", () => guarded(adminOrDeveloper)(current))
    .handleRaw("listCatalogVersions", () => guarded(adminOrDeveloper)(versions))
    .handleRaw("getCatalogVersion", ({ path }) =>
      guarded(adminOrDeveloper)((workspaceId) => Effect.map(Publish.version(workspaceId, path.version), withDocument))
    )
)
