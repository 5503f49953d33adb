// After `tsc -p tsconfig.build.json`: tsc rewrites the `.ts` extension of relative imports in the
// emitted JavaScript (`rewriteRelativeImportExtensions`) but not in the declaration files, so a
// consumer's TypeScript would look for `.ts` files the package does not ship. This rewrites every
// relative `.ts` specifier in dist/**/*.d.ts to `.js`, whose declarations sit beside it.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path) : path.endsWith(".d.ts") ? [path] : []
  })

let rewritten = 0
for (const file of walk(join(process.cwd(), "dist"))) {
  const source = readFileSync(file, "utf8")
  const next = source.replace(/(["'])(\.{1,2}\/[^"']*?)\.ts\1/g, (_, quote, path) => `${quote}${path}.js${quote}`)
  if (next !== source) {
    writeFileSync(file, next)
    rewritten++
  }
}
console.log(`build: relative .ts specifiers rewritten to .js in ${rewritten} declaration files`)
