/**
 * `accord/server`: the deployable server for embedders who serve it themselves: the
 * platform-agnostic HTTP app (`App`), the `node:http` server layer (`NodeServer`) and the composed
 * start-up (`Server.start`, `Server.main`: configuration, storage, stores, app) and what it builds
 * over the stores (`Services.layerOverStorage`).
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as App from "../adapters/http/App.ts"
export * as NodeServer from "../adapters/http/NodeServer.ts"
export * as Server from "../runtimes/Server.ts"
export * as Services from "../runtimes/Services.ts"

/** What the app's signatures name: its problem documents, error map, drain, fast ingest route, paging. */
export * as Problem from "../adapters/http/Problem.ts"
export * as ErrorMap from "../adapters/http/ErrorMap.ts"
export * as Drain from "../adapters/http/Drain.ts"
export * as RuntimeGuard from "../adapters/http/RuntimeGuard.ts"
export * as NodeIngest from "../adapters/http/NodeIngest.ts"
export * as Paging from "../adapters/http/Paging.ts"
export * as Answer from "../adapters/http/Answer.ts"
/** The HTTP API declarations the route groups implement (paths, schemas, credentials). */
export * as ApiCommon from "../adapters/http/api/Common.ts"
export * as ApprovalsApi from "../adapters/http/api/ApprovalsApi.ts"

/** The app's route groups, each with the services and options it needs. */
export * as AccountsRoutes from "../adapters/http/routes/Accounts.ts"
export * as ActionRequestsRoutes from "../adapters/http/routes/ActionRequests.ts"
export * as ApiKeysRoutes from "../adapters/http/routes/ApiKeys.ts"
export * as CatalogRoutes from "../adapters/http/routes/Catalog.ts"
export * as ConnectorRoutes from "../adapters/http/routes/Connector.ts"
export * as EventsRoutes from "../adapters/http/routes/Events.ts"
export * as FeatureGatesRoutes from "../adapters/http/routes/FeatureGates.ts"
export * as HealthRoutes from "../adapters/http/routes/Health.ts"
export * as IngestRoutes from "../adapters/http/routes/Ingest.ts"
export * as ImportRoutes from "../adapters/http/routes/Imports.ts"
export * as MetricsRoutes from "../adapters/http/routes/Metrics.ts"
export * as PrivacyRoutes from "../adapters/http/routes/Privacy.ts"
export * as RetentionRoutes from "../adapters/http/routes/Retention.ts"
export * as RuntimeRoutes from "../adapters/http/routes/Runtime.ts"
export * as RuntimeSessionsRoutes from "../adapters/http/routes/RuntimeSessions.ts"
