// Every storage port's contract suite on the postgres storage variant.
import * as StoragePorts from "../../support/contracts.ts"

StoragePorts.suite("postgres")
