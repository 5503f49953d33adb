// core/ imports nothing but `effect` and its own modules, and takes time and randomness from
// services: no Date.now(), new Date() or Math.random(). So core runs on every runtime, and
// `TestClock` and memory layers control everything it does.
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path) : path.endsWith(".ts") ? [path] : []
  })

const problems = []
for (const file of walk("core")) {
  const source = readFileSync(file, "utf8")
  for (const match of source.matchAll(
    /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g
  )) {
    const spec = match[1] ?? match[2]
    const allowed =
      spec === "effect" ||
      spec.startsWith("effect/") ||
      ((spec.startsWith("./") || spec.startsWith("../")) && !spec.includes("adapters/"))
    if (!allowed) problems.push(`${file}: imports ${spec}`)
    if (spec.startsWith("../") && !join(file, "..", spec).startsWith("core"))
      problems.push(`${file}: imports outside core/: ${spec}`)
  }
  for (const banned of ["Date.now(", "new Date()", "Math.random("]) {
    if (source.includes(banned)) problems.push(`${file}: uses ${banned}; take it from a service`)
  }
}
if (problems.length > 0) {
  console.error("core/ purity check failed:\n" + problems.join("\n"))
  process.exit(1)
}
console.log(`core/ purity check: ${walk("core").length} files import only effect and core/`)
