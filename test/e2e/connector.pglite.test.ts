// The connector end to end on PGlite.
import { suite } from "./connector.ts"

suite("pglite")
