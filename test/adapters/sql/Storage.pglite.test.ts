// Every storage port's contract suite on the pglite storage variant.
import * as StoragePorts from "../../core/ports/suites/StoragePorts.ts"

StoragePorts.suite("pglite")
