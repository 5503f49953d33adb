// The Accord service mounted under /accord of an existing Hono app, on the app's own server and
// port (docs/guide-embedding.md, "Package entry points"). Storage here is in memory (accord/memory); leave `storage`
// out to use PostgreSQL (DATABASE_URL) or embedded PGlite, as the standalone server does.
// Runs as it is on Node (`node main.mjs`), Bun and Deno (`deno run -A main.mjs`): the app is served
// by the runtime's own server, as Hono's adapters do (`@hono/node-server` on Node only).
// Needs: accord, hono, @hono/node-server (Node), and the peers accord/server names in docs/guide-embedding.md.
import * as Layer from "effect/Layer"
import { Hono } from "hono"
import * as Memory from "accord/memory"
import { Server } from "accord/server"

const service = await Server.mountService({
  storage: Layer.merge(Memory.layer, Memory.Readiness.layerMemory)
})

const app = new Hono()
app.get("/hello", (c) => c.json({ hello: "from the host app" }))
// Hono's mount strips the prefix: the service sees /readyz, /api/funnels/v1/…
app.mount("/accord", service.fetch)

const port = Number(process.env.PORT ?? 0)
const hostname = "127.0.0.1"
const listening = (port) => console.log(`listening on http://${hostname}:${port}`)

/** Serves `app.fetch` with the runtime's own server; answers how to close it. */
const listen = async () => {
  if ("Bun" in globalThis) {
    const server = Bun.serve({ fetch: app.fetch, port, hostname })
    listening(server.port)
    return () => server.stop()
  }
  if ("Deno" in globalThis) {
    const server = Deno.serve({ port, hostname, onListen: (address) => listening(address.port) }, app.fetch)
    return () => server.shutdown()
  }
  const { serve } = await import("@hono/node-server")
  const server = serve({ fetch: app.fetch, port, hostname }, (info) => listening(info.port))
  return () => server.close()
}
const close = await listen()

process.once("SIGTERM", () => {
  close()
  service.close().then(() => process.exit(0))
})
