/**
 * `accord/config`: the server configuration from the environment, its parsing helpers and the
 * master key (D9, D11).
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/config/AccordConfig.ts"
