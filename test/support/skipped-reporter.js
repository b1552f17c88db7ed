/**
 * Lists every skipped test at the end of a run with its full name, which says why it was skipped (for example
 * "needs DATABASE_URL (CI sets it)"): the default reporter only counts them.
 */
class SkippedReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.testResults.flatMap((file) =>
      file.testResults
        .filter((test) => test.status === 'pending' || test.status === 'skipped' || test.status === 'todo')
        .map((test) => [...test.ancestorTitles, test.title].join(' › ')),
    );
    if (skipped.length === 0) return;
    process.stderr.write(
      `\nSkipped (${skipped.length}):\n${skipped.map((name) => `  - ${name}\n`).join('')}`,
    );
  }
}

module.exports = SkippedReporter;
