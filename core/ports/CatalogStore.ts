/**
 * The `CatalogStore` port: a workspace's published catalog versions. Publishing
 * appends version `n + 1` atomically (two concurrent publishes get two versions, never one
 * overwritten); published versions are never changed or removed, so the table is its own audit
 * trail (who published what, when).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { CatalogDocument } from "../protocol/messages/Catalog.ts"
import type { StorageError } from "./StorageError.ts"

/**
 * One published version of a workspace's catalog.
 */
export interface PublishedCatalog {
  readonly workspaceId: string
  /** 1, 2, 3… per workspace. */
  readonly version: number
  readonly publishedVersionId: string
  readonly publishedAt: number
  /** Who published it (`api_key:<id>`), for the audit trail. */
  readonly publishedBy: string
  readonly document: CatalogDocument
}

/**
 * A published version as its history lists it: who published which version, when, without its
 * document.
 */
export type CatalogVersionSummary = Omit<PublishedCatalog, "document">

/**
 * One page of a workspace's version history: at most `limit` versions, newest first, each older
 * than version `before` when given.
 */
export interface CatalogVersionsPage {
  readonly limit: number
  readonly before?: number
}

/**
 * The catalog port: publish append-only versions per workspace, read the current one, one by its
 * id or number, and pages of their history.
 */
export interface CatalogStoreService {
  /**
   * Appends the next version for the workspace and answers it; `"published_version_exists"` when
   * the workspace already has a version with this `publishedVersionId` (nothing is written).
   */
  readonly publish: (input: {
    readonly workspaceId: string
    readonly publishedVersionId: string
    readonly publishedAt: number
    readonly publishedBy: string
    readonly document: CatalogDocument
  }) => Effect.Effect<PublishedCatalog | "published_version_exists", StorageError>
  /** The newest version. */
  readonly current: (workspaceId: string) => Effect.Effect<Option.Option<PublishedCatalog>, StorageError>
  /** The version whose `publishedVersionId` this is, current or not. */
  readonly byPublishedVersion: (
    workspaceId: string,
    publishedVersionId: string
  ) => Effect.Effect<Option.Option<PublishedCatalog>, StorageError>
  /** The version numbered `version` (1, 2, …), current or not. */
  readonly byVersion: (
    workspaceId: string,
    version: number
  ) => Effect.Effect<Option.Option<PublishedCatalog>, StorageError>
  /**
   * A page of the version history, newest first, as summaries: a history may hold many large
   * documents, and listing it reads none of them.
   */
  readonly versions: (
    workspaceId: string,
    page: CatalogVersionsPage
  ) => Effect.Effect<ReadonlyArray<CatalogVersionSummary>, StorageError>
}

/** The service tag of the catalog store. */
export class CatalogStore extends Context.Tag("@accord/core/CatalogStore")<CatalogStore, CatalogStoreService>() {}
