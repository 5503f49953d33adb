/**
 * `accord/config`: the server configuration from the environment, its parsing helpers and the
 * master key (D9, D11).
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "../adapters/config/AccordConfig.ts"
