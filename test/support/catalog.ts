/**
 * Publishing the fixture catalog (`deliveries.ts`) for a workspace, through the port or over HTTP:
 * every connector test's intake binds to it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { CatalogDocument } from "../../core/catalog/Catalog.ts"
import { CatalogStore } from "../../core/ports/CatalogStore.ts"
import { fixtureCatalog } from "./deliveries.ts"

/** Publishes `document` (default: the fixture catalog) unless the workspace already has its version. */
export const publishCatalog = (workspaceId: string, document: CatalogDocument = fixtureCatalog) =>
  Effect.gen(function*() {
    const store = yield* CatalogStore
    const publishedVersionId = document.publishedVersionId ?? globalThis.crypto.randomUUID()
    const result = yield* store.publish({
      workspaceId,
      publishedVersionId,
      publishedAt: yield* Clock.currentTimeMillis,
      publishedBy: "test",
      document
    })
    return result === "published_version_exists" ? publishedVersionId : result.publishedVersionId
  })

/** `PUT /catalog` over HTTP with an admin key; a 409 (already published) counts as done. */
export const publishCatalogHttp = async (
  baseUrl: string,
  workspaceId: string,
  adminKey: string,
  document: CatalogDocument = fixtureCatalog
): Promise<void> => {
  const response = await fetch(`${baseUrl}/api/admin/v1/workspaces/${workspaceId}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(document)
  })
  if (response.status !== 201 && response.status !== 409) {
    throw new Error(`PUT /catalog answered ${response.status}: ${await response.text()}`)
  }
}
