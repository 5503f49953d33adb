/**
 * Publishing a workspace's catalog: the whole document becomes the next version, which actions
 * then bind to through its `publishedVersionId`. A document whose references do not resolve is
 * refused whole (nothing is stored), and a `publishedVersionId` is published at most once per
 * workspace, so a binding always names one document.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  CatalogStore,
  type CatalogVersionSummary,
  type CatalogVersionsPage,
  type PublishedCatalog
} from "../ports/CatalogStore.ts"
import type { Crypto } from "../ports/Crypto.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { FieldIssue } from "../protocol/Json.ts"
import { NotFound } from "../protocol/NotFound.ts"
import { randomUuid } from "../protocol/Uuid.ts"
import type { CatalogDocument } from "../protocol/messages/Catalog.ts"
import { validateCatalog } from "./Catalog.ts"

/**
 * The document's references do not resolve (every failing one listed); nothing was stored.
 */
export class CatalogRejected extends Schema.TaggedError<CatalogRejected>()("CatalogRejected", {
  issues: Schema.Array(FieldIssue)
}) {
  override get message(): string {
    return "the catalog's references do not resolve"
  }
}

/**
 * The workspace already published a version with this `publishedVersionId`; nothing was stored.
 */
export class PublishedVersionExists extends Schema.TaggedError<PublishedVersionExists>()("PublishedVersionExists", {}) {
  override get message(): string {
    return "this publishedVersionId was already published"
  }
}

/**
 * The workspace has not published a catalog yet.
 */
export class CatalogNotPublished extends Schema.TaggedError<CatalogNotPublished>()("CatalogNotPublished", {
  workspaceId: Schema.String
}) {
  override get message(): string {
    return "no catalog is published yet"
  }
}

/**
 * Why a catalog was not published: refused by a catalog rule, a version with that id exists, or
 * storage failed.
 */
export type PublishError = CatalogRejected | PublishedVersionExists | StorageError

/**
 * Publishes `document` as the workspace's next version, recording who published it
 * (`publishedBy`, e.g. `api_key:<id>`); the `publishedVersionId` is the document's own or a new
 * UUID.
 */
export const publish = (input: {
  readonly workspaceId: string
  readonly publishedBy: string
  readonly document: CatalogDocument
}): Effect.Effect<PublishedCatalog, PublishError, CatalogStore | Crypto> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const issues = validateCatalog(input.document, now)
    if (issues.length > 0) return yield* new CatalogRejected({ issues })
    const published = yield* (yield* CatalogStore).publish({
      workspaceId: input.workspaceId,
      publishedVersionId: input.document.publishedVersionId ?? (yield* randomUuid),
      publishedAt: now,
      publishedBy: input.publishedBy,
      document: input.document
    })
    if (published === "published_version_exists") return yield* new PublishedVersionExists()
    return published
  })

/**
 * The workspace's current version.
 */
export const current = (
  workspaceId: string
): Effect.Effect<PublishedCatalog, CatalogNotPublished | StorageError, CatalogStore> =>
  Effect.flatMap(
    Effect.flatMap(CatalogStore, (store) => store.current(workspaceId)),
    Option.match({
      onNone: () => Effect.fail(new CatalogNotPublished({ workspaceId })),
      onSome: Effect.succeed
    })
  )

/**
 * A page of the workspace's catalog versions, newest first, as summaries (no documents).
 */
export const versions = (
  workspaceId: string,
  page: CatalogVersionsPage
): Effect.Effect<ReadonlyArray<CatalogVersionSummary>, StorageError, CatalogStore> =>
  Effect.flatMap(CatalogStore, (store) => store.versions(workspaceId, page))

/**
 * One version of the workspace's catalog, named by its number (`1`, `2`, …) as text.
 */
export const version = (
  workspaceId: string,
  text: string
): Effect.Effect<PublishedCatalog, NotFound | StorageError, CatalogStore> =>
  Effect.gen(function* () {
    const number = /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : undefined
    const found =
      number === undefined
        ? Option.none()
        : yield* Effect.flatMap(CatalogStore, (store) => store.byVersion(workspaceId, number))
    if (Option.isNone(found)) return yield* new NotFound({ resource: "catalog_version" })
    return found.value
  })
