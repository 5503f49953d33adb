// The engine used directly, with memory storage, in a plain script: no server, no TypeScript
// loader. Runs as it is on Node (`node main.mjs`), Bun (`bun main.mjs`) and Deno
// (`deno run -A main.mjs`). It bootstraps a workspace with its administrator key, issues an ingest
// key, and finds that key again by the hash of its secret, as the service authenticates a request.
// Needs: accord only (effect comes with it).
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { ApiKeys } from "accord/engine"
import * as Memory from "accord/memory"
import * as NodeCrypto from "accord/node-crypto"
import { ApiKeyStore } from "accord/ports"
import { Cipher } from "accord/protocol"

const masterKey = Redacted.make(globalThis.crypto.getRandomValues(new Uint8Array(32)))
const services = Layer.mergeAll(Memory.layer.pipe(Layer.provide(Cipher.layerAesGcm(masterKey))), NodeCrypto.layer)

const program = Effect.gen(function* () {
  const adminKey = yield* ApiKeys.mintSecret("admin")
  const bootstrap = yield* ApiKeys.bootstrapWorkspace("ws_example", adminKey)
  const issued = yield* ApiKeys.issue({ workspaceId: "ws_example", scope: "ingest", name: "example" })
  const store = yield* ApiKeyStore.ApiKeyStore
  const found = yield* store.findByHash(yield* ApiKeys.hashSecret(issued.secret))
  return {
    workspaceCreated: bootstrap.workspaceCreated,
    adminKey: bootstrap.adminKey,
    ingestKeyFound: Option.isSome(found) && found.value.id === issued.record.id && found.value.scope === "ingest"
  }
})

console.log(JSON.stringify(await Effect.runPromise(Effect.provide(program, services))))
