/**
 * The customer kit as a child process for the crash-loop and many-instance tests: the kit on
 * PostgreSQL (schema in the URL) behind `node:http` on a fixed loopback port, so a restarted kit
 * answers at the same endpoint. The host's "owning system" is the table `host_executions` in the
 * same schema: `execute` takes 20–200 ms and then inserts one row per call (so a duplicate execution
 * shows up as a second row for its key), `lookup` reads it. Prints `listening <port>` when ready.
 *
 *   node --import tsx test/e2e/crashloopKit.ts <databaseUrl> <port> <serviceUrl>
 *
 * Short leases so that a killed kit's executions are taken up again quickly: an execution lease of
 * 15 s, renewed by the worker's heartbeat while the host call runs. `KIT_CONCURRENCY` sets the
 * worker's items in flight per kind (the kit's default, 16, without it).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import pg from "pg"
import { makeCustomerKit } from "../../adapters/customer/Kit.ts"
import * as Database from "../../adapters/sql/Database.ts"
import * as SqlStorage from "../../adapters/sql/Storage.ts"
import * as HttpTransport from "../../adapters/transport/HttpTransport.ts"
import { secrets, workspaceId } from "../support/customer.ts"
import { cipherLayer } from "../support/storage.ts"

const [databaseUrl, port, serviceUrl] = process.argv.slice(2)
const storage = SqlStorage.layer.pipe(
  Layer.provide(Layer.merge(Database.layerPg(Redacted.make(databaseUrl!)), cipherLayer))
)
const host = new pg.Pool({ connectionString: databaseUrl!, max: 4 })

const result = (key: string) => ({
  outcome: "succeeded" as const,
  providerReference: key,
  evidence: { entitlement: "trial", reasonCode: "trial_extended", source: "authenticated_completion" as const }
})

const kit = await makeCustomerKit({
  workspaceId,
  secrets,
  serviceUrl: serviceUrl!,
  allowInsecureServiceUrl: true,
  storage,
  transport: HttpTransport.layer({ allowInsecure: true }, { timeoutMillis: 3_000 }),
  worker: {
    pollMillis: 50,
    ...(process.env["KIT_CONCURRENCY"] ? { concurrency: Number(process.env["KIT_CONCURRENCY"]) } : {}),
    executeLeaseMillis: 15_000,
    executeTimeoutMillis: 7_000,
    deliveryLeaseMillis: 15_000,
    backoff: { baseMillis: 50, capMillis: 1_000 }
  },
  executor: {
    execute: async (request) => {
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * 180)))
      await host.query("INSERT INTO host_executions (key, action_request_id) VALUES ($1, $2)", [
        request.providerIdempotencyKey,
        request.actionRequestId
      ])
      return result(request.providerIdempotencyKey)
    },
    lookup: async (key) => {
      const found = await host.query("SELECT 1 FROM host_executions WHERE key = $1 LIMIT 1", [key])
      return found.rowCount === 0 ? undefined : result(key)
    }
  }
})
const server = createServer(kit.nodeHandler)
server.listen(Number(port), "127.0.0.1", () =>
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`)
)
