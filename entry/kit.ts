/**
 * `accord/kit`: the customer kit a customer backend mounts to answer the service (spec "What the
 * customer backend does": verify, claim idempotently, execute, acknowledge, deliver the completion):
 * `makeCustomerKit` with its Fetch and `node:http` handlers, and the Effect modules beneath it.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/customer/Kit.ts"
export * from "../adapters/customer/WebHandler.ts"
export * from "../adapters/customer/NodeHandler.ts"

/** What a host executor receives and answers, and the retry backoff it may reuse. */
export type { ClaimedExecution } from "../core/customer/ClaimedExecution.ts"
export { type Backoff, backoffDelay, retryDelay } from "../core/protocol/Backoff.ts"
export { defaultBackoff, type ExecutionResult } from "../core/customer/Worker.ts"
/** What a kit's handshake answers about its payment capability, and how a leased payment item ends. */
export type { PaymentProofSettings } from "../core/customer/internal/handshakeAnswer.ts"
export type { LeasedItemEnds } from "../core/customer/internal/leasedItem.ts"

export * as Handler from "../core/customer/Handler.ts"
export * as Keyring from "../core/customer/Keyring.ts"
export * as Reconciliation from "../core/customer/Reconciliation.ts"
export * as Worker from "../core/customer/Worker.ts"
/** Payments: the provider port and the kit's payment parts; the Stripe adapter is `accord/kit/stripe`. */
export * as PaymentProvider from "../core/customer/PaymentProvider.ts"
export * as Payments from "../core/customer/Payments.ts"
export * as ProviderAccount from "../core/customer/ProviderAccount.ts"
export type { PaymentPlan } from "../core/customer/Payments.ts"
