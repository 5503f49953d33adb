/**
 * `accord/memory`: every port's memory implementation, one namespace per port (`make`,
 * `layerMemory`), and `layer`, every storage port in memory at once; for tests and for embedding
 * without persistence.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/memory/Storage.ts"
export * as AccountProfileStore from "../adapters/memory/AccountProfileStore.ts"
export * as ActionChanges from "../adapters/memory/ActionChanges.ts"
export * as ActionLedger from "../adapters/memory/ActionLedger.ts"
export * as ApiKeyStore from "../adapters/memory/ApiKeyStore.ts"
export * as ApprovalStore from "../adapters/memory/ApprovalStore.ts"
export * as CapabilityRegistry from "../adapters/memory/CapabilityRegistry.ts"
export * as CatalogStore from "../adapters/memory/CatalogStore.ts"
export * as ConnectionStore from "../adapters/memory/ConnectionStore.ts"
export * as DispatchSignal from "../adapters/memory/DispatchSignal.ts"
export * as EventStore from "../adapters/memory/EventStore.ts"
export * as FeatureGateStore from "../adapters/memory/FeatureGateStore.ts"
export * as NonceStore from "../adapters/memory/NonceStore.ts"
export * as Outbox from "../adapters/memory/Outbox.ts"
export * as Readiness from "../adapters/memory/Readiness.ts"
export * as RuntimeSessionStore from "../adapters/memory/RuntimeSessionStore.ts"
export * as SecretVault from "../adapters/memory/SecretVault.ts"
export * as SuppressionStore from "../adapters/memory/SuppressionStore.ts"
export * as Transactor from "../adapters/memory/Transactor.ts"
export * as UsageMeterStore from "../adapters/memory/UsageMeterStore.ts"
export * as ImportJobStore from "../adapters/memory/ImportJobStore.ts"
