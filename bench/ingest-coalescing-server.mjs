// A reference for bench:ingest, not a baseline: the least a server can do that still answers 202
// only after commit while coalescing concurrent inserts. node:http, JSON.parse of each body, one
// queue, one writer that inserts everything queued in one multi-row statement (its own
// transaction, a named prepared statement) and then answers every request in it. No validation,
// no auth, no idempotency, one table with only a primary key. Its throughput on a machine bounds
// what any coalescing implementation that does more per event can reach there.
import { createServer } from "node:http"
import pg from "pg"

const { DATABASE_URL, PORT, SCHEMA } = process.env
const client = new pg.Client({ connectionString: DATABASE_URL })
await client.connect()
await client.query(
  `CREATE TABLE IF NOT EXISTS ${SCHEMA}.coalesced_events (id bigserial PRIMARY KEY, body jsonb NOT NULL)`
)
const insert = `INSERT INTO ${SCHEMA}.coalesced_events (body) SELECT jsonb_array_elements($1::jsonb)`

let queue = []
let writing = false
const write = async () => {
  writing = true
  while (queue.length > 0) {
    const batch = queue
    queue = []
    try {
      await client.query({ name: "insert", text: insert, values: [JSON.stringify(batch.map((item) => item.event))] })
      for (const { res } of batch) {
        res.writeHead(202, { "content-type": "application/json" })
        res.end('{"status":"accepted"}')
      }
    } catch {
      for (const { res } of batch) {
        res.writeHead(500)
        res.end()
      }
    }
  }
  writing = false
}

const server = createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    let event
    try {
      event = JSON.parse(Buffer.concat(chunks).toString())
    } catch {
      res.writeHead(400)
      return res.end()
    }
    queue.push({ event, res })
    if (!writing) void write()
  })
})
server.listen(Number(PORT), "127.0.0.1", () => console.log("listening"))
process.on("SIGTERM", () => server.close(() => client.end().then(() => process.exit(0))))
