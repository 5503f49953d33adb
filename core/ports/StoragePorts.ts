/**
 * The stores every storage adapter (memory, SQL on PostgreSQL or PGlite) provides: storage only.
 * What is built over them (revalidation against the stored catalog, the approval-token notifier) is
 * the composition's to provide, so an embedding host chooses it without replacing storage.
 */
import type { AccountProfileStore } from "./AccountProfileStore.ts"
import type { ActionLedger } from "./ActionLedger.ts"
import type { ApiKeyStore } from "./ApiKeyStore.ts"
import type { ApprovalStore } from "./ApprovalStore.ts"
import type { CapabilityRegistry } from "./CapabilityRegistry.ts"
import type { CatalogStore } from "./CatalogStore.ts"
import type { ConnectionStore } from "./ConnectionStore.ts"
import type { EventStore } from "./EventStore.ts"
import type { FeatureGateStore } from "./FeatureGateStore.ts"
import type { ImportJobStore } from "./ImportJobStore.ts"
import type { IngestWriter } from "./IngestWriter.ts"
import type { NonceStore } from "./NonceStore.ts"
import type { Outbox } from "./Outbox.ts"
import type { RuntimeSessionStore } from "./RuntimeSessionStore.ts"
import type { SecretVault } from "./SecretVault.ts"
import type { SuppressionStore } from "./SuppressionStore.ts"
import type { Transactor } from "./Transactor.ts"
import type { UsageMeterStore } from "./UsageMeterStore.ts"

/**
 * Every store a storage adapter provides; `accord/testing`'s `StoragePorts.suite` checks them all.
 */
export type StoragePorts =
  | NonceStore
  | ApiKeyStore
  | SecretVault
  | ConnectionStore
  | CapabilityRegistry
  | CatalogStore
  | Outbox
  | ActionLedger
  | EventStore
  | AccountProfileStore
  | UsageMeterStore
  | FeatureGateStore
  | IngestWriter
  | Transactor
  | RuntimeSessionStore
  | ApprovalStore
  | SuppressionStore
  | ImportJobStore
