/**
 * `accord/sdk`: the Direct API client for customer backends (spec direct-api-ingestion.md: "send
 * one event per request with the secret ingest key"), the action-intake client for trusted server
 * callers, the feature-access event builder, and the feature-gate body schema the service validates.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/sdk/DirectApiClient.ts"
/**
 * The action-intake client for trusted server callers (`ActionClient.make`, `ActionClient.layer`):
 * submits already-authorized actions, always with an `Idempotency-Key`; `ActionClient.makeActionClient`
 * is the same client with Promises, `ActionClient.ActionRefused` and `ActionClient.ActionUnavailable`
 * its errors.
 */
export * as ActionClient from "../adapters/sdk/ActionClient.ts"
/** The body `ActionClient.submit` sends (`POST …/action-requests`). */
export { ActionIntake } from "../core/connector/Action.ts"
export {
  buildFeatureAccessEvent,
  featureAccessEventId,
  featureAccessEventName,
  type FeatureAccessInput
} from "../core/ingest/FeatureAccess.ts"
/** The body of `POST …/feature-gates`: lets a client check a feature key before sending it. */
export { CreateGateBody } from "../adapters/http/api/FeatureGatesApi.ts"
