/**
 * `accord/memory`: every storage port in memory (DESIGN rule 2: "Every port has a memory
 * implementation"), for tests and for embedding without persistence.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/memory/Storage.ts"
export * as NonceStore from "../adapters/memory/NonceStore.ts"
