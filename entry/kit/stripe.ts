/**
 * `accord/kit/stripe`: the `PaymentProvider` port on the official `stripe` package, for a kit whose
 * payments run through Stripe (`makeCustomerKit({ payments: { stripe } })` builds it itself; this
 * entry is for hosts that build or check the provider on their own). `stripe` is an optional peer
 * dependency: install it beside accord to use this entry.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as StripeProvider from "../../adapters/stripe/StripeProvider.ts"
