import { CodedError } from '@agent/contracts';

export const CONFIG_ERROR_CODES = ['CONFIG_FILE_INVALID', 'ENV_INVALID'] as const;
export type ConfigErrorCode = (typeof CONFIG_ERROR_CODES)[number];

/** A config file that is missing, unparsable or invalid; the message names the file and the key path. */
export class ConfigFileError extends CodedError<ConfigErrorCode> {
  constructor(
    readonly filePath: string,
    readonly problems: string[],
  ) {
    super(
      'CONFIG_FILE_INVALID',
      `Invalid config file ${filePath}:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
}

export class EnvValidationError extends CodedError<ConfigErrorCode> {
  constructor(readonly problems: string[]) {
    super('ENV_INVALID', `Invalid environment configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}
