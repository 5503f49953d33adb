// The customer kit inside an existing Express app (docs/customer-kit.md): the service posts signed
// actions to /accord/actions; the kit verifies them, claims them durably, runs the host's executor
// and delivers the signed completion to the service. Storage here is in memory (accord/memory); use
// accord/sql (PostgreSQL or PGlite) for a kit that survives restarts.
// Needs: accord and express.
import express from "express"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { makeCustomerKit } from "accord/kit"
import * as Memory from "accord/memory"
import { Cipher } from "accord/protocol"

const masterKey = Redacted.make(globalThis.crypto.getRandomValues(new Uint8Array(32)))
const kit = await makeCustomerKit({
  workspaceId: "ws_example",
  serviceUrl: process.env.ACCORD_SERVICE_URL ?? "https://accord.example.com",
  secrets: {
    actionSigning: Redacted.make(
      process.env.ACCORD_ACTION_SIGNING_SECRET ?? "example-action-signing-secret-0123456789"
    ),
    completion: Redacted.make(process.env.ACCORD_COMPLETION_SECRET ?? "example-completion-secret-0123456789abcd")
  },
  storage: Memory.layer.pipe(Layer.provide(Cipher.layerAesGcm(masterKey))),
  executor: {
    // The host's own operation (extend a trial, apply a credit…); its observed result.
    execute: async (execution) => ({
      outcome: "succeeded",
      providerReference: `trial_ext_${execution.providerIdempotencyKey.slice(0, 8)}`,
      evidence: { entitlement: "trial_extended", reasonCode: "trial_extended", source: "entitlement_state" }
    }),
    lookup: async () => undefined
  }
})

const app = express()
app.get("/hello", (_req, res) => {
  res.json({ hello: "from the host app" })
})
// The kit reads and verifies the raw body itself: no body parser on this route.
app.post("/accord/actions", kit.nodeHandler)

const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () =>
  console.log(`listening on http://127.0.0.1:${server.address().port}`)
)

process.once("SIGTERM", () => {
  server.close()
  kit.dispose().then(() => process.exit(0))
})
