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
