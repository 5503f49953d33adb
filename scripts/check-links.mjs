// README.md and docs/**/*.md link only inside the repository, and every relative link resolves: a
// reader of a clone (or of the hosted repository) never meets a dead link. External http(s) and
// mailto links are allowed; anchors are not checked.
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = process.cwd()
// Every Markdown file under docs/, at any depth (docs/protocol/ too); docs/api/ is generated.
const markdownUnder = (dir) =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? `${dir}/${entry.name}` === "docs/api"
        ? []
        : markdownUnder(`${dir}/${entry.name}`)
      : entry.name.endsWith(".md")
        ? [`${dir}/${entry.name}`]
        : []
  )
const files = ["README.md", ...markdownUnder("docs")]

const problems = []
for (const file of files) {
  const path = join(root, file)
  const text = readFileSync(path, "utf8").replace(/```[\s\S]*?```/g, "")
  for (const match of text.matchAll(/\.\.\/shared\b/g)) {
    problems.push(
      `${file}:${text.slice(0, match.index).split("\n").length}: names a path outside the repository: ../shared`
    )
  }
  for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1]
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) continue
    const withoutAnchor = decodeURIComponent(target.split("#")[0])
    const resolved = resolve(dirname(path), withoutAnchor)
    const line = text.slice(0, match.index).split("\n").length
    if (!resolved.startsWith(root + "/") && resolved !== root) {
      problems.push(`${file}:${line}: links outside the repository: ${target}`)
    } else if (!existsSync(resolved)) {
      problems.push(`${file}:${line}: dead link: ${target} (${relative(root, resolved)} does not exist)`)
    }
  }
}
if (problems.length > 0) {
  console.error(`check:links: ${problems.length} broken link(s):\n${problems.map((p) => `  ${p}`).join("\n")}`)
  process.exit(1)
}
console.log(`check:links: ${files.length} files, every relative link resolves inside the repository`)
