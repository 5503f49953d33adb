/**
 * The contract every `CatalogStore` implementation satisfies (every write is versioned and audited; a
 * republish creates a new version and never rewrites history): versions 1, 2, 3 per workspace,
 * append-only; a `publishedVersionId` is used once per workspace (another workspace may use it);
 * concurrent publishes get distinct consecutive versions (on SQL two inserts race for one version
 * number and the loser retries, so each loss means another publish committed).
 */
import { assert, describe, layer as layerTests } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { CatalogStore, type PublishedCatalog } from "../../core/ports/CatalogStore.ts"
import type { CatalogDocument } from "../../core/protocol/messages/Catalog.ts"
import { uid } from "./internal/uid.ts"

/** A small catalog document: one offer, one action bound to it, one decision. */
const sampleCatalog: CatalogDocument = {
  publishedVersionId: "5a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c",
  offers: [
    {
      offerId: "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b",
      offerVersionId: "6b8d0f2a-4c5e-4f7a-9b1c-3d5e7f9a1b3c",
      price: { amountMinor: 4900, currency: "usd" }
    }
  ],
  actions: [
    {
      actionId: "7c9e1a3b-5d6f-4a8b-8c2d-4e6f8a0b2c4d",
      actionVersionId: "8d0f2b4c-6e7a-4b9c-9d3e-5f7a9b1c3d5e",
      key: "extend_trial_14",
      family: "extend_trial",
      evidence: ["authenticated_completion", "entitlement_state", "customer_server_event"]
    }
  ] as unknown as CatalogDocument["actions"],
  decisions: [
    {
      decisionId: "2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f",
      journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
      actionIds: ["7c9e1a3b-5d6f-4a8b-8c2d-4e6f8a0b2c4d"],
      offerIds: ["4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b"]
    }
  ]
} as unknown as CatalogDocument

/** The sample catalog under a fresh `publishedVersionId`, its offer at `amountMinor`. */
const documentAt = (amountMinor: number): CatalogDocument => ({
  ...sampleCatalog,
  publishedVersionId: uid(),
  offers: [{ ...sampleCatalog.offers[0]!, price: { amountMinor, currency: "usd" } }]
})

const publish = (workspaceId: string, document: CatalogDocument, publishedAt = 1_000) =>
  Effect.flatMap(CatalogStore, (store) =>
    store.publish({
      workspaceId,
      publishedVersionId: document.publishedVersionId!,
      publishedAt,
      publishedBy: "api_key:k1",
      document
    })
  )

/** Every version of a small history, in one page. */
const all = { limit: 100 }

const published = (result: PublishedCatalog | "published_version_exists"): PublishedCatalog => {
  assert.notStrictEqual(result, "published_version_exists")
  return result as PublishedCatalog
}

/**
 * The `CatalogStore` contract against `layer()`, one fresh store for the whole suite (tests keep
 * apart by unique workspace ids). The tests run on the live clock: an adapter may wait on the
 * `Clock` between attempts of a publish that lost a race.
 */
export const suite = (name: string, layer: () => Layer.Layer<CatalogStore, unknown>): void => {
  describe(`CatalogStore contract (${name})`, () => {
    layerTests(Layer.suspend(layer), { timeout: "60 seconds", excludeTestServices: true })((it) => {
      it.effect("nothing is published in a new workspace", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          assert.isTrue(Option.isNone(yield* store.current(workspaceId)))
          assert.isTrue(Option.isNone(yield* store.byPublishedVersion(workspaceId, sampleCatalog.publishedVersionId!)))
          assert.deepStrictEqual(yield* store.versions(workspaceId, all), [])
        })
      )

      it.effect("publishes versions 1, 2, 3 with what was published, who and when; the newest is current", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          const documents = [documentAt(100), documentAt(200), documentAt(300)]
          for (const [i, document] of documents.entries()) {
            const result = published(yield* publish(workspaceId, document, 1_000 + i))
            assert.deepStrictEqual(result, {
              workspaceId,
              version: i + 1,
              publishedVersionId: document.publishedVersionId!,
              publishedAt: 1_000 + i,
              publishedBy: "api_key:k1",
              document
            })
          }
          const current = Option.getOrThrow(yield* store.current(workspaceId))
          assert.strictEqual(current.version, 3)
          assert.deepStrictEqual(current.document, documents[2])
          // The audit trail: every version, newest first.
          const versions = yield* store.versions(workspaceId, all)
          assert.deepStrictEqual(
            versions.map((v) => [v.version, v.publishedVersionId, v.publishedAt]),
            [
              [3, documents[2]!.publishedVersionId, 1_002],
              [2, documents[1]!.publishedVersionId, 1_001],
              [1, documents[0]!.publishedVersionId, 1_000]
            ]
          )
        })
      )

      it.effect("a republish never rewrites: every earlier version stays readable with its own document", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          const first = documentAt(4900)
          const second = documentAt(5900)
          published(yield* publish(workspaceId, first))
          published(yield* publish(workspaceId, second))
          const old = Option.getOrThrow(yield* store.byPublishedVersion(workspaceId, first.publishedVersionId!))
          assert.strictEqual(old.version, 1)
          assert.deepStrictEqual(old.document, first)
          assert.strictEqual(old.document.offers[0]!.price!.amountMinor, 4900)
          assert.strictEqual(
            Option.getOrThrow(yield* store.byPublishedVersion(workspaceId, second.publishedVersionId!)).version,
            2
          )
          assert.deepStrictEqual(Option.getOrThrow(yield* store.byVersion(workspaceId, 1)).document, first)
          assert.deepStrictEqual(Option.getOrThrow(yield* store.byVersion(workspaceId, 2)).document, second)
          assert.isTrue(Option.isNone(yield* store.byVersion(workspaceId, 3)))
        })
      )

      it.effect("the history is read in pages of summaries, newest first: limit, then older than a version", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          for (let i = 0; i < 5; i++) published(yield* publish(workspaceId, documentAt(i), 1_000 + i))
          const first = yield* store.versions(workspaceId, { limit: 2 })
          assert.deepStrictEqual(first, [
            {
              workspaceId,
              version: 5,
              publishedVersionId: first[0]!.publishedVersionId,
              publishedAt: 1_004,
              publishedBy: "api_key:k1"
            },
            {
              workspaceId,
              version: 4,
              publishedVersionId: first[1]!.publishedVersionId,
              publishedAt: 1_003,
              publishedBy: "api_key:k1"
            }
          ])
          // A summary carries no document.
          assert.isFalse(first.some((v) => "document" in v))
          const pages = [first]
          while (pages.at(-1)!.length === 2) {
            pages.push(yield* store.versions(workspaceId, { limit: 2, before: pages.at(-1)!.at(-1)!.version }))
          }
          assert.deepStrictEqual(
            pages.map((page) => page.map((v) => v.version)),
            [[5, 4], [3, 2], [1]]
          )
          assert.deepStrictEqual(yield* store.versions(workspaceId, { limit: 2, before: 1 }), [])
          assert.deepStrictEqual(yield* store.versions(uid(), { limit: 2 }), [])
        })
      )

      it.effect("a publishedVersionId already used in the workspace: published_version_exists, nothing written", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          const first = documentAt(100)
          published(yield* publish(workspaceId, first))
          // Same id, another document: refused, the stored version unchanged.
          const reused = { ...documentAt(999), publishedVersionId: first.publishedVersionId! }
          assert.strictEqual(yield* publish(workspaceId, reused, 2_000), "published_version_exists")
          const versions = yield* store.versions(workspaceId, all)
          assert.strictEqual(versions.length, 1)
          assert.deepStrictEqual(Option.getOrThrow(yield* store.byVersion(workspaceId, 1)).document, first)
          assert.strictEqual(versions[0]!.publishedAt, 1_000)
          // Even after a newer version, the old id stays used.
          published(yield* publish(workspaceId, documentAt(200)))
          assert.strictEqual(yield* publish(workspaceId, reused), "published_version_exists")
          assert.strictEqual((yield* store.versions(workspaceId, all)).length, 2)
        })
      )

      it.effect("the same publishedVersionId in another workspace is allowed, and versions count per workspace", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const [a, b] = [uid(), uid()]
          const shared = documentAt(100)
          published(yield* publish(a, documentAt(50)))
          assert.strictEqual(published(yield* publish(a, shared)).version, 2)
          assert.strictEqual(published(yield* publish(b, shared)).version, 1)
          assert.strictEqual(
            Option.getOrThrow(yield* store.byPublishedVersion(b, shared.publishedVersionId!)).workspaceId,
            b
          )
          assert.strictEqual((yield* store.versions(a, all)).length, 2)
          assert.strictEqual((yield* store.versions(b, all)).length, 1)
        })
      )

      it.effect("20 concurrent publishes get 20 distinct, consecutive versions; none is lost", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          const documents = Array.from({ length: 20 }, (_, i) => documentAt(i))
          const results = yield* Effect.all(
            documents.map((d) => publish(workspaceId, d)),
            { concurrency: "unbounded" }
          )
          const versions = results.map((r) => published(r).version).sort((x, y) => x - y)
          assert.deepStrictEqual(
            versions,
            Array.from({ length: 20 }, (_, i) => i + 1)
          )
          // Each id got exactly the version it was answered with, and kept its own document.
          for (const result of results.map(published)) {
            const stored = Option.getOrThrow(yield* store.byPublishedVersion(workspaceId, result.publishedVersionId))
            assert.strictEqual(stored.version, result.version)
            assert.deepStrictEqual(stored.document, result.document)
          }
          assert.strictEqual((yield* store.versions(workspaceId, all)).length, 20)
          assert.strictEqual(Option.getOrThrow(yield* store.current(workspaceId)).version, 20)
        })
      )

      it.effect("concurrent publishes of one publishedVersionId: exactly one version, the others refused", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          const document = documentAt(100)
          const results = yield* Effect.all(
            Array.from({ length: 10 }, () => publish(workspaceId, document)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(results.filter((r) => r !== "published_version_exists").length, 1)
          assert.strictEqual((yield* store.versions(workspaceId, all)).length, 1)
        })
      )
    })
  })
}
