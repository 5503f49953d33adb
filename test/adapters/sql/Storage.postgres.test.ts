// Every storage port's contract suite on the postgres storage variant.
import * as StoragePorts from "../../core/ports/suites/StoragePorts.ts"

StoragePorts.suite("postgres")
