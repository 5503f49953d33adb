/**
 * `accord/sdk`: the Direct API client for customer backends (spec direct-api-ingestion.md: "send
 * one event per request with the secret ingest key"), the action-intake client for trusted server
 * callers and the feature-access event builder, one namespace per module:
 *
 * - `DirectApiClient`: `make`, `layer`, `layerConfig` (Effect) and `makeDirectApiClient` (Promises);
 * - `ActionClient`: submits already-authorized actions, always with an `Idempotency-Key` (`make`,
 *   `layer`, `makeActionClient`; errors `ActionRefused`, `ActionUnavailable`); the body it sends is
 *   `Action.ActionIntake` in `accord/engine`;
 * - `RuntimeClient`: the embedded runtime's action status with its runtime session token, read
 *   conditionally and polled until final as the service asks (`make`, `makeRuntimeClient`; errors
 *   `RuntimeRefused`, `RuntimeUnavailable`);
 * - `FeatureAccess`: the `entitlement_active` event builder and `FeatureKey`, the feature-key rule
 *   the service checks a feature gate against.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as DirectApiClient from "../adapters/sdk/DirectApiClient.ts"
export * as ActionClient from "../adapters/sdk/ActionClient.ts"
export * as RuntimeClient from "../adapters/sdk/RuntimeClient.ts"
export * as FeatureAccess from "../core/ingest/FeatureAccess.ts"
