/**
 * Loaded before every test file (`--import` in package.json): a failing
 * fast-check property reports the error its case threw, not only the case.
 * fast-check otherwise attaches that error as the `cause`, which the test
 * runner's TAP output (what CI prints) leaves out.
 */
import fc from 'fast-check';

fc.configureGlobal({ includeErrorInReport: true });
