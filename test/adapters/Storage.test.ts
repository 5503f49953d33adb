/**
 * Every storage port's contract suite, against every storage variant: memory, PGlite and
 * PostgreSQL (when `DATABASE_URL` is set; skipped loudly otherwise). Each suite builds one store.
 */
import { describe } from "@effect/vitest"
import { warnIfSkipped } from "../support/postgres.ts"
import { storageVariants } from "../support/storage.ts"
import * as AccountProfileStore from "../core/ports/suites/AccountProfileStore.ts"
import * as ActionLedger from "../core/ports/suites/ActionLedger.ts"
import * as ApiKeyStore from "../core/ports/suites/ApiKeyStore.ts"
import * as CapabilityRegistry from "../core/ports/suites/CapabilityRegistry.ts"
import * as ConnectionStore from "../core/ports/suites/ConnectionStore.ts"
import * as EventStore from "../core/ports/suites/EventStore.ts"
import * as FeatureGateStore from "../core/ports/suites/FeatureGateStore.ts"
import * as IngestWriter from "../core/ports/suites/IngestWriter.ts"
import * as NonceStore from "../core/ports/suites/NonceStore.ts"
import * as Outbox from "../core/ports/suites/Outbox.ts"
import * as SecretVault from "../core/ports/suites/SecretVault.ts"
import * as Transactor from "../core/ports/suites/Transactor.ts"
import * as UsageMeterStore from "../core/ports/suites/UsageMeterStore.ts"

warnIfSkipped("storage contract")

for (const variant of storageVariants) {
  describe.skipIf(!variant.available)(variant.name, () => {
    NonceStore.suite(variant.name, variant.layer)
    ApiKeyStore.suite(variant.name, variant.layer)
    SecretVault.suite(variant.name, variant.layer, variant.sqlLayer)
    ConnectionStore.suite(variant.name, variant.layer, variant.sqlLayer)
    CapabilityRegistry.suite(variant.name, variant.layer)
    Outbox.suite(variant.name, variant.layer)
    ActionLedger.suite(variant.name, variant.layer)
    EventStore.suite(variant.name, variant.layer)
    AccountProfileStore.suite(variant.name, variant.layer)
    UsageMeterStore.suite(variant.name, variant.layer)
    FeatureGateStore.suite(variant.name, variant.layer)
    IngestWriter.suite(variant.name, variant.layer)
    Transactor.suite(variant.name, variant.layer, variant.sqlLayer)
  })
}
