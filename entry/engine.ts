/**
 * `accord/engine`: the service side of the connector (spec customer-action-connector.md: "the
 * service dispatches one authorized action, verifies the completion, reconciles payments") and of
 * Direct API ingestion (spec direct-api-ingestion.md), and the approval domain (runtime sessions,
 * approvals, commitments, token pickup), one namespace per public module. Storage and
 * other ports are in `accord/ports`; ready-made adapters in `accord/sql`, `accord/memory`, …
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as ActionState from "../core/connector/ActionState.ts"
export * as CompletionIntake from "../core/connector/CompletionIntake.ts"
export * as Connection from "../core/connector/Connection.ts"
export * as ConnectionCheck from "../core/connector/ConnectionCheck.ts"
export * as ConnectionMaintenance from "../core/connector/ConnectionMaintenance.ts"
export * as Action from "../core/connector/Action.ts"
export * as Capability from "../core/connector/Capability.ts"
export * as CompletionIdentity from "../core/connector/CompletionIdentity.ts"
export * as Intake from "../core/connector/Intake.ts"
export * as Dispatcher from "../core/connector/Dispatcher.ts"
export * as Judgement from "../core/connector/Judgement.ts"
export * as Revisions from "../core/connector/Revisions.ts"
export * as Endpoint from "../core/connector/Endpoint.ts"
export * as Evidence from "../core/connector/Evidence.ts"
export * as ObservedEvidence from "../core/connector/ObservedEvidence.ts"
export * as EvidenceWatcher from "../core/connector/EvidenceWatcher.ts"
export * as Revalidation from "../core/connector/Revalidation.ts"
export * as Catalog from "../core/catalog/Catalog.ts"
export * as Publish from "../core/catalog/Publish.ts"
export * as IntakeKey from "../core/connector/IntakeKey.ts"
export * as Reconciler from "../core/connector/Reconciler.ts"

export * as ApiKeys from "../core/access/ApiKeys.ts"

export * as ActionStatus from "../core/approval/ActionStatus.ts"
export * as Approvals from "../core/approval/Approvals.ts"
export * as ApprovalLimits from "../core/approval/Limits.ts"
export * as Commitment from "../core/approval/Commitment.ts"
export * as RuntimeSession from "../core/approval/RuntimeSession.ts"
export * as TokenPickup from "../core/approval/TokenPickup.ts"

export * as Ingest from "../core/ingest/Ingest.ts"
export * as Accept from "../core/ingest/Accept.ts"
export * as Import from "../core/ingest/Import.ts"
export * as Committer from "../core/ingest/Committer.ts"
export * as StoreWriter from "../core/ingest/StoreWriter.ts"
export * as Event from "../core/ingest/Event.ts"
export * as IngestRate from "../core/ingest/IngestRate.ts"
export * as Normalize from "../core/ingest/Normalize.ts"
export * as FeatureAccess from "../core/ingest/FeatureAccess.ts"
export * as UsageRollup from "../core/ingest/UsageRollup.ts"
export * as Suppression from "../core/ingest/Suppression.ts"
export * as Erasure from "../core/privacy/Erasure.ts"
export * as Export from "../core/privacy/Export.ts"
