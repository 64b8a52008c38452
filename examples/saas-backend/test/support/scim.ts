import { ScimError } from '../../src/scim/errors.js';

/** The ScimError `run` throws; fails the test when it throws none, or anything else (a TypeError, a RangeError). */
export function scimErrorOf(run: () => unknown): ScimError {
  try {
    run();
  } catch (error) {
    if (error instanceof ScimError) return error;
    throw new Error(`expected a ScimError, got ${String(error)}`);
  }
  throw new Error('expected a ScimError, got none');
}
