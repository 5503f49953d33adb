/**
 * Every storage port in memory: for tests and for embedding without persistence. The action ledger
 * and the outbox share one table so their combined writes stay atomic.
 */
import * as Layer from "effect/Layer"
import * as AccountProfileStore from "../../core/ports/AccountProfileStore.ts"
import * as ActionLedger from "../../core/ports/ActionLedger.ts"
import * as ApiKeyStore from "../../core/ports/ApiKeyStore.ts"
import * as ApprovalNotifier from "../../core/ports/ApprovalNotifier.ts"
import * as ApprovalStore from "../../core/ports/ApprovalStore.ts"
import * as CapabilityRegistry from "../../core/ports/CapabilityRegistry.ts"
import * as CatalogStore from "../../core/ports/CatalogStore.ts"
import type { Cipher } from "../../core/protocol/Cipher.ts"
import * as ConnectionStore from "../../core/ports/ConnectionStore.ts"
import * as EventStore from "../../core/ports/EventStore.ts"
import * as FeatureGateStore from "../../core/ports/FeatureGateStore.ts"
import * as RuntimeSessionStore from "../../core/ports/RuntimeSessionStore.ts"
import * as SecretVault from "../../core/ports/SecretVault.ts"
import * as Revalidation from "../../core/connector/Revalidation.ts"
import * as StoreWriter from "../../core/ingest/StoreWriter.ts"
import type { StoragePorts } from "../../core/ports/StoragePorts.ts"
import * as Transactor from "../../core/ports/Transactor.ts"
import * as UsageMeterStore from "../../core/ports/UsageMeterStore.ts"

/**
 * Every storage port in memory, and the stored-catalog `Revalidation` over them (an embedding host
 * with its own revalidation merges its layer after this one, which replaces it).
 */
export const layer: Layer.Layer<StoragePorts, never, Cipher> = Layer.mergeAll(
  StoreWriter.layerFromStores,
  Revalidation.layerStoredCatalog,
  ApprovalNotifier.layerPickup
).pipe(
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
      ApprovalStore.layerMemory
    )
  )
)
