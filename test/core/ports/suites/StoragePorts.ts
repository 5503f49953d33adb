/**
 * The contract of a whole storage adapter: every storage port's suite against one storage variant
 * (memory, PGlite or PostgreSQL; skipped loudly when PostgreSQL has no `DATABASE_URL`). Each variant
 * runs from a test file of its own, so vitest runs the variants in parallel.
 */
import { describe } from "@effect/vitest"
import { warnIfSkipped } from "../../../support/postgres.ts"
import { type StorageVariant, storageVariants } from "../../../support/storage.ts"
import * as AccountProfileStore from "./AccountProfileStore.ts"
import * as ActionLedger from "./ActionLedger.ts"
import * as ApiKeyStore from "./ApiKeyStore.ts"
import * as ApprovalStore from "./ApprovalStore.ts"
import * as CapabilityRegistry from "./CapabilityRegistry.ts"
import * as ConnectionStore from "./ConnectionStore.ts"
import * as EventStore from "./EventStore.ts"
import * as FeatureGateStore from "./FeatureGateStore.ts"
import * as IngestWriter from "./IngestWriter.ts"
import * as IntakeKeys from "./IntakeKeys.ts"
import * as NonceStore from "./NonceStore.ts"
import * as Outbox from "./Outbox.ts"
import * as RuntimeSessionStore from "./RuntimeSessionStore.ts"
import * as SecretVault from "./SecretVault.ts"
import * as Transactor from "./Transactor.ts"
import * as UsageMeterStore from "./UsageMeterStore.ts"

/** Every storage port's contract suite against the variant called `name`. */
export const suite = (name: StorageVariant["name"]): void => {
  const variant = storageVariants.find((candidate) => candidate.name === name)!
  if (name === "postgres") warnIfSkipped("storage contract")
  describe.skipIf(!variant.available)(variant.name, () => {
    NonceStore.suite(variant.name, variant.layer)
    ApiKeyStore.suite(variant.name, variant.layer)
    SecretVault.suite(variant.name, variant.layer, variant.sqlLayer)
    ConnectionStore.suite(variant.name, variant.layer, variant.sqlLayer)
    CapabilityRegistry.suite(variant.name, variant.layer)
    Outbox.suite(variant.name, variant.layer)
    ActionLedger.suite(variant.name, variant.layer)
    IntakeKeys.suite(variant.name, variant.layer)
    EventStore.suite(variant.name, variant.layer)
    AccountProfileStore.suite(variant.name, variant.layer)
    UsageMeterStore.suite(variant.name, variant.layer)
    FeatureGateStore.suite(variant.name, variant.layer)
    // On PostgreSQL the writer also has its callback form (the group commit's path): both hold the contract.
    IngestWriter.suite(variant.name, variant.layer, variant.name === "postgres" ? ["write", "writeNow"] : ["write"])
    Transactor.suite(variant.name, variant.layer, variant.sqlLayer)
    RuntimeSessionStore.suite(variant.name, variant.layer)
    ApprovalStore.suite(variant.name, variant.layer)
  })
}
