/**
 * `accord/memory`: every storage port in memory (DESIGN rule 2: "Every port has a memory
 * implementation"), for tests and for embedding without persistence.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "../adapters/memory/Storage.ts"
