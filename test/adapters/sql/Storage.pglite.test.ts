// Every storage port's contract suite on the pglite storage variant.
import * as StoragePorts from "../../support/contracts.ts"

StoragePorts.suite("pglite")
