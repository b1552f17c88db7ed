import { ConfigFileError } from '@agent/config';

/** The ConfigFileError `work` throws; any other outcome fails the test. */
export function configErrorOf(work: () => unknown): ConfigFileError {
  try {
    work();
  } catch (error) {
    if (error instanceof ConfigFileError) return error;
    throw error;
  }
  throw new Error('expected a ConfigFileError');
}
