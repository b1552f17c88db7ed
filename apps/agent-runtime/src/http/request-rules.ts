import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IS_BOOLEAN,
  IS_INT,
  IS_OBJECT,
  IS_STRING,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsString,
  isISO8601,
  isRFC3339,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateBy,
  ValidateIf,
} from 'class-validator';

/**
 * The one set of rules for what the API accepts. Each field decorator applies a rule twice from the same values:
 * to class-validator (what the request validation checks) and to the OpenAPI document (what it shows), so the
 * channel endpoint and every admin endpoint accept exactly the same ids and the document states the limits.
 */

export interface TextRule {
  maxLength: number;
  minLength?: number;
  pattern?: RegExp;
  /** What the pattern means, for the 400 details (a regular expression is no message for a person). */
  meaning?: string;
}

/** Tenant and agent ids: letters, digits, `_ . -`, up to 64 characters. */
export const IDENTIFIER: TextRule = {
  maxLength: 64,
  pattern: /^[A-Za-z0-9_.-]+$/,
  meaning: 'may contain only letters, digits, _ . -',
};

/** Session and message ids: letters, digits, `_ . : @ -`, up to 128 characters. */
export const SESSION_ID: TextRule = {
  maxLength: 128,
  pattern: /^[A-Za-z0-9_.:@-]+$/,
  meaning: 'may contain only letters, digits, _ . : @ -',
};

/** The `:channel` path segment: lower-case letters, digits, `_ -`, up to 32 characters. */
export const CHANNEL: TextRule = {
  maxLength: 32,
  pattern: /^[a-z0-9_-]+$/,
  meaning: 'may contain only lower-case letters, digits, _ -',
};

/** A business identity (user_id, a memory subject): printable text without control characters, up to 128. */
export const USER_ID: TextRule = {
  maxLength: 128,
  minLength: 1,
  pattern: /^\P{Cc}+$/u,
  meaning: 'must not contain control characters',
};

/** The customer's message: up to 32,000 characters, not blank. */
export const MESSAGE_TEXT: TextRule = {
  maxLength: 32_000,
  minLength: 1,
  pattern: /\S/,
  meaning: 'must not be blank',
};

/** Operator free text (reasons): line breaks and tabs allowed, other control characters not. */
export const freeText = (maxLength: number): TextRule => ({
  maxLength,
  pattern: /^(?:[\t\n\r]|\P{Cc})*$/u,
  meaning: 'must not contain control characters other than line breaks and tabs',
});

/** A dead letter id: a bigint as digits. */
export const DIGITS_ID: TextRule = {
  maxLength: 18,
  pattern: /^[0-9]{1,18}$/,
  meaning: 'must be 1 to 18 digits',
};

/** JSON bodies nested deeper than this are refused before they are parsed (metadata is the only free-form part). */
export const MAX_JSON_DEPTH = 16;

/**
 * The constraints that say a value is missing or of the wrong type: when one fails, the field's other checks
 * (length, pattern, range) say nothing more, so the 400 names only it.
 */
export const PRESENCE_CONSTRAINT = 'isPresent';
export const TYPE_CONSTRAINTS: readonly string[] = [
  PRESENCE_CONSTRAINT,
  IS_STRING,
  IS_INT,
  IS_BOOLEAN,
  IS_OBJECT,
];

/** Words for the OpenAPI document; the shape comes from the rule. */
export type FieldDoc = Pick<ApiPropertyOptions, 'description' | 'example' | 'default'> & {
  /** Left out of a request, the field is absent; `null` is never accepted for it. */
  optional?: boolean;
};

/** The field is there (`null` is there, and then of the wrong type). */
const IsPresent = (): PropertyDecorator =>
  ValidateBy({
    name: PRESENCE_CONSTRAINT,
    validator: {
      validate: (value: unknown) => value !== undefined,
      defaultMessage: () => '$property is required',
    },
  });

/**
 * A required field must be there; an optional one may be left out but, when sent, is checked like a required
 * one: `null` is not "left out".
 */
function presence(doc: FieldDoc): PropertyDecorator {
  return doc.optional ? ValidateIf((_object: object, value: unknown) => value !== undefined) : IsPresent();
}

/** The field's schema in the OpenAPI document, from the same values the checks use. */
interface DocumentedSchema {
  type: StringConstructor | BooleanConstructor | 'integer';
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  enum?: string[];
  format?: string;
  minimum?: number;
  maximum?: number;
}

function documented(doc: FieldDoc, schema: DocumentedSchema): PropertyDecorator {
  const { optional, ...words } = doc;
  return ApiProperty({ ...schema, ...words, required: !optional });
}

export function TextField(rule: TextRule, doc: FieldDoc = {}): PropertyDecorator {
  return applyDecorators(
    presence(doc),
    IsString({ message: '$property must be a string' }),
    MaxLength(rule.maxLength, { message: '$property must be at most $constraint1 characters' }),
    ...(rule.minLength ? [MinLength(rule.minLength, { message: '$property must not be empty' })] : []),
    ...(rule.pattern
      ? [Matches(rule.pattern, { message: `$property ${rule.meaning ?? 'is not valid'}` })]
      : []),
    documented(doc, {
      type: String,
      maxLength: rule.maxLength,
      ...(rule.minLength ? { minLength: rule.minLength } : {}),
      ...(rule.pattern ? { pattern: rule.pattern.source } : {}),
    }),
  );
}

export function EnumField(values: readonly string[], doc: FieldDoc = {}): PropertyDecorator {
  return applyDecorators(
    presence(doc),
    IsIn(values, { message: '$property must be one of $constraint1' }),
    documented(doc, { type: String, enum: [...values] }),
  );
}

/** An RFC 3339 date-time with its zone that is also a real day (no February 30). */
function IsDateTime(): PropertyDecorator {
  return ValidateBy({
    name: 'isDateTime',
    validator: {
      validate: (value: unknown) => isRFC3339(value) && isISO8601(value, { strict: true }),
      defaultMessage: () => '$property must be an ISO-8601 date-time',
    },
  });
}

export function DateTimeField(doc: FieldDoc = {}): PropertyDecorator {
  return applyDecorators(presence(doc), IsDateTime(), documented(doc, { type: String, format: 'date-time' }));
}

/** A free-form JSON object (client metadata); its nesting is bounded for the whole body by MAX_JSON_DEPTH. */
export function JsonObjectField(doc: FieldDoc = {}): PropertyDecorator {
  const { optional, ...words } = doc;
  return applyDecorators(
    presence(doc),
    IsObject({ message: '$property must be an object' }),
    ApiProperty({ type: 'object', additionalProperties: true, ...words, selfRequired: !optional }),
  );
}

// ---- query parameters: text on the wire, read as the type they name ----

/** `limit=5` is the integer 5; anything that is not a number stays text and fails the check. */
const queryNumber = Transform(
  ({ value }: { value: unknown }) =>
    typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))
      ? Number(value)
      : value,
  { toClassOnly: true },
);

/** `true` and `false` are the booleans; any other text fails the check. */
const queryBoolean = Transform(
  ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value),
  { toClassOnly: true },
);

export function IntegerQuery(
  range: { minimum: number; maximum: number },
  doc: FieldDoc = {},
): PropertyDecorator {
  return applyDecorators(
    queryNumber,
    presence(doc),
    IsInt({ message: '$property must be an integer' }),
    Min(range.minimum, { message: '$property must be >= $constraint1' }),
    Max(range.maximum, { message: '$property must be <= $constraint1' }),
    documented(doc, { type: 'integer', ...range }),
  );
}

export function BooleanQuery(doc: FieldDoc = {}): PropertyDecorator {
  return applyDecorators(
    queryBoolean,
    presence(doc),
    IsBoolean({ message: '$property must be a boolean' }),
    documented(doc, { type: Boolean }),
  );
}
