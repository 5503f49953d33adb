// The files under entry/ (the package.json `exports` map) are for embedders only. Source never
// imports an entry point, neither by path nor by the package's own name ("accord/kit"), as Effect's
// source never imports a barrel: entry files would otherwise become hubs for import cycles.
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = process.cwd()
const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const packageName = packageJson.name
// Exports that point straight at a module (adapters/memory/Storage.ts) name ordinary modules;
// only the gathering files in entry/ are off limits.
const entryFolder = resolve(root, "entry")

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path) : path.endsWith(".ts") ? [path] : []
  })

const problems = []
const sources = ["core", "adapters", "runtimes"].flatMap((dir) => walk(join(root, dir)))
for (const file of sources) {
  const source = readFileSync(file, "utf8")
  for (const match of source.matchAll(
    /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+["']([^"']+)["']|(?:^|\n)\s*import\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g
  )) {
    const spec = match[1] ?? match[2] ?? match[3]
    const name = relative(root, file)
    if (spec === packageName || spec.startsWith(`${packageName}/`)) {
      problems.push(`${name}: imports the package entry point ${spec}`)
    } else if (spec.startsWith(".") && resolve(dirname(file), spec).startsWith(entryFolder + "/")) {
      problems.push(`${name}: imports the entry file ${spec}`)
    }
  }
}
if (problems.length > 0) {
  console.error("entry import check failed (entry/ is for embedders only):\n" + problems.join("\n"))
  process.exit(1)
}
console.log(`entry import check: ${sources.length} source files import no entry file`)
