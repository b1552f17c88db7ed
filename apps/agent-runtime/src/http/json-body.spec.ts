import { jsonDepthExceeds } from './json-body';

describe('jsonDepthExceeds', () => {
  it('counts object and array nesting, not brackets inside strings', () => {
    expect(jsonDepthExceeds('{"a":{"b":[1,[2]]}}', 4)).toBe(false);
    expect(jsonDepthExceeds('{"a":{"b":[1,[2]]}}', 3)).toBe(true);
    expect(jsonDepthExceeds(`{"text":"${'['.repeat(100)}"}`, 2)).toBe(false);
    expect(jsonDepthExceeds(`{"text":"say \\"{[\\" ok","m":{}}`, 2)).toBe(false);
    expect(jsonDepthExceeds(`${'['.repeat(30000)}${']'.repeat(30000)}`, 16)).toBe(true);
    expect(jsonDepthExceeds('[[],[],[],[]]', 2)).toBe(false);
  });
});
