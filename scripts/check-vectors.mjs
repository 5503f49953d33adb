// The tests read the conformance vectors from the in-repo copy test/fixtures/conformance/vectors.json,
// so `npm test` runs in a clone with nothing beside it. When the shared vectors (computed by an
// independent implementation) sit beside the repository, the copy must equal them.
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"

const root = process.cwd()
const copy = join(root, "test/fixtures/conformance/vectors.json")
const shared = resolve(root, "../shared/conformance/vectors.json")

if (!existsSync(copy)) {
  console.error(`check:vectors: ${copy} is missing`)
  process.exit(1)
}
if (!existsSync(shared)) {
  console.log("check:vectors: skipped (no ../shared/conformance/vectors.json beside the repository)")
  process.exit(0)
}
const parse = (path) => JSON.parse(readFileSync(path, "utf8"))
if (JSON.stringify(parse(copy)) !== JSON.stringify(parse(shared))) {
  console.error(
    "check:vectors: test/fixtures/conformance/vectors.json differs from ../shared/conformance/vectors.json;\n" +
      "  copy the shared file again: cp ../shared/conformance/vectors.json test/fixtures/conformance/vectors.json"
  )
  process.exit(1)
}
console.log("check:vectors: the copy equals ../shared/conformance/vectors.json")
