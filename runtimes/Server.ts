/**
 * The server, composed once for every runtime, as a layer graph: configuration (`adapters/config`),
 * then layers (storage with its migrations and `Readiness` from `adapters/sql`, the stores, crypto,
 * transport), then serve (the HTTP app on the runtime's own HTTP server). What it says while
 * starting is worded in `adapters/config/StartupLog.ts`. A runtime shell
 * (`runtimes/<runtime>/main.ts`) only supplies that HTTP server and its `runMain`.
 *
 * Shutdown (SIGTERM/SIGINT, via `runMain`): the main fiber is interrupted and everything started
 * here is closed in reverse order: first in-flight requests are drained (`Drain`), then the app
 * stops being served, then the listener closes, then storage.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Schema from "effect/Schema"
import * as AccordConfig from "../adapters/config/AccordConfig.ts"
import * as StartupLog from "../adapters/config/StartupLog.ts"
import * as NodeCrypto from "../adapters/crypto/NodeCrypto.ts"
import * as App from "../adapters/http/App.ts"
import * as Drain from "../adapters/http/Drain.ts"
import { FastRoutes, makeIngestRoute } from "../adapters/http/NodeIngest.ts"
import type * as Readiness from "../core/ports/Readiness.ts"
import * as DnsResolver from "../adapters/transport/DnsResolver.ts"
import * as Transport from "../adapters/transport/Transport.ts"
import * as Database from "../adapters/sql/Database.ts"
import * as MasterKeyCheck from "../adapters/sql/MasterKeyCheck.ts"
import * as Migrations from "../adapters/sql/Migrations.ts"
import * as HttpTracing from "../adapters/telemetry/HttpTracing.ts"
import * as Instrumented from "../adapters/telemetry/Instrumented.ts"
import * as Otlp from "../adapters/telemetry/Otlp.ts"
import * as SqlReadiness from "../adapters/sql/Readiness.ts"
import { migrations } from "../adapters/sql/schema/Migrations.ts"
import * as SqlStorage from "../adapters/sql/Storage.ts"
import * as SqlSupport from "../adapters/sql/SqlSupport.ts"
import { layerOverStorage } from "./Services.ts"
import * as ApiKeyStore from "../core/ports/ApiKeyStore.ts"
import { bootstrapWorkspace } from "../core/access/ApiKeys.ts"
import { randomUuid } from "../core/protocol/Uuid.ts"
import * as Committer from "../core/ingest/Committer.ts"
import * as IngestRate from "../core/ingest/IngestRate.ts"
import * as Retention from "../core/ingest/Retention.ts"
import * as Suppression from "../core/ingest/Suppression.ts"
import { ApprovalLimits } from "../core/approval/Limits.ts"
import type { Cipher } from "../core/protocol/Cipher.ts"
import * as ConnectionMaintenance from "../core/connector/ConnectionMaintenance.ts"
import { runDispatcher } from "../core/connector/Dispatcher.ts"
import { runReconciler } from "../core/connector/Reconciler.ts"
import { runEvidenceWatcher } from "../core/connector/EvidenceWatcher.ts"
import type { Resolver } from "../core/connector/Endpoint.ts"
import type { ConnectorTransport } from "../core/ports/ConnectorTransport.ts"
import type { Crypto } from "../core/ports/Crypto.ts"
import * as ActionChanges from "../adapters/memory/ActionChanges.ts"
import * as DispatchSignal from "../adapters/memory/DispatchSignal.ts"
import type { StoragePorts } from "../core/ports/StoragePorts.ts"
import * as Metrics from "../core/telemetry/Metrics.ts"

/**
 * The server could not start (storage, listener, bootstrap). `reason` is one line, without secrets.
 */
export class StartupError extends Schema.TaggedError<StartupError>()("StartupError", { reason: Schema.String }) {
  override get message(): string {
    return this.reason
  }
}

/**
 * What the storage layer provides to the app.
 */
export type StorageServices = StoragePorts | Readiness.Readiness

/**
 * The one place storage is chosen: the SQL database (PostgreSQL with `DATABASE_URL`, else PGlite in
 * the data directory) is opened and migrated, every store runs on it, and `Readiness` checks it.
 * The `Cipher` seals connector secrets before they are stored (docs/decisions.md, "Secret handling").
 */
export const storageLayer = (
  config: AccordConfig.AccordConfig
): Layer.Layer<StorageServices, StartupError, Cipher | Crypto> =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const storage = Database.storageFrom(config)
      yield* Effect.logInfo(`storage: ${Database.describeStorage(storage)}`)
      if (storage._tag === "Pglite" && !config.dataDir.startsWith("memory://"))
        yield* AccordConfig.securePrivateDirectory(config.dataDir).pipe(
          Effect.mapError((error) => new StartupError({ reason: error.message }))
        )
      if (Database.createsEmbeddedDatabase(storage)) yield* Effect.logInfo(StartupLog.creatingEmbeddedDatabase)
      const sql = Database.layer(storage)
      // Busy ingest keys are authenticated from a short-lived cache (see `withLookupCache`).
      const cachedKeys = Layer.effect(
        ApiKeyStore.ApiKeyStore,
        Effect.map(ApiKeyStore.ApiKeyStore, (store) => ApiKeyStore.withLookupCache(store))
      )
      const stores = Layer.mergeAll(cachedKeys.pipe(Layer.provideMerge(SqlStorage.layer)), SqlReadiness.layer)
      return stores.pipe(
        Layer.provide(prepareDatabase(config)),
        Layer.provideMerge(sql),
        Layer.mapError(
          (error) =>
            new StartupError({
              reason:
                error._tag === "MasterKeyMismatch"
                  ? StartupLog.masterKeyMismatch(config)
                  : `storage: ${error.message || error._tag}`
            })
        )
      )
    })
  )

/**
 * Before the stores: the migrations (saying which ran; the stores' own run then finds none
 * pending), the master-key guard, and the next-step hint when no workspace exists.
 */
const prepareDatabase = (config: AccordConfig.AccordConfig) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      yield* StartupLog.log(StartupLog.migrated(yield* Migrations.run(migrations)))
      yield* StartupLog.log(StartupLog.masterKeyChecked(yield* MasterKeyCheck.check))
      if (Option.isNone(config.bootstrap) && !(yield* Database.hasWorkspace))
        yield* Effect.logInfo(StartupLog.noAdminKeyHint)
    })
  )

/**
 * Outbound connector calls: the HTTP transport (addresses checked again at connect time, against DNS
 * rebinding) under the configured endpoint policy.
 */
export const transportLayer = (config: AccordConfig.AccordConfig): Layer.Layer<ConnectorTransport> =>
  Transport.layer({ allowInsecure: config.allowInsecureEndpoints })

/**
 * What tests and embedders may replace when starting the server.
 */
export interface StartOptions {
  /** The outbound transport; `transportLayer(config)` by default. */
  readonly transport?: Layer.Layer<ConnectorTransport>
  /** The DNS resolver endpoint validation uses; the system resolver by default. */
  readonly resolver?: Layer.Layer<Resolver>
  /** The handshake time-out of connection checks; the core default when absent. */
  readonly handshakeTimeoutMillis?: number
}

/** Every service the app, the workers and the scheduler run on, over the given storage. */
const servicesLayer = (
  config: AccordConfig.AccordConfig,
  masterKey: AccordConfig.MasterKey,
  storage: Layer.Layer<StorageServices, StartupError, Cipher | Crypto>,
  options: StartOptions
) => {
  const base = Layer.merge(NodeCrypto.layer, AccordConfig.layerCipher(masterKey))
  return Layer.mergeAll(
    Drain.layer,
    DispatchSignal.layerMemory,
    base,
    IngestRate.layerMemory,
    Layer.succeed(ApprovalLimits, config.approvalLimits),
    options.transport ?? transportLayer(config),
    options.resolver ?? DnsResolver.layer
  ).pipe(
    Layer.merge(
      Layer.merge(
        Committer.layer(),
        Suppression.layer.pipe(
          Layer.mapError((error) => new StartupError({ reason: `storage: ${error.message || error._tag}` }))
        )
      ).pipe(
        // Every applied transition wakes the status reads waiting on its action (long polls).
        Layer.provideMerge(
          layerOverStorage.pipe(Layer.provideMerge(ActionChanges.announcingOver(Layer.provide(storage, base))))
        )
      )
    ),
    // Connector metrics at the port boundary (calls in flight, retries, unknown outcomes, completions).
    Instrumented.layer
  )
}

/** The workspace, administrator key and ingest key of `ACCORD_BOOTSTRAP_*`, when set (created if absent). */
const bootstrap = (config: AccordConfig.AccordConfig) =>
  Option.match(config.bootstrap, {
    onNone: () => Effect.void,
    onSome: ({ adminKey, ingestKey, workspaceId }) =>
      bootstrapWorkspace(workspaceId, adminKey, Option.getOrUndefined(ingestKey)).pipe(
        Effect.mapError((error) => new StartupError({ reason: StartupLog.bootstrapFailure(error) })),
        Effect.flatMap((outcome) => StartupLog.log(StartupLog.bootstrapped(workspaceId, outcome)))
      )
  })

const appOptions = (config: AccordConfig.AccordConfig, options: StartOptions): App.AppOptions => ({
  maxBodyBytes: config.maxBodyBytes,
  importMaxBytes: config.importMaxBytes,
  eventRetention: config.eventRetention,
  rateLimitPerSecond: config.rateLimitPerSecond,
  allowInsecureEndpoints: config.allowInsecureEndpoints,
  metricsToken: config.metricsToken,
  runtimeLimits: config.runtimeLimits,
  ...(options.handshakeTimeoutMillis === undefined ? {} : { handshakeTimeoutMillis: options.handshakeTimeoutMillis })
})

/**
 * How much of the shutdown deadline (`ACCORD_SHUTDOWN_TIMEOUT`) the drain of in-flight requests
 * may take: all but half of it, at most 2 s, kept for closing what is left once it ends (the
 * connections, the workers, storage, the process's own exit), which takes most of a second on a
 * busy machine.
 */
export const drainMillis = (shutdownTimeoutMillis: number): number =>
  shutdownTimeoutMillis - Math.min(2_000, Math.floor(shutdownTimeoutMillis / 2))

/**
 * Starts Accord in the current scope and returns where it listens; closing the scope drains and
 * stops it. `storage` defaults to `storageLayer(config)` (tests pass memory layers). The connection
 * scheduler (checks and revision retirement) runs in the background until the scope closes.
 */
export const start = (
  config: AccordConfig.AccordConfig,
  httpServer: Layer.Layer<HttpServer.HttpServer, ServeError, FastRoutes | Drain.Drain>,
  storage: Layer.Layer<StorageServices, StartupError, Cipher | Crypto> = storageLayer(config),
  options: StartOptions = {}
): Effect.Effect<HttpServer.Address, StartupError | AccordConfig.InvalidConfig, Scope.Scope> =>
  Effect.gen(function* () {
    // configuration
    const masterKey = yield* Effect.provide(AccordConfig.resolveMasterKey(config), NodeCrypto.layer)
    yield* StartupLog.log(StartupLog.masterKeyWarnings(masterKey))
    yield* StartupLog.log(StartupLog.masterKeyPlacement(config, masterKey))

    yield* Metrics.preregister
    yield* SqlSupport.preregisterFaults
    // layers, then the background work on them
    const services = yield* Layer.build(servicesLayer(config, masterKey, storage, options))
    // every start check on storage (the master-key guard among them) has passed: a new key is kept
    yield* AccordConfig.persistMasterKey(masterKey)
    const timeout =
      options.handshakeTimeoutMillis === undefined ? {} : { timeoutMillis: options.handshakeTimeoutMillis }
    yield* Effect.forkScoped(
      ConnectionMaintenance.scheduler({
        reconciliationWindowMillis: config.reconciliationWindowMillis,
        ...timeout
      }).pipe(Effect.provide(services))
    )
    yield* Effect.provide(bootstrap(config), services)
    // Event retention: partitions prepared ahead and expired events removed, at start and hourly.
    yield* Effect.forkScoped(
      Retention.scheduler({ defaultRetention: config.eventRetention }).pipe(Effect.provide(services))
    )
    // The node:http dispatcher answers the ingest endpoint through its direct route, with the
    // same pipeline as the app.
    const ingestRoute = yield* makeIngestRoute({ rateLimitPerSecond: config.rateLimitPerSecond }).pipe(
      Effect.provide(services)
    )
    const drain = Context.get(services, Drain.Drain)
    const server = yield* Layer.build(
      Layer.provide(httpServer, Layer.merge(Layer.succeed(FastRoutes, ingestRoute), Layer.succeed(Drain.Drain, drain)))
    ).pipe(Effect.mapError((error) => new StartupError({ reason: StartupLog.listenFailure(config, error.cause) })))
    // Payment reconciliation reads queued by completions, performed until the scope closes.
    yield* runReconciler({ owner: `reconcile-${yield* Effect.provide(randomUuid, services)}` }).pipe(
      Effect.provide(services)
    )
    // Evidence a completion pointed to before the service held it (a Direct API event), looked for again.
    yield* runEvidenceWatcher({ owner: `evidence-${yield* Effect.provide(randomUuid, services)}` }).pipe(
      Effect.provide(services)
    )
    // The dispatcher delivers queued actions until the scope closes; intake wakes it.
    yield* runDispatcher({
      owner: `dispatch-${yield* Effect.provide(randomUuid, services)}`,
      concurrency: config.dispatchConcurrency
    }).pipe(Effect.provide(services))

    // serve
    const app = yield* HttpTracing.tracedWhenRecorded(App.make(appOptions(config, options)))
    yield* HttpServer.serveEffect(app).pipe(
      HttpTracing.withoutPlatformSpans,
      Effect.provide(Context.merge(services, server))
    )
    // Added after serving started, so it runs first when the scope closes. The drain ends early
    // enough for the rest of the stop (connections, listener, workers, storage) to fit in the
    // deadline too.
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(
        Effect.logInfo("shutting down: draining in-flight requests"),
        drain.drain(drainMillis(config.shutdownTimeoutMillis))
      )
    )
    const address = Context.get(server, HttpServer.HttpServer).address
    yield* Effect.logInfo(`Accord listening on ${HttpServer.formatAddress(address)}`)
    yield* StartupLog.log(StartupLog.listening(config, masterKey))
    yield* StartupLog.log(StartupLog.telemetry(config))
    return address
  })

/**
 * Builds a runtime's HTTP server listening where the configuration says.
 */
export type HttpServerFactory = (listen: {
  readonly port: number
  readonly host: string
  readonly maxConnections: number
}) => Layer.Layer<HttpServer.HttpServer, ServeError, FastRoutes | Drain.Drain>

const logfmt = Logger.withConsoleLog(Logger.logfmtLogger)

/** One logfmt line per event, whatever logger `runMain` installed. */
const withServerLogger = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locallyWith(self, FiberRef.currentLoggers, (loggers) =>
    loggers.pipe(HashSet.remove(Logger.defaultLogger), HashSet.remove(Logger.prettyLoggerDefault), HashSet.add(logfmt))
  )

/** A failed start, in plain lines; anything else is a crash and keeps its trace. */
const reportFailure = (cause: Cause.Cause<StartupError | AccordConfig.InvalidConfig>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    return Effect.forEach(StartupLog.startFailure(failure.value), (line) => Console.error(line), { discard: true })
  }
  return Console.error(`Accord stopped on an unexpected error:\n${Cause.pretty(cause)}`)
}

/**
 * The whole server program for `runMain`: reads the configuration, starts, runs until interrupted.
 */
export const main = (httpServer: HttpServerFactory): Effect.Effect<never, StartupError | AccordConfig.InvalidConfig> =>
  Effect.gen(function* () {
    const config = yield* AccordConfig.load
    // `scoped` closes the scope (drain, listener, storage) before `onInterrupt` logs the last line.
    // The OTLP exporters (when configured) outlive the server's scope, so its last spans are sent.
    return yield* Effect.scoped(Effect.zipRight(start(config, httpServer(config)), Effect.never)).pipe(
      Effect.provide(Otlp.layerFromConfig(config.otlp)),
      Effect.onInterrupt(() => Effect.logInfo(StartupLog.stopped)),
      Logger.withMinimumLogLevel(config.logLevel)
    )
  }).pipe(Effect.tapErrorCause(reportFailure), withServerLogger)

/**
 * `runMain` options for `main`: it reports its own failures (without stack traces) and logs logfmt.
 */
export const runMainOptions: { readonly disableErrorReporting: boolean; readonly disablePrettyLogger: boolean } = {
  disableErrorReporting: true,
  disablePrettyLogger: true
}

/** A request handler of the Fetch API: `Request` in, `Response` out. */
export type FetchHandler = (request: Request) => Promise<Response>

/** Where a mounted service "listens": inside its host's server, at no port of its own. */
const mountedAddress: HttpServer.Address = { _tag: "TcpAddress", hostname: "mounted", port: 0 }

/**
 * Starts the service like `start`, but serves it through the host's own HTTP server instead of a
 * listener of its own: the answer is a Fetch handler for the service's routes (paths as the service
 * defines them; the host strips its mount prefix, as Hono's `mount` and Express's `use` do). The
 * workers, the drain and storage are the same as `start`'s, closed with the scope.
 */
export const mount = (
  config: AccordConfig.AccordConfig,
  storage: Layer.Layer<StorageServices, StartupError, Cipher | Crypto> = storageLayer(config),
  options: StartOptions = {}
): Effect.Effect<FetchHandler, StartupError | AccordConfig.InvalidConfig, Scope.Scope> =>
  Effect.gen(function* () {
    const served = yield* Deferred.make<FetchHandler>()
    const server = Layer.succeed(
      HttpServer.HttpServer,
      HttpServer.make({
        address: mountedAddress,
        serve: (app, middleware) =>
          Effect.flatMap(Effect.runtime<never>(), (runtime) =>
            Deferred.succeed(served, HttpApp.toWebHandlerRuntime(runtime)(app as HttpApp.Default, middleware))
          )
      })
    )
    yield* start(config, server, storage, options)
    return yield* Deferred.await(served)
  })

/** The service mounted in a host's HTTP server (`mountService`). */
export interface MountedService {
  /** Answers one request to the service, its path relative to the mount point. */
  readonly fetch: FetchHandler
  /** Stops the service: drains in-flight requests, stops its workers, releases storage. */
  readonly close: () => Promise<void>
}

/**
 * What `mount` and `mountService` may replace: the configuration, the storage and start-up options.
 */
export interface MountOptions {
  /** The configuration; `AccordConfig.load` (the environment) by default. */
  readonly config?: AccordConfig.AccordConfig
  /** The storage; `storageLayer(config)` (PostgreSQL or embedded PGlite) by default. */
  readonly storage?: Layer.Layer<StorageServices, StartupError, Cipher | Crypto>
  /** What tests and embedders may replace (transport, resolver). */
  readonly start?: StartOptions
}

/**
 * `mount` for hosts written with Promises: starts the service (logging logfmt lines as the server
 * does) and answers its Fetch handler and `close`; a failed start rejects with the start-up error
 * (its message says what to fix) after releasing whatever had started.
 */
export const mountService = async (options: MountOptions = {}): Promise<MountedService> => {
  const scope = Effect.runSync(Scope.make())
  const program = Effect.gen(function* () {
    const config = options.config ?? (yield* AccordConfig.load)
    return yield* mount(config, options.storage ?? storageLayer(config), options.start ?? {}).pipe(
      Logger.withMinimumLogLevel(config.logLevel)
    )
  }).pipe(Scope.extend(scope), withServerLogger)
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    await Effect.runPromise(Scope.close(scope, exit))
    throw Cause.squash(exit.cause)
  }
  return { fetch: exit.value, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}
