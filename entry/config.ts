/**
 * `accord/config`: the server configuration from the environment, its parsing helpers and the
 * master key (docs/decisions.md, "Secret handling", "Embedded storage durability").
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/config/AccordConfig.ts"
