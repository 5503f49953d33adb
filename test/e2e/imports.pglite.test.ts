// Bulk import over HTTP against the real server on PGlite (in memory).
import { suite } from "./imports.ts"

suite("pglite")
