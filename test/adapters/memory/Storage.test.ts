// The memory adapter against every storage port's contract, as an adapter author runs it: the
// suites, the adapter and the cipher all imported from the package's entry points.
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Memory from "accord/memory"
import { Cipher } from "accord/protocol"
import { StoragePorts } from "accord/testing"

const masterKey = Redacted.make(new Uint8Array(32).map((_, i) => i + 1))

StoragePorts.suite("memory", () => Memory.layer.pipe(Layer.provideMerge(Cipher.layerAesGcm(masterKey))))
