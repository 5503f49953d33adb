/**
 * `accord/ports`: the services the engine needs (DESIGN "Layers": "Every effect it needs (time,
 * randomness, crypto, storage, outbound HTTP) is a service (a port) it declares"), one namespace
 * per port, each with its memory implementation. Implement these to bring your own storage.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as AccountProfileStore from "../core/ports/AccountProfileStore.ts"
/** @since 0.1.0 */
export * as ActionLedger from "../core/ports/ActionLedger.ts"
/** @since 0.1.0 */
export * as ApiKeyStore from "../core/ports/ApiKeyStore.ts"
/** @since 0.1.0 */
export * as Batcher from "../core/ports/Batcher.ts"
/** @since 0.1.0 */
export * as CapabilityRegistry from "../core/ports/CapabilityRegistry.ts"
/** @since 0.1.0 */
export * as CatalogStore from "../core/ports/CatalogStore.ts"
/** @since 0.1.0 */
export * as ConnectionStore from "../core/ports/ConnectionStore.ts"
/** @since 0.1.0 */
export * as ConnectorTransport from "../core/ports/ConnectorTransport.ts"
/** @since 0.1.0 */
export * as Crypto from "../core/ports/Crypto.ts"
/** @since 0.1.0 */
export * as DispatchSignal from "../core/ports/DispatchSignal.ts"
/** @since 0.1.0 */
export * as EventStore from "../core/ports/EventStore.ts"
/** @since 0.1.0 */
export * as FeatureGateStore from "../core/ports/FeatureGateStore.ts"
/** @since 0.1.0 */
export * as IngestWriter from "../core/ports/IngestWriter.ts"
/** @since 0.1.0 */
export * as NonceStore from "../core/ports/NonceStore.ts"
/** @since 0.1.0 */
export * as Outbox from "../core/ports/Outbox.ts"
/** @since 0.1.0 */
export * as SecretVault from "../core/ports/SecretVault.ts"
/** @since 0.1.0 */
export * as StorageError from "../core/ports/StorageError.ts"
/** @since 0.1.0 */
export * as StoragePorts from "../core/ports/StoragePorts.ts"
/** @since 0.1.0 */
export * as Transactor from "../core/ports/Transactor.ts"
/** @since 0.1.0 */
export * as UsageMeterStore from "../core/ports/UsageMeterStore.ts"
