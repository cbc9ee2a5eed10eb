// Mocha's spec reporter plus, under each skipped test, why it was skipped (test/skip.ts), and one
// plain closing line that any CI reader understands: "tests: N passed, N failed, N skipped",
// followed by the skips counted by reason.
const Mocha = require('mocha');

const { Spec } = Mocha.reporters;
const { EVENT_RUN_END, EVENT_TEST_PENDING } = Mocha.Runner.constants;

/** The reason recorded on the test or on the nearest suite above it; test/skip.ts's NO_REASON otherwise. */
function skipReason(test) {
  for (let node = test; node; node = node.parent) if (node.skipReason) return node.skipReason;
  return 'no reason given';
}

class SpecWithSummary extends Spec {
  constructor(runner, options) {
    super(runner, options);
    const reasons = new Map();
    runner.on(EVENT_TEST_PENDING, (test) => {
      const reason = skipReason(test);
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      process.stdout.write(`${'  '.repeat(test.titlePath().length + 1)}skipped: ${reason}\n`);
    });
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats ?? { passes: 0, failures: 0, pending: 0 };
      process.stdout.write(`\ntests: ${passes} passed, ${failures} failed, ${pending} skipped\n`);
      for (const [reason, count] of reasons) process.stdout.write(`  ${count} skipped: ${reason}\n`);
    });
  }
}

module.exports = SpecWithSummary;
