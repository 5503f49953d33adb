// Payments end to end on PGlite.
import { suite } from "./payments.ts"

suite("pglite")
