/**
 * `accord/sdk`: the Direct API client for customer backends (spec direct-api-ingestion.md: "send
 * one event per request with the secret ingest key"), the feature-access event builder, and the
 * feature-gate body schema the service validates.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "../adapters/sdk/DirectApiClient.ts"
/** @since 0.1.0 */
export {
  buildFeatureAccessEvent,
  featureAccessEventId,
  featureAccessEventName,
  type FeatureAccessInput
} from "../core/ingest/FeatureAccess.ts"
/** The body of `POST …/gates`: lets a client check a feature key before sending it. @since 0.1.0 */
export { CreateGateBody } from "../adapters/http/routes/FeatureGates.ts"
