/**
 * The storage contract (`accord/testing`'s `StoragePorts.suite`) against one of this repository's
 * storage variants (PGlite or PostgreSQL; skipped loudly when PostgreSQL has no `DATABASE_URL`).
 * Each variant runs from a test file of its own, so vitest runs the variants in parallel. The
 * memory adapter's file calls the exported suite straight from the package.
 */
import { describe } from "@effect/vitest"
import { StoragePorts } from "accord/testing"
import { warnIfSkipped } from "./postgres.ts"
import { type StorageVariant, storageVariants } from "./storage.ts"

/** Every storage port's contract suite against the variant called `name`. */
export const suite = (name: StorageVariant["name"]): void => {
  const variant = storageVariants.find((candidate) => candidate.name === name)!
  if (name === "postgres") warnIfSkipped("storage contract")
  describe.skipIf(!variant.available)(variant.name, () => {
    StoragePorts.suite(variant.name, variant.layer, {
      ...(variant.sqlLayer === undefined ? {} : { sqlLayer: variant.sqlLayer }),
      // A bulk import's writes (`COPY` on SQL) hold the contract too; on PostgreSQL the writer also has
      // its callback form (the group commit's path).
      ...(variant.name === "postgres" ? { ingestWriteForms: ["write", "bulk", "writeNow"] } : {})
    })
  })
}
