/**
 * A child process for the kit's crash and outage tests: the customer kit on SQL storage behind
 * `node:http`, printing `listening <port>` when ready, `execute <actionRequestId>` / `lookup <key>`
 * for every executor call, and `deliver <completionId> status <n>` / `deliver <completionId> failed
 * <reason>` for every completion delivery attempt. With `ACCORD_TEST_KILL_AFTER_CLAIM=1` it SIGKILLs
 * itself as soon as `ActionLedger.create` has returned `created`: after the claim committed, before
 * the acknowledgement is written. With `ACCORD_TEST_HOLD_EXECUTION=1` the executor returns only
 * after the process got SIGUSR2.
 *
 *   node --import tsx test/support/kitProcess.ts pglite <dataDir> <serviceUrl>
 *   node --import tsx test/support/kitProcess.ts postgres <url> <serviceUrl>
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { makeCustomerKit } from "../../adapters/customer/Kit.ts"
import * as Database from "../../adapters/sql/Database.ts"
import * as SqlStorage from "../../adapters/sql/Storage.ts"
import * as HttpTransport from "../../adapters/transport/HttpTransport.ts"
import { ActionLedger } from "../../core/ports/ActionLedger.ts"
import { ConnectorTransport } from "../../core/ports/ConnectorTransport.ts"
import type { NonceStore } from "../../core/ports/NonceStore.ts"
import type { Outbox } from "../../core/ports/Outbox.ts"
import { cipherLayer } from "./storage.ts"
import { secrets, workspaceId } from "./customer.ts"

const [kind, where, serviceUrl] = process.argv.slice(2)
const client = kind === "postgres" ? Database.layerPg(Redacted.make(where!)) : Database.layerPglite(where!)
const storage = SqlStorage.layer.pipe(Layer.provide(Layer.merge(client, cipherLayer)))

const killAfterClaim = (layer: typeof storage): Layer.Layer<NonceStore | ActionLedger | Outbox, unknown> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const context = yield* Effect.context<NonceStore | ActionLedger | Outbox>()
      const ledger = Context.get(context, ActionLedger)
      return Context.add(context, ActionLedger, {
        ...ledger,
        create: (options) =>
          Effect.tap(ledger.create(options), (result) =>
            result === "created" ? Effect.sync(() => process.kill(process.pid, "SIGKILL")) : Effect.void
          )
      })
    })
  ).pipe(Layer.provide(layer))

const log = (line: string) => process.stdout.write(line + "\n")

const hold = process.env["ACCORD_TEST_HOLD_EXECUTION"] === "1"
let release = () => {}
const released = new Promise<void>((resolve) => (release = resolve))
process.on("SIGUSR2", () => release())

/** The real HTTP transport, logging each completion delivery attempt and its result. */
const transport = Layer.effect(
  ConnectorTransport,
  Effect.map(ConnectorTransport, (inner) => ({
    post: (request) => {
      const completionId = JSON.parse(new TextDecoder().decode(request.body)).completionId
      return inner.post(request).pipe(
        Effect.tapBoth({
          onFailure: (failure) => Effect.sync(() => log(`deliver ${completionId} failed ${failure.reason}`)),
          onSuccess: (response) => Effect.sync(() => log(`deliver ${completionId} status ${response.status}`))
        })
      )
    }
  }))
).pipe(Layer.provide(HttpTransport.layer({ allowInsecure: true })))

const kit = await makeCustomerKit({
  workspaceId,
  secrets,
  serviceUrl: serviceUrl!,
  allowInsecureServiceUrl: true,
  storage: process.env["ACCORD_TEST_KILL_AFTER_CLAIM"] === "1" ? killAfterClaim(storage) : storage,
  transport,
  // Short leases (renewed by the heartbeat while the work runs): a killed kit's in-flight delivery is
  // taken again within seconds by the restarted one, and an execution its worker leased in the
  // moment between the claim's commit and the kill within 30 s (the default 5 minutes would outlast
  // the crash test's 60 s wait). A host call may then take 14 s, under half the execution lease.
  worker: {
    pollMillis: 50,
    backoff: { baseMillis: 20, capMillis: 200 },
    deliveryLeaseMillis: 5_000,
    executeLeaseMillis: 30_000,
    executeTimeoutMillis: 14_000
  },
  executor: {
    execute: async (request) => {
      log(`execute ${request.actionRequestId}`)
      if (hold) await released
      return {
        outcome: "succeeded",
        providerReference: "trial_ext_1",
        evidence: { entitlement: "trial", reasonCode: "trial_extended", source: "authenticated_completion" }
      }
    },
    lookup: async (key) => {
      log(`lookup ${key}`)
      return undefined
    }
  }
})
const server = createServer(kit.nodeHandler)
server.listen(0, "127.0.0.1", () => log(`listening ${(server.address() as AddressInfo).port}`))
