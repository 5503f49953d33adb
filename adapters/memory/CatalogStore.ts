/**
 * CatalogStore in memory: each workspace's published versions, appended in one synchronous step.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { CatalogStore, type CatalogStoreService, type PublishedCatalog } from "../../core/ports/CatalogStore.ts"

/** An empty `CatalogStore` held in this process's memory. */
export const make = (): CatalogStoreService => {
  const byWorkspace = new Map<string, Array<PublishedCatalog>>()
  const list = (workspaceId: string) => byWorkspace.get(workspaceId) ?? []
  return {
    publish: (input) =>
      Effect.sync(() => {
        const versions = list(input.workspaceId)
        if (versions.some((v) => v.publishedVersionId === input.publishedVersionId))
          return "published_version_exists" as const
        const published: PublishedCatalog = { ...input, version: versions.length + 1 }
        byWorkspace.set(input.workspaceId, [...versions, published])
        return published
      }),
    current: (workspaceId) => Effect.sync(() => Option.fromNullable(list(workspaceId).at(-1))),
    byPublishedVersion: (workspaceId, publishedVersionId) =>
      Effect.sync(() =>
        Option.fromNullable(list(workspaceId).find((v) => v.publishedVersionId === publishedVersionId))
      ),
    byVersion: (workspaceId, version) => Effect.sync(() => Option.fromNullable(list(workspaceId)[version - 1])),
    versions: (workspaceId, page) =>
      Effect.sync(() =>
        list(workspaceId)
          .filter((v) => page.before === undefined || v.version < page.before)
          .reverse()
          .slice(0, page.limit)
          .map(({ document: _, ...summary }) => summary)
      )
  }
}

/** Provides an empty in-memory `CatalogStore`. */
export const layerMemory: Layer.Layer<CatalogStore> = Layer.sync(CatalogStore, make)
