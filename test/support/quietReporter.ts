/**
 * vitest's default reporter with one line per passing test file: the default also lists every
 * passing test slower than `slowTestThreshold`, hundreds of lines in a full run. Failing tests, and
 * every test of a failing file, are still listed, and failures are printed in full at the end; a
 * run of one file still lists its tests. Test speed is measured by benchmarks, not by this output.
 */
import type { TestCase, TestModuleState } from "vitest/node"
import { DefaultReporter } from "vitest/reporters"

export default class QuietReporter extends DefaultReporter {
  protected override printTestCase(moduleState: TestModuleState, test: TestCase): void {
    if (this.renderSucceed || moduleState === "failed" || test.result().state === "failed") {
      super.printTestCase(moduleState, test)
    }
  }
}
