/**
 * The customer kit, assembled for a Promise-based backend: the inbound handler (Fetch and
 * `node:http` forms), the execution and completion-delivery workers running in the background,
 * and one `dispose` that stops them and releases storage.
 *
 * ```ts
 * const kit = await makeCustomerKit({
 *   workspaceId, secrets, serviceUrl: "https://accord.example.com",
 *   executor: { execute: async (request) => ({ outcome: "succeeded", providerReference, evidence }),
 *               lookup: async (providerIdempotencyKey) => undefined },
 *   storage: SqlStorageLayer
 * })
 * http.createServer(kit.nodeHandler).listen(8080)
 * ```
 *
 * With `payments` (Stripe through the official `stripe` package, or any `PaymentProvider`), an
 * accepted Payment action is answered with a payment continuation, `kit.webhook` verifies the
 * provider's webhooks (mount it at e.g. `POST /stripe/webhook`), and completions and
 * reconciliation reads come from what the provider reports (see docs/customer-kit.md).
 *
 * To rotate secrets without downtime, configure the next revision's pair next to the current one
 * (`revisions: [{ revision: 3, secrets: current }, { revision: 4, secrets: next }]`) before the
 * service's connection check activates revision 4, and drop revision 3 once its actions have ended.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import type { ActionLedger } from "../../core/ports/ActionLedger.ts"
import { secretIssues } from "../../core/connector/Connection.ts"
import type { ConnectorTransport } from "../../core/ports/ConnectorTransport.ts"
import type { ClaimedExecution } from "../../core/customer/ClaimedExecution.ts"
import { type CustomerHandlerSettings, makeCustomerHandler } from "../../core/customer/Handler.ts"
import type { RevisionKeys } from "../../core/customer/Keyring.ts"
import type { PaymentReading } from "../../core/customer/Reconciliation.ts"
import * as Worker from "../../core/customer/Worker.ts"
import {
  makeProviderAccountWatch,
  type ProviderAccountSettings,
  type ProviderAccountState
} from "../../core/customer/ProviderAccount.ts"
import type { PaymentCapabilities } from "../../core/protocol/messages/Handshake.ts"
import type { ExecutionRequest } from "../../core/protocol/messages/Execution.ts"
import type { PaymentReconciliationRequest } from "../../core/protocol/messages/Reconciliation.ts"
import type { NonceStore } from "../../core/ports/NonceStore.ts"
import { Outbox } from "../../core/ports/Outbox.ts"
import { PaymentProviderError, type PaymentProviderService } from "../../core/customer/PaymentProvider.ts"
import { makeWebhookIntake, maxWebhookBytes, type PaymentPlan } from "../../core/customer/Payments.ts"
import * as StripeProvider from "../stripe/StripeProvider.ts"
import * as Redacted from "effect/Redacted"
import { type ConnectorSecrets, importSigningKeys } from "../../core/protocol/Signing.ts"
import type { FieldIssue } from "../../core/protocol/Json.ts"
import * as NodeCrypto from "../crypto/NodeCrypto.ts"
import * as Transport from "../transport/Transport.ts"
import { type NodeHandler, toNodeHandler } from "./NodeHandler.ts"
import { toWebHandler, type WebHandler } from "./WebHandler.ts"

/**
 * The host's executor with Promises. A rejected promise is an ambiguous result: the kit retries
 * with backoff and calls `lookup` before any second `execute`.
 */
export interface HostExecutor {
  /**
   * Runs the action in the host's system, passing `providerIdempotencyKey` on, and answers its
   * observed result.
   */
  readonly execute: (request: ClaimedExecution) => Promise<Worker.ExecutionResult>
  /** The observed result of an earlier run under this key, or `undefined` if it never ran. */
  readonly lookup: (providerIdempotencyKey: string) => Promise<Worker.ExecutionResult | undefined>
}

/**
 * One connection revision and its secrets.
 */
export interface KitRevision {
  readonly revision: number
  readonly secrets: ConnectorSecrets
}

/**
 * The secrets: one pair with its connection revision (default 0), or several revisions, each with
 * its own pair (see `core/customer/Keyring.ts` for which pair answers what).
 */
export type CustomerKitSecrets =
  | { readonly secrets: ConnectorSecrets; readonly revision?: number; readonly revisions?: never }
  | { readonly revisions: ReadonlyArray<KitRevision>; readonly secrets?: never; readonly revision?: never }

/**
 * Everything but the secrets (see `CustomerKitOptions`).
 */
export interface CustomerKitSettings {
  readonly workspaceId: string
  /** The service's base URL (completions go to `…/api/funnels/v1/runtime/actions/customer-complete`). */
  readonly serviceUrl: string
  readonly executor: HostExecutor
  /** Resolve to an error code to reject an execution (recorded; a retry gets the same answer). */
  readonly precheck?: (request: ExecutionRequest) => Promise<string | undefined>
  readonly payment?: CustomerHandlerSettings["payment"]
  readonly paymentReader?: {
    /**
     * Reads the provider's current state for one action the service reconciles; answers `unknown`
     * when it cannot tell, never fails.
     */
    readonly read: (input: {
      readonly request: PaymentReconciliationRequest
      readonly execution: ClaimedExecution
    }) => Promise<PaymentReading>
  }
  /** Storage with no further requirements (memory, PGlite or PostgreSQL `adapters/*\/Storage.ts` layers). */
  readonly storage: Layer.Layer<NonceStore | ActionLedger | Outbox, unknown>
  /** Allow an `http:` / loopback `serviceUrl` (development and tests only). */
  readonly allowInsecureServiceUrl?: boolean
  /** Replaces the default transport (node:http, no redirects, 10 s time-out). */
  readonly transport?: Layer.Layer<ConnectorTransport>
  /**
   * Worker tuning. `executeTimeoutMillis` (default 60 s) is the time limit of one `execute` or
   * `lookup` call: past it the attempt is ambiguous and retried with backoff through `lookup`
   * (a promise that never settles holds nothing). `concurrency` (default 16) executions and as many
   * deliveries run at once.
   */
  readonly worker?: Pick<
    Worker.CustomerWorkerSettings,
    "pollMillis" | "executeLeaseMillis" | "executeTimeoutMillis" | "deliveryLeaseMillis" | "concurrency" | "backoff"
  >
  readonly connectionId?: string
  /**
   * Payment actions over a payment provider: Stripe through its official package (`stripe`), or
   * any `PaymentProvider` (`provider`). Adds the continuation to accepted Payment actions, the
   * webhook handlers (`kit.webhook`), completions from verified webhooks, and reconciliation reads
   * from the provider (unless `paymentReader` is given).
   */
  readonly payments?: KitPayments
}

/**
 * The kit's Payment actions: what to charge, the capability proof it offers, and its provider
 * (Stripe settings or any `PaymentProvider`).
 */
export type KitPayments = {
  /**
   * What to charge for a Payment action; `undefined` rejects it (`payment_not_offered`). A rejected
   * promise answers 503 and claims nothing (the service retries).
   */
  readonly plan: (request: ClaimedExecution) => Promise<PaymentPlan | undefined>
  /** How long a continuation is offered (default 50 minutes, at most 55). */
  readonly continuationMillis?: number
  /**
   * The payment capability proof's modes and environment. The kit reads the provider account itself
   * and keeps reading it (`core/customer/ProviderAccount.ts`): the handshake carries the proof, naming
   * the account proven now, only while one is; a mode not listed is rejected (`payment_not_offered`).
   */
  readonly proof?: { readonly modes: PaymentCapabilities["modes"]; readonly livemode: boolean }
  /**
   * The provider account watch: retry and refresh timing, and `onChange`, told each change of state
   * (for the host's log: payments degraded and retrying, back, another account).
   */
  readonly account?: Pick<ProviderAccountSettings, "retry" | "refreshMillis"> & {
    /** Told each change of the provider account's state, for the host's log. */
    readonly onChange?: (state: ProviderAccountState) => void
  }
} & (
  | { readonly stripe: StripeProvider.StripeProviderConfig; readonly provider?: never }
  | { readonly provider: PaymentProviderService; readonly stripe?: never }
)

/**
 * Everything `makeCustomerKit` takes: the workspace, service URL, storage, executor and payments,
 * and the connector secrets.
 */
export type CustomerKitOptions = CustomerKitSettings & CustomerKitSecrets

/**
 * `makeCustomerKit` refused its options: every failing option by path, never its value.
 */
export class CustomerKitOptionsError extends Error {
  readonly _tag = "CustomerKitOptionsError"
  constructor(readonly issues: ReadonlyArray<FieldIssue>) {
    super("invalid customer kit options: " + issues.map((issue) => `${issue.path} ${issue.message}`).join("; "))
    this.name = "CustomerKitOptionsError"
  }
}

/** The configured revisions with the option path each came from. */
const revisionsOf = (options: CustomerKitSecrets): ReadonlyArray<KitRevision & { readonly path: string }> =>
  options.revisions !== undefined
    ? options.revisions.map((entry, i) => ({ ...entry, path: `revisions[${i}].` }))
    : [{ revision: options.revision ?? 0, secrets: options.secrets, path: "" }]

const optionIssues = (options: CustomerKitOptions): ReadonlyArray<FieldIssue> => {
  const issues: Array<FieldIssue> = []
  const revisions = revisionsOf(options)
  if (revisions.length === 0) issues.push({ path: "revisions", message: "must name at least one revision" })
  const seen = new Set<number>()
  for (const { path, revision, secrets } of revisions) {
    if (!Number.isSafeInteger(revision) || revision < 0) {
      issues.push({ path: `${path}revision`, message: "must be a non-negative integer" })
    } else if (seen.has(revision)) {
      issues.push({ path: `${path}revision`, message: "must not repeat another revision" })
    }
    seen.add(revision)
    // The service's own rules for a pair (at least 32 characters each, distinct, no stray whitespace).
    for (const { issue } of secretIssues(secrets)) issues.push({ ...issue, path: `${path}secrets.${issue.path}` })
  }
  const stripe = options.payments?.stripe
  if (stripe !== undefined) {
    // "The payment provider's webhook signing secret is a third value, distinct from both connector secrets."
    const webhookSecret = Redacted.value(stripe.webhookSecret)
    if (webhookSecret.length === 0) issues.push({ path: "payments.stripe.webhookSecret", message: "is required" })
    for (const { path, secrets } of revisions) {
      if (
        webhookSecret === Redacted.value(secrets.actionSigning) ||
        webhookSecret === Redacted.value(secrets.completion)
      ) {
        issues.push({
          path: "payments.stripe.webhookSecret",
          message: `must differ from ${path}secrets (a third secret)`
        })
      }
    }
    if (Redacted.value(stripe.secretKey).length === 0)
      issues.push({ path: "payments.stripe.secretKey", message: "is required" })
    if (stripe.publishableKey.length === 0)
      issues.push({ path: "payments.stripe.publishableKey", message: "is required" })
  }
  const timeout = options.worker?.executeTimeoutMillis ?? Worker.defaultExecuteTimeoutMillis
  if (!(timeout > 0)) issues.push({ path: "worker.executeTimeoutMillis", message: "must be positive" })
  // The heartbeat renews a lease every third of it: below a second it would beat the store for nothing.
  for (const name of ["executeLeaseMillis", "deliveryLeaseMillis"] as const) {
    const lease = options.worker?.[name]
    if (lease !== undefined && !(lease >= 1_000))
      issues.push({ path: `worker.${name}`, message: "must be at least 1000 (1 s)" })
  }
  return issues
}

/**
 * A running customer kit: its handlers for the service's signed requests (Fetch and `node:http`),
 * its webhook route and `dispose`.
 */
export interface CustomerKit {
  readonly fetch: WebHandler
  readonly nodeHandler: NodeHandler
  /** The payment provider's webhook route (mount it at e.g. `POST /stripe/webhook`), with `payments` only. */
  readonly webhook: { readonly fetch: WebHandler; readonly nodeHandler: NodeHandler } | undefined
  /** Stops the workers and releases storage. */
  readonly dispose: () => Promise<void>
}

/**
 * Checks the options (throws `CustomerKitOptionsError`), builds storage, imports the secrets,
 * starts the workers and binds the handler.
 */
export const makeCustomerKit = async (options: CustomerKitOptions): Promise<CustomerKit> => {
  const issues = optionIssues(options)
  if (issues.length > 0) throw new CustomerKitOptionsError(issues)
  const { executor, paymentReader, precheck } = options
  const provider =
    options.payments === undefined
      ? undefined
      : (options.payments.provider ?? StripeProvider.make(options.payments.stripe!))
  // The provider account, read once now and then watched for as long as the kit runs.
  const account =
    provider === undefined || options.payments === undefined
      ? undefined
      : Effect.runSync(
          makeProviderAccountWatch({
            read: provider.retrieveAccount,
            ...(options.payments.account?.retry !== undefined ? { retry: options.payments.account.retry } : {}),
            ...(options.payments.account?.refreshMillis !== undefined
              ? { refreshMillis: options.payments.account.refreshMillis }
              : {}),
            onChange: (state) => Effect.sync(() => options.payments?.account?.onChange?.(state))
          })
        )
  if (account !== undefined) await Effect.runPromise(account.readOnce)
  const proof = options.payments?.proof
  const payments =
    options.payments === undefined || provider === undefined || account === undefined
      ? undefined
      : {
          provider,
          account: account.current,
          plan: (request: ClaimedExecution) =>
            Effect.map(
              // A plan that throws could not be made now (e.g. the provider was needed): 503, nothing claimed.
              Effect.tryPromise({
                try: () => options.payments!.plan(request),
                catch: () => new PaymentProviderError({ operation: "plan", reason: "unavailable", code: null })
              }),
              (plan) =>
                Option.filter(Option.fromNullable(plan), (p) => proof === undefined || proof.modes.includes(p.mode))
            ),
          ...(options.payments.continuationMillis !== undefined
            ? { continuationMillis: options.payments.continuationMillis }
            : {})
        }
  const keyring = Effect.forEach(revisionsOf(options), ({ revision, secrets }) =>
    Effect.map(importSigningKeys(secrets), (keys): RevisionKeys => ({ revision, keys }))
  )
  const base = Layer.mergeAll(
    options.storage,
    NodeCrypto.layer,
    options.transport ?? Transport.layer({ allowInsecure: options.allowInsecureServiceUrl ?? false }),
    Layer.succeed(Worker.ActionExecutor, {
      execute: (request) => Effect.promise(() => executor.execute(request)),
      lookup: (key) =>
        Effect.map(
          Effect.promise(() => executor.lookup(key)),
          Option.fromNullable
        )
    })
  )
  const workers = Layer.unwrapEffect(
    Effect.map(keyring, (revisions) =>
      Worker.layer({
        ...options.worker,
        workspaceId: options.workspaceId,
        revisions,
        serviceUrl: options.serviceUrl,
        ...(provider !== undefined ? { paymentProvider: provider } : {})
      })
    )
  ).pipe(Layer.provideMerge(base))
  const runtime = ManagedRuntime.make(
    account === undefined ? workers : Layer.merge(workers, Layer.scopedDiscard(Effect.forkScoped(account.run)))
  )
  try {
    const { handler, webhook } = await runtime.runPromise(
      Effect.gen(function* () {
        const revisions = yield* keyring
        const worker = yield* Worker.CustomerWorker
        const webhook =
          provider === undefined
            ? undefined
            : makeWebhookIntake({ provider, outbox: yield* Outbox, onRecorded: worker.wakePaymentEvents })
        const handler = yield* makeCustomerHandler({
          workspaceId: options.workspaceId,
          revisions,
          onClaimed: worker.wake,
          ...(options.connectionId !== undefined ? { connectionId: options.connectionId } : {}),
          ...(options.payment !== undefined
            ? { payment: options.payment }
            : proof !== undefined && account !== undefined
              ? {
                  payment: Effect.map(
                    account.current,
                    Option.map((providerAccountId) => ({ ...proof, providerAccountId }))
                  )
                }
              : {}),
          ...(precheck !== undefined
            ? {
                precheck: (request) =>
                  Effect.map(
                    Effect.promise(() => precheck(request)),
                    Option.fromNullable
                  )
              }
            : {}),
          ...(paymentReader !== undefined
            ? { paymentReader: { read: (input) => Effect.promise(() => paymentReader.read(input)) } }
            : {}),
          ...(payments !== undefined ? { payments } : {})
        })
        return { handler, webhook }
      })
    )
    return {
      fetch: toWebHandler(handler.handle),
      nodeHandler: toNodeHandler(handler.handle),
      webhook:
        webhook === undefined
          ? undefined
          : { fetch: toWebHandler(webhook, maxWebhookBytes), nodeHandler: toNodeHandler(webhook, maxWebhookBytes) },
      dispose: () => runtime.dispose()
    }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
