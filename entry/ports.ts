/**
 * `accord/ports`: the services the engine needs (every effect core needs, time, randomness, crypto,
 * storage and outbound HTTP, is a service, a port, that it declares), one namespace per port (their
 * memory implementations are in `accord/memory`). Implement these to bring your own storage.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as AccountProfileStore from "../core/ports/AccountProfileStore.ts"
export * as ActionChanges from "../core/ports/ActionChanges.ts"
export * as ActionLedger from "../core/ports/ActionLedger.ts"
export * as ApiKeyStore from "../core/ports/ApiKeyStore.ts"
export * as ApprovalNotifier from "../core/ports/ApprovalNotifier.ts"
export * as ApprovalStore from "../core/ports/ApprovalStore.ts"
export * as Batcher from "../core/ports/Batcher.ts"
export * as CapabilityRegistry from "../core/ports/CapabilityRegistry.ts"
export * as CatalogStore from "../core/ports/CatalogStore.ts"
export * as ConnectionStore from "../core/ports/ConnectionStore.ts"
export * as ConnectorTransport from "../core/ports/ConnectorTransport.ts"
export * as Crypto from "../core/ports/Crypto.ts"
export * as DispatchSignal from "../core/ports/DispatchSignal.ts"
export * as EventStore from "../core/ports/EventStore.ts"
export * as FeatureGateStore from "../core/ports/FeatureGateStore.ts"
export * as ImportJobStore from "../core/ports/ImportJobStore.ts"
export * as IngestWriter from "../core/ports/IngestWriter.ts"
export * as NonceStore from "../core/ports/NonceStore.ts"
export * as Outbox from "../core/ports/Outbox.ts"
export * as Readiness from "../core/ports/Readiness.ts"
export * as RuntimeSessionStore from "../core/ports/RuntimeSessionStore.ts"
export * as SecretVault from "../core/ports/SecretVault.ts"
export * as StorageError from "../core/ports/StorageError.ts"
export * as StoragePorts from "../core/ports/StoragePorts.ts"
export * as SuppressionStore from "../core/ports/SuppressionStore.ts"
export * as Transactor from "../core/ports/Transactor.ts"
export * as UsageMeterStore from "../core/ports/UsageMeterStore.ts"
