// The customer kit and the real server through a service outage, on PGlite on disk.
import { suite } from "./outage.ts"

suite("pglite")
