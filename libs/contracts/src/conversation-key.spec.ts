import { conversationKeyOf, sessionIdOf } from './conversation-key';

describe('ConversationKey', () => {
  it('reads back the session id it was built from, colons included', () => {
    const key = conversationKeyOf('acme', 'web:7f3a@x');
    expect(key).toBe('acme:web:7f3a@x');
    expect(sessionIdOf(key, 'acme')).toBe('web:7f3a@x');
  });
});
