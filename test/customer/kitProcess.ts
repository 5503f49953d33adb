/**
 * A child process for the kit's crash test: the customer kit on SQL storage behind `node:http`,
 * printing `listening <port>` when ready and `execute <actionRequestId>` / `lookup <key>` for every
 * executor call. With `ACCORD_TEST_KILL_AFTER_CLAIM=1` it SIGKILLs itself as soon as
 * `ActionLedger.create` has returned `created`: after the claim committed, before the
 * acknowledgement is written.
 *
 *   node --import tsx test/customer/kitProcess.ts pglite <dataDir> <serviceUrl>
 *   node --import tsx test/customer/kitProcess.ts postgres <url> <serviceUrl>
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
import { ActionLedger } from "../../core/ActionLedger.ts"
import type { NonceStore } from "../../core/NonceStore.ts"
import type { Outbox } from "../../core/Outbox.ts"
import { cipherLayer } from "../support/storage.ts"
import { secrets, workspaceId } from "./support.ts"

const [kind, where, serviceUrl] = process.argv.slice(2)
const client = kind === "postgres" ? Database.layerPg(Redacted.make(where!)) : Database.layerPglite(where!)
const storage = SqlStorage.layer.pipe(Layer.provide(Layer.merge(client, cipherLayer)))

const killAfterClaim = (layer: typeof storage): Layer.Layer<NonceStore | ActionLedger | Outbox, unknown> =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<NonceStore | ActionLedger | Outbox>()
    const ledger = Context.get(context, ActionLedger)
    return Context.add(context, ActionLedger, {
      ...ledger,
      create: (options) =>
        Effect.tap(ledger.create(options), (result) =>
          result === "created" ? Effect.sync(() => process.kill(process.pid, "SIGKILL")) : Effect.void)
    })
  })).pipe(Layer.provide(layer))

const log = (line: string) => process.stdout.write(line + "\n")

const kit = await makeCustomerKit({
  workspaceId,
  secrets,
  serviceUrl: serviceUrl!,
  allowInsecureServiceUrl: true,
  storage: process.env["ACCORD_TEST_KILL_AFTER_CLAIM"] === "1" ? killAfterClaim(storage) : storage,
  worker: { pollMillis: 50, backoff: { baseMillis: 20, capMillis: 200 } },
  executor: {
    execute: async (request) => {
      log(`execute ${request.actionRequestId}`)
      return {
        outcome: "succeeded",
        providerReference: "trial_ext_1",
        evidence: { entitlement: "trial", reasonCode: "trial_extended", source: "customer_server_event" }
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
