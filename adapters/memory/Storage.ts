/**
 * Every storage port in memory: for tests and for embedding without persistence. The action ledger
 * and the outbox share one table so their combined writes stay atomic.
 */
import * as Layer from "effect/Layer"
import * as AccountProfileStore from "./AccountProfileStore.ts"
import * as ActionLedger from "./ActionLedger.ts"
import * as ApiKeyStore from "./ApiKeyStore.ts"
import * as ApprovalStore from "./ApprovalStore.ts"
import * as CapabilityRegistry from "./CapabilityRegistry.ts"
import * as CatalogStore from "./CatalogStore.ts"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import * as ConnectionStore from "./ConnectionStore.ts"
import * as EventStore from "./EventStore.ts"
import * as FeatureGateStore from "./FeatureGateStore.ts"
import * as ImportJobStore from "./ImportJobStore.ts"
import * as RuntimeSessionStore from "./RuntimeSessionStore.ts"
import * as SecretVault from "./SecretVault.ts"
import * as SuppressionStore from "./SuppressionStore.ts"
import * as StoreWriter from "../../core/ingest/StoreWriter.ts"
import type { StoragePorts } from "../../core/ports/StoragePorts.ts"
import * as Transactor from "./Transactor.ts"
import * as UsageMeterStore from "./UsageMeterStore.ts"

/**
 * Every storage port in memory.
 */
export const layer: Layer.Layer<StoragePorts, never, Cipher> = StoreWriter.layerFromStores.pipe(
  Layer.provideMerge(
    Layer.mergeAll(
      ApiKeyStore.layerMemory,
      SecretVault.layerMemory,
      ConnectionStore.layerMemory,
      CapabilityRegistry.layerMemory,
      CatalogStore.layerMemory,
      // The ledger records the nonces of the kit's execution claims in the same store (`create`'s `nonce`).
      ActionLedger.layerMemoryWithNonces,
      EventStore.layerMemory,
      AccountProfileStore.layerMemory,
      UsageMeterStore.layerMemory,
      FeatureGateStore.layerMemory,
      Transactor.layerMemory,
      RuntimeSessionStore.layerMemory,
      ApprovalStore.layerMemory,
      SuppressionStore.layerMemory,
      ImportJobStore.layerMemory
    )
  )
)
