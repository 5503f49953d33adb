/**
 * `CatalogStore.current` under concurrency (concurrent reads share one statement that reads
 * only the newest version's head; a version's document is decoded once and kept): many workspaces
 * read at once each get their own newest version, a workspace without a catalog gets nothing, and a
 * read made after a publish sees it, however many reads came before.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import { CatalogStore } from "../../../core/ports/CatalogStore.ts"
import { fixtureCatalog } from "../../support/deliveries.ts"
import { storageVariants, uid } from "../../support/storage.ts"

const documentAt = (amountMinor: number): CatalogDocument => ({
  ...fixtureCatalog,
  publishedVersionId: uid(),
  offers: [{ ...fixtureCatalog.offers[0]!, price: { amountMinor, currency: "usd" } }]
})

const publish = (workspaceId: string, document: CatalogDocument) =>
  Effect.flatMap(CatalogStore, (store) =>
    store.publish({
      workspaceId,
      publishedVersionId: document.publishedVersionId!,
      publishedAt: 1_000,
      publishedBy: "api_key:k1",
      document
    })
  )

for (const variant of storageVariants.filter((v) => v.name !== "memory")) {
  describe.skipIf(!variant.available)(`CatalogStore.current, concurrent reads (${variant.name})`, () => {
    layer(Layer.suspend(variant.layer), { timeout: "60 seconds", excludeTestServices: true })((it) => {
      it.effect(
        "40 reads at once over 8 workspaces: each its own newest version and document; none for an empty workspace",
        () =>
          Effect.gen(function* () {
            const store = yield* CatalogStore
            const workspaces = Array.from({ length: 8 }, () => uid())
            const newest = new Map<string, CatalogDocument>()
            for (const [i, workspaceId] of workspaces.entries()) {
              // Workspace i has i + 1 versions; the last one is current.
              for (let v = 0; v <= i; v++) {
                const document = documentAt(100 * (i + 1) + v)
                yield* publish(workspaceId, document)
                newest.set(workspaceId, document)
              }
            }
            const empty = uid()
            const asked = Array.from({ length: 40 }, (_, i) => (i % 9 === 8 ? empty : workspaces[i % 9]!))
            const answers = yield* Effect.forEach(asked, (workspaceId) => store.current(workspaceId), {
              concurrency: "unbounded"
            })
            answers.forEach((answer, i) => {
              const workspaceId = asked[i]!
              if (workspaceId === empty) return assert.isTrue(Option.isNone(answer))
              const current = Option.getOrThrow(answer)
              assert.strictEqual(current.workspaceId, workspaceId)
              assert.strictEqual(current.version, workspaces.indexOf(workspaceId) + 1)
              assert.deepStrictEqual(current.document, newest.get(workspaceId))
            })
          })
      )

      it.effect("a read after a publish sees the new version, though the old one's document is kept", () =>
        Effect.gen(function* () {
          const store = yield* CatalogStore
          const workspaceId = uid()
          const first = documentAt(100)
          yield* publish(workspaceId, first)
          for (let i = 0; i < 3; i++)
            assert.deepStrictEqual(Option.getOrThrow(yield* store.current(workspaceId)).document, first)
          const second = documentAt(200)
          yield* publish(workspaceId, second)
          const [a, b] = yield* Effect.all([store.current(workspaceId), store.current(workspaceId)], {
            concurrency: "unbounded"
          })
          for (const answer of [a, b]) {
            assert.strictEqual(Option.getOrThrow(answer).version, 2)
            assert.deepStrictEqual(Option.getOrThrow(answer).document, second)
          }
          assert.deepStrictEqual(
            Option.getOrThrow(yield* store.byPublishedVersion(workspaceId, first.publishedVersionId!)).document,
            first
          )
        })
      )
    })
  })
}
