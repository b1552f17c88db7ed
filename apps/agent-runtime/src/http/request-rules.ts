/**
 * The one set of rules for what the API accepts, used by every DTO (and so by the OpenAPI document and by the
 * request validation built from it): the channel endpoint and the admin endpoints accept exactly the same ids.
 */

interface StringRule {
  type: StringConstructor;
  maxLength: number;
  minLength?: number;
  pattern: string;
}

/** Tenant and agent ids: letters, digits, `_ . -`, up to 64 characters. */
export const IDENTIFIER_RULE: StringRule = { type: String, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' };

/** Session and message ids: letters, digits, `_ . : @ -`, up to 128 characters. */
export const SESSION_ID_RULE: StringRule = { type: String, maxLength: 128, pattern: '^[A-Za-z0-9_.:@-]+$' };

/** The `:channel` path segment: lower-case letters, digits, `_ -`, up to 32 characters. */
export const CHANNEL_RULE: StringRule = { type: String, maxLength: 32, pattern: '^[a-z0-9_-]+$' };

/** A business identity (user_id): any printable text without control characters, up to 128 characters. */
export const USER_ID_RULE: StringRule = { type: String, maxLength: 128, minLength: 1, pattern: '^\\P{Cc}+$' };

const FREE_TEXT_PATTERN = '^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F]*$';

/** Operator free text (reasons): line breaks and tabs allowed, other control characters not. */
export const freeTextRule = (maxLength: number): StringRule => ({
  type: String,
  maxLength,
  pattern: FREE_TEXT_PATTERN,
});

/** What each pattern means, for the 400 details (a regular expression is no message for a person). */
export const PATTERN_MESSAGES: Readonly<Record<string, string>> = {
  [IDENTIFIER_RULE.pattern]: 'may contain only letters, digits, _ . -',
  [SESSION_ID_RULE.pattern]: 'may contain only letters, digits, _ . : @ -',
  [CHANNEL_RULE.pattern]: 'may contain only lower-case letters, digits, _ -',
  [USER_ID_RULE.pattern]: 'must not contain control characters',
  [FREE_TEXT_PATTERN]: 'must not contain control characters other than line breaks and tabs',
  '\\S': 'must not be blank',
};

/** JSON bodies nested deeper than this are refused before they are parsed (metadata is the only free-form part). */
export const MAX_JSON_DEPTH = 16;
