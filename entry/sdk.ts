/**
 * `accord/sdk`: the Direct API client for customer backends (spec direct-api-ingestion.md: "send
 * one event per request with the secret ingest key"), the action-intake client for trusted server
 * callers, the feature-access event builder, and the feature-gate body schema the service validates.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "../adapters/sdk/DirectApiClient.ts"
/**
 * The action-intake client for trusted server callers (`ActionClient.make`, `ActionClient.layer`):
 * submits already-authorized actions, always with an `Idempotency-Key`.
 *
 * @since 0.1.0
 */
export * as ActionClient from "../adapters/sdk/ActionClient.ts"
/** @since 0.1.0 */
export {
  type ActionClientError,
  type ActionClientOptions,
  ActionRefused,
  Actions,
  type ActionStatus,
  type ActionSubmitted,
  ActionUnavailable,
  makeActionClient,
  type SubmitOptions
} from "../adapters/sdk/ActionClient.ts"
/** The body `ActionClient.submit` sends (`POST …/action-requests`). @since 0.1.0 */
export { ActionIntake } from "../core/connector/Action.ts"
/** @since 0.1.0 */
export {
  buildFeatureAccessEvent,
  featureAccessEventId,
  featureAccessEventName,
  type FeatureAccessInput
} from "../core/ingest/FeatureAccess.ts"
/** The body of `POST …/gates`: lets a client check a feature key before sending it. @since 0.1.0 */
export { CreateGateBody } from "../adapters/http/routes/FeatureGates.ts"
