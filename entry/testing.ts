/**
 * `accord/testing`: the storage ports' contract suites, as functions an adapter author calls from
 * their own vitest file (`StoragePorts.suite` runs them all against one adapter; each port's
 * `suite` runs its own). They register `@effect/vitest` tests, so `vitest`, `@effect/vitest` and
 * `fast-check` (optional peer dependencies) must be installed beside accord.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as AccountProfileStore from "../adapters/testing/AccountProfileStore.ts"
export * as ActionLedger from "../adapters/testing/ActionLedger.ts"
export * as ApiKeyStore from "../adapters/testing/ApiKeyStore.ts"
export * as ApprovalNotifier from "../adapters/testing/ApprovalNotifier.ts"
export * as ApprovalStore from "../adapters/testing/ApprovalStore.ts"
export * as CapabilityRegistry from "../adapters/testing/CapabilityRegistry.ts"
export * as CatalogStore from "../adapters/testing/CatalogStore.ts"
export * as ConnectionStore from "../adapters/testing/ConnectionStore.ts"
export * as Erasure from "../adapters/testing/Erasure.ts"
export * as EventStore from "../adapters/testing/EventStore.ts"
export * as FeatureGateStore from "../adapters/testing/FeatureGateStore.ts"
export * as IngestWriter from "../adapters/testing/IngestWriter.ts"
export * as IntakeKeys from "../adapters/testing/IntakeKeys.ts"
export * as NonceStore from "../adapters/testing/NonceStore.ts"
export * as Outbox from "../adapters/testing/Outbox.ts"
export * as RuntimeSessionStore from "../adapters/testing/RuntimeSessionStore.ts"
export * as SecretVault from "../adapters/testing/SecretVault.ts"
export * as StoragePorts from "../adapters/testing/StoragePorts.ts"
export * as Transactor from "../adapters/testing/Transactor.ts"
export * as UsageMeterStore from "../adapters/testing/UsageMeterStore.ts"
export * as ImportJobStore from "../adapters/testing/ImportJobStore.ts"
