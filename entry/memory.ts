/**
 * `accord/memory`: every storage port in memory (every port has a memory implementation, run
 * through the same contract suite as the SQL one), for tests and for embedding without persistence.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/memory/Storage.ts"
