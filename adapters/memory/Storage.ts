/**
 * Every storage port in memory: for tests and for embedding without persistence. The action ledger
 * and the outbox share one table so their combined writes stay atomic.
 *
 * @since 0.1.0
 */
import * as Layer from "effect/Layer"
import * as AccountProfileStore from "../../core/AccountProfileStore.ts"
import * as ActionLedger from "../../core/ActionLedger.ts"
import * as ApiKeyStore from "../../core/ApiKeyStore.ts"
import * as CapabilityRegistry from "../../core/CapabilityRegistry.ts"
import type { Cipher } from "../../core/Cipher.ts"
import * as ConnectionStore from "../../core/ConnectionStore.ts"
import * as EventStore from "../../core/EventStore.ts"
import * as FeatureGateStore from "../../core/FeatureGateStore.ts"
import * as IngestWriter from "../../core/ingest/IngestWriter.ts"
import * as NonceStore from "../../core/NonceStore.ts"
import * as SecretVault from "../../core/SecretVault.ts"
import type { StoragePorts } from "../../core/StoragePorts.ts"
import * as Transactor from "../../core/Transactor.ts"
import * as UsageMeterStore from "../../core/UsageMeterStore.ts"

/**
 * @since 0.1.0
 */
export const layer: Layer.Layer<StoragePorts, never, Cipher> = IngestWriter.layerFromStores.pipe(Layer.provideMerge(Layer.mergeAll(
  NonceStore.layerMemory,
  ApiKeyStore.layerMemory,
  SecretVault.layerMemory,
  ConnectionStore.layerMemory,
  CapabilityRegistry.layerMemory,
  ActionLedger.layerMemory,
  EventStore.layerMemory,
  AccountProfileStore.layerMemory,
  UsageMeterStore.layerMemory,
  FeatureGateStore.layerMemory,
  Transactor.layerMemory
)))
