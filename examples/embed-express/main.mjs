// The Accord service mounted under /accord of an existing Express app, on the app's own server and
// port (docs/guide-embedding.md, "Package entry points"). Mount it before any body parser: the service reads and
// verifies raw request bodies itself. Storage here is in memory (accord/memory); leave `storage` out
// to use PostgreSQL (DATABASE_URL) or embedded PGlite, as the standalone server does.
// Needs: accord, express, and the peers accord/server names in docs/guide-embedding.md.
import express from "express"
import * as Layer from "effect/Layer"
import * as Memory from "accord/memory"
import { NodeServer, Server } from "accord/server"

const service = await Server.mountService({
  storage: Layer.merge(Memory.layer, Memory.Readiness.layerMemory)
})

const app = express()
// Express's `use` strips the prefix: the service sees /readyz, /api/funnels/v1/…
app.use("/accord", NodeServer.toNodeListener(service.fetch))
app.get("/hello", express.json(), (_req, res) => {
  res.json({ hello: "from the host app" })
})

const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () =>
  console.log(`listening on http://127.0.0.1:${server.address().port}`)
)

process.once("SIGTERM", () => {
  server.close()
  service.close().then(() => process.exit(0))
})
