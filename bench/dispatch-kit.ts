/**
 * The customer kit as a separate process for `bench:dispatch`: the kit's node:http handler (`toNodeHandler`),
 * storing in PostgreSQL (DATABASE_URL, schema KIT_SCHEMA). Prints `ready <port>` when listening.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../adapters/crypto/NodeCrypto.ts"
import { toNodeHandler } from "../adapters/customer/NodeHandler.ts"
import * as Database from "../adapters/sql/Database.ts"
import * as SqlStorage from "../adapters/sql/Storage.ts"
import { layerAesGcm } from "../core/protocol/Cipher.ts"
import { makeCustomerHandler } from "../core/customer/Handler.ts"
import { importSigningKeys } from "../core/protocol/Signing.ts"

const url = new URL(process.env["DATABASE_URL"]!)
url.searchParams.set("options", `-csearch_path=${process.env["KIT_SCHEMA"]}`)
const layer = Layer.mergeAll(
  SqlStorage.layer.pipe(
    Layer.provide(
      Layer.merge(
        Database.layerPg(Redacted.make(url.toString())),
        layerAesGcm(Redacted.make(new Uint8Array(32).fill(7)))
      )
    )
  ),
  NodeCrypto.layer
)
const runtime = ManagedRuntime.make(layer)
const handler = await runtime.runPromise(
  Effect.flatMap(
    importSigningKeys({
      actionSigning: Redacted.make(process.env["ACCORD_ACTION_SIGNING_SECRET"]!),
      completion: Redacted.make(process.env["ACCORD_COMPLETION_SECRET"]!)
    }),
    (keys) => makeCustomerHandler({ workspaceId: process.env["ACCORD_WORKSPACE_ID"]!, keys })
  )
)
const server = createServer(toNodeHandler(handler.handle))
server.keepAliveTimeout = 10_000
server.listen(0, "127.0.0.1", () => console.log(`ready ${(server.address() as AddressInfo).port}`))
process.on("SIGTERM", () => server.close(() => runtime.dispose().then(() => process.exit(0))))
