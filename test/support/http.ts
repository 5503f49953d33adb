/**
 * Starts the real server composition (`runtimes/Server.ts` `start`) on Node's HTTP server on a
 * free loopback port, with memory storage, and captures its log lines so tests can check that no
 * secret is ever logged.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import type * as Scope from "effect/Scope"
import * as AccordConfig from "../../adapters/config/AccordConfig.ts"
import * as NodeServer from "../../adapters/http/NodeServer.ts"
import type * as Readiness from "../../core/ports/Readiness.ts"
import * as MemoryReadiness from "../../adapters/memory/Readiness.ts"
import * as MemoryStorage from "../../adapters/memory/Storage.ts"
import * as ApiKeyStore from "../../core/ports/ApiKeyStore.ts"
import * as MemoryApiKeyStore from "../../adapters/memory/ApiKeyStore.ts"
import * as Server from "../../runtimes/Server.ts"

export const workspaceId = "0b4c3f4e-8e0e-4a8e-9c35-5a3a7e0f1a11"
export const adminKey = "test-bootstrap-admin-key-0123456789abcdef"

export interface TestServer {
  readonly url: string
  readonly store: ApiKeyStore.ApiKeyStoreService
  /** Every log line so far, logfmt. */
  readonly logs: ReadonlyArray<string>
}

export const configFrom = (
  env: Record<string, string>
): Effect.Effect<AccordConfig.AccordConfig, AccordConfig.InvalidConfig> =>
  Effect.withConfigProvider(AccordConfig.load, ConfigProvider.fromMap(new Map(Object.entries(env))))

export const startServer = (options?: {
  readonly readiness?: Layer.Layer<Readiness.Readiness>
  readonly env?: Record<string, string>
  /** Wraps the memory store, e.g. to make an operation fail. */
  readonly store?: (store: ApiKeyStore.ApiKeyStoreService) => ApiKeyStore.ApiKeyStoreService
  /** `node`: the Node runtime's server, which answers the ingest route itself (`NodeServer`). */
  readonly server?: "platform" | "node"
}): Effect.Effect<TestServer, never, Scope.Scope> => {
  const logs: Array<string> = []
  const capture = Logger.make((entry) => {
    logs.push(Logger.logfmtLogger.log(entry))
  })
  return Effect.gen(function* () {
    const config = yield* configFrom({
      ACCORD_DATA_DIR: "memory://",
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey,
      ...options?.env
    })
    const store = MemoryApiKeyStore.make()
    // Memory storage for every port; the API key store is the test's own (later entries win).
    const storage = Layer.mergeAll(
      MemoryStorage.layer,
      Layer.succeed(ApiKeyStore.ApiKeyStore, options?.store?.(store) ?? store),
      options?.readiness ?? MemoryReadiness.layerMemory
    )
    const listen = { port: 0, host: "127.0.0.1" }
    const address = yield* Server.start(
      config,
      options?.server === "node" ? NodeServer.layerServer(listen) : NodeHttpServer.layerServer(createServer, listen),
      storage
    )
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return { url: `http://127.0.0.1:${address.port}`, store, logs }
  }).pipe(Effect.orDie, Effect.locally(FiberRef.currentLoggers, HashSet.make(capture)))
}

/**
 * Starts the real server composition on its default storage, PGlite in `dataDir` on disk, with the
 * test's bootstrap workspace and admin key, quietly (no log lines: a test may read the console);
 * answers its base URL. Closing the scope stops it and releases the data directory.
 */
export const startOnDisk = (
  dataDir: string
): Effect.Effect<string, Server.StartupError | AccordConfig.InvalidConfig, Scope.Scope> =>
  Effect.gen(function* () {
    const config = yield* configFrom({
      ACCORD_DATA_DIR: dataDir,
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey
    })
    const address = yield* Server.start(
      config,
      NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" })
    )
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return `http://127.0.0.1:${address.port}`
  }).pipe(Logger.withMinimumLogLevel(LogLevel.None))

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

/** One request; the body is read fully so the connection is free again. */
export const request = (url: string, init?: RequestInit): Effect.Effect<Reply> =>
  Effect.promise(async () => {
    const response = await fetch(url, init).catch((error) => {
      throw new Error(`fetch ${init?.method ?? "GET"} ${url} failed`, { cause: error })
    })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      // not JSON
    }
    return { status: response.status, headers: response.headers, text, json }
  })

export const bearer = (secret: string): Record<string, string> => ({ authorization: `Bearer ${secret}` })

export const jsonHeaders = (secret: string): Record<string, string> => ({
  ...bearer(secret),
  "content-type": "application/json"
})
