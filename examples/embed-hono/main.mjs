// The Accord service mounted under /accord of an existing Hono app, on the app's own server and
// port (docs/guide-embedding.md, "Package entry points"). Storage here is in memory (accord/memory); leave `storage`
// out to use PostgreSQL (DATABASE_URL) or embedded PGlite, as the standalone server does.
// Needs: accord, hono, @hono/node-server, and the peers accord/server names in docs/guide-embedding.md.
import { serve } from "@hono/node-server"
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

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: "127.0.0.1" }, (info) =>
  console.log(`listening on http://127.0.0.1:${info.port}`)
)

process.once("SIGTERM", () => {
  server.close()
  service.close().then(() => process.exit(0))
})
