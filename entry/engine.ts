/**
 * `accord/engine`: the service side of the connector (spec customer-action-connector.md: "the
 * service dispatches one authorized action, verifies the completion, reconciles payments") and of
 * Direct API ingestion (spec direct-api-ingestion.md), one namespace per public module. Storage and
 * other ports are in `accord/ports`; ready-made adapters in `accord/sql`, `accord/memory`, …
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as ActionState from "../core/connector/ActionState.ts"
/** @since 0.1.0 */
export * as CompletionIntake from "../core/connector/CompletionIntake.ts"
/** @since 0.1.0 */
export * as Connection from "../core/connector/Connection.ts"
/** @since 0.1.0 */
export * as ConnectionCheck from "../core/connector/ConnectionCheck.ts"
/** @since 0.1.0 */
export * as ConnectionMaintenance from "../core/connector/ConnectionMaintenance.ts"
/** @since 0.1.0 */
export * as Action from "../core/connector/Action.ts"
/** @since 0.1.0 */
export * as Capability from "../core/connector/Capability.ts"
/** @since 0.1.0 */
export * as CompletionIdentity from "../core/connector/CompletionIdentity.ts"
/** @since 0.1.0 */
export * as Intake from "../core/connector/Intake.ts"
/** @since 0.1.0 */
export * as Dispatcher from "../core/connector/Dispatcher.ts"
/** @since 0.1.0 */
export * as Judgement from "../core/connector/Judgement.ts"
/** @since 0.1.0 */
export * as Revisions from "../core/connector/Revisions.ts"
/** @since 0.1.0 */
export * as Endpoint from "../core/connector/Endpoint.ts"
/** @since 0.1.0 */
export * as Evidence from "../core/connector/Evidence.ts"
/** @since 0.1.0 */
export * as ObservedEvidence from "../core/connector/ObservedEvidence.ts"
/** @since 0.1.0 */
export * as EvidenceWatcher from "../core/connector/EvidenceWatcher.ts"
/** @since 0.1.0 */
export * as Revalidation from "../core/connector/Revalidation.ts"
/** @since 0.1.0 */
export * as Catalog from "../core/catalog/Catalog.ts"
/** @since 0.1.0 */
export * as Reconciler from "../core/connector/Reconciler.ts"

/** @since 0.1.0 */
export * as ApiKeys from "../core/access/ApiKeys.ts"

/** @since 0.1.0 */
export * as Ingest from "../core/ingest/Ingest.ts"
/** @since 0.1.0 */
export * as Accept from "../core/ingest/Accept.ts"
/** @since 0.1.0 */
export * as Committer from "../core/ingest/Committer.ts"
/** @since 0.1.0 */
export * as Event from "../core/ingest/Event.ts"
/** @since 0.1.0 */
export * as FeatureAccess from "../core/ingest/FeatureAccess.ts"
/** @since 0.1.0 */
export * as UsageRollup from "../core/ingest/UsageRollup.ts"
