/**
 * `accord/kit`: the customer kit a customer backend mounts to answer the service (spec "What the
 * customer backend does": verify, claim idempotently, execute, acknowledge, deliver the completion):
 * `makeCustomerKit` with its Fetch and `node:http` handlers, and the Effect modules beneath it.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * from "../adapters/customer/Kit.ts"
/** @since 0.1.0 */
export * from "../adapters/customer/WebHandler.ts"
/** @since 0.1.0 */
export * from "../adapters/customer/NodeHandler.ts"

/** What a host executor receives and answers, and the retry backoff it may reuse. @since 0.1.0 */
export { type ClaimedExecution } from "../core/customer/ClaimedExecution.ts"
/** @since 0.1.0 */
export { type Backoff, backoffDelay } from "../core/protocol/Backoff.ts"
export { defaultBackoff, type ExecutionResult } from "../core/customer/Worker.ts"

/** @since 0.1.0 */
export * as Handler from "../core/customer/Handler.ts"
/** @since 0.1.0 */
export * as Keyring from "../core/customer/Keyring.ts"
/** @since 0.1.0 */
export * as Reconciliation from "../core/customer/Reconciliation.ts"
/** @since 0.1.0 */
export * as Worker from "../core/customer/Worker.ts"
/** Payments: the provider port, the kit's payment parts, and the Stripe adapter. @since 0.1.0 */
export * as PaymentProvider from "../core/customer/PaymentProvider.ts"
/** @since 0.1.0 */
export * as Payments from "../core/customer/Payments.ts"
/** @since 0.1.0 */
export * as StripeProvider from "../adapters/stripe/StripeProvider.ts"
/** @since 0.1.0 */
export type { PaymentPlan } from "../core/customer/Payments.ts"
