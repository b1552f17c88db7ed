import { loggableUrl, serializeRequest } from './request-log';

describe('request log', () => {
  it('keeps paths and parameter names but never a query value', () => {
    expect(loggableUrl('/v1/admin/sessions')).toBe('/v1/admin/sessions');
    expect(loggableUrl('/v1/admin/sessions?tenant_id=acme&api_key=secret-key-1&flag')).toBe(
      '/v1/admin/sessions?tenant_id=[REDACTED]&api_key=[REDACTED]&flag=[REDACTED]',
    );
    expect(loggableUrl('/x?token=a%3Db&&')).toBe('/x?token=[REDACTED]');
  });

  it('redacts every header that carries a credential', () => {
    const request = {
      id: 'r1',
      method: 'GET',
      url: '/v1/admin/sessions?key=admin-key-global',
      headers: {
        authorization: 'Bearer admin-key-global',
        'x-api-key': 'admin-key-global',
        'proxy-authorization': 'Basic abc',
        cookie: 'sid=admin-key-global',
        'user-agent': 'curl/8',
      },
      remoteAddress: '127.0.0.1',
    };
    const logged = JSON.stringify(serializeRequest(request));
    expect(logged).not.toContain('admin-key-global');
    expect(logged).not.toContain('abc');
    expect(logged).toContain('curl/8');
    expect(logged).toContain('"url":"/v1/admin/sessions?key=[REDACTED]"');
  });
});
