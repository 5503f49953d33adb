// core/ is pure: it imports nothing but `effect` and its own modules, and takes time and randomness
// from services (no Date.now(), new Date() or Math.random()), so TestClock and memory layers control
// everything.
//
// Inside core/, a module imports another domain only along an edge of this table (a domain is the
// first folder under core/; a module always imports its own domain):
//
//   from        may import                                  why
//   protocol    ports                                       signing, digests and verification run on the Crypto and NonceStore services
//   ports       protocol                                    port types are protocol types (messages, cipher, payment modes)
//   access      ports, protocol                             API keys over ApiKeyStore, hashed with Crypto
//   catalog     ports, protocol                             the document's messages; publishing stores a version (Publish.ts)
//   telemetry   (none)                                      metrics over `effect` only
//   ingest      ports, protocol                             the ingest pipeline over its stores
//   connector   ports, protocol, catalog, telemetry         revalidation and evidence read the catalog; deliveries and checks are measured
//   customer    ports, protocol                             the kit's stores; messages, signing and the operation-family table
//   approval    ports, protocol, access, catalog, connector an approved action is taken by connector intake, revalidated against the catalog,
//                                                           its status read from the action state machine; session and approval tokens
//                                                           are minted as API keys are (access mintToken)
//   privacy     ports, ingest, connector                    erasure over every store: the ingest suppression set; an action in flight
//                                                           is named by the action state machine's states
//
// The same table is `allowedEdges` below; an import along any other edge fails `npm test` (run as
// `npm run check:core`), which prints every edge it found.
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, normalize, sep } from "node:path"

/**
 * from → { to: why }. Keep in step
 * with the table above.
 */
const allowedEdges = {
  protocol: { ports: "signing, digests and verification run on the Crypto and NonceStore services" },
  ports: { protocol: "port types are protocol types (messages, cipher, payment modes)" },
  access: { ports: "API keys over ApiKeyStore", protocol: "key hashing and ids" },
  catalog: {
    ports: "publishing stores a version in CatalogStore (Publish.ts), with ids from Crypto",
    protocol: "the catalog document's messages"
  },
  telemetry: {},
  ingest: { ports: "the ingest pipeline over its stores", protocol: "JSON, digests, timestamps" },
  connector: {
    ports: "the connector's stores and transport",
    protocol: "the connector's messages, signing and verification",
    catalog: "revalidation and evidence matching read the published catalog",
    telemetry: "deliveries, checks and reconciliations are measured"
  },
  customer: {
    ports: "the kit's ledger, outbox and payment provider",
    protocol: "the connector's messages, signing and verification, the operation-family table"
  },
  approval: {
    ports: "approvals, sessions and the catalog in their stores",
    protocol: "commitment hashing, tokens, timestamps",
    access: "session and approval tokens are minted as API keys are (mintToken)",
    catalog: "an approval is checked against the published catalog",
    connector:
      "an approved action is taken by connector intake and revalidation; its status is the action state machine's"
  },
  privacy: {
    ports: "erasure and export over every store holding subject data",
    ingest: "an erasure adds its subject to the ingest suppression set",
    connector: "an action in flight is named by the action state machine's states"
  }
}

/** Whether domain `from` may import domain `to`. */
const allows = (from, to) => allowedEdges[from]?.[to] !== undefined

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path) : path.endsWith(".ts") ? [path] : []
  })

/** The domain of a path under core/: its first folder. */
const domainOf = (path) => normalize(path).split(sep)[1]

const problems = []
/** "from → to" → the files importing along it. */
const found = new Map()
const files = walk("core")
for (const file of files) {
  const source = readFileSync(file, "utf8")
  for (const match of source.matchAll(
    /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g
  )) {
    const spec = match[1] ?? match[2]
    if (spec === "effect" || spec.startsWith("effect/")) continue
    if (!(spec.startsWith("./") || spec.startsWith("../"))) {
      problems.push(`${file}: imports ${spec} (core/ imports only effect and core/)`)
      continue
    }
    const target = normalize(join(file, "..", spec))
    if (!target.startsWith(`core${sep}`)) {
      problems.push(`${file}: imports outside core/: ${spec}`)
      continue
    }
    const from = domainOf(file)
    const to = domainOf(target)
    if (from === to) continue
    const edge = `${from} → ${to}`
    if (!found.has(edge)) found.set(edge, new Set())
    found.get(edge).add(file)
    if (!allows(from, to)) problems.push(`${file}: imports ${spec}, an edge ${edge} not allowed`)
  }
  for (const banned of ["Date.now(", "new Date()", "Math.random("]) {
    if (source.includes(banned)) problems.push(`${file}: uses ${banned}; take it from a service`)
  }
}

const edges = [...found.keys()].sort()
console.log(`core/ edges between domains (${edges.length}):`)
for (const edge of edges) {
  const [from, to] = edge.split(" → ")
  const files = [...found.get(edge)]
  const mark = allows(from, to) ? "allowed" : "NOT ALLOWED"
  console.log(`  ${edge.padEnd(26)} ${String(files.length).padStart(3)} files  ${mark}`)
}
const unused = Object.entries(allowedEdges).flatMap(([from, tos]) =>
  Object.keys(tos)
    .map((to) => `${from} → ${to}`)
    .filter((edge) => !found.has(edge))
)
if (unused.length > 0) console.log(`allowed but not used (could be dropped from the table): ${unused.join(", ")}`)

if (problems.length > 0) {
  console.error("core/ import check failed:\n" + problems.join("\n"))
  process.exit(1)
}
console.log(`core/ import check: ${files.length} files import only effect and core/, along allowed edges`)
