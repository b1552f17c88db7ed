import 'reflect-metadata';
import type { ArgumentMetadata, Type } from '@nestjs/common';
import { RequestValidationError } from '../app.errors';
import { DeleteSessionQueryDto, ListSessionsQueryDto, NoFieldsBodyDto } from '../admin/admin.dto';
import { ChannelMessageDto } from './channel-message.dto';
import { RequestValidationPipe } from './request-validation.pipe';

const pipe = new RequestValidationPipe();

const message = (fields: Record<string, unknown> = {}) => ({
  tenant_id: 'acme',
  agent_id: 'telecom_contas',
  session_id: 'web-7f3a',
  text: 'Qual é o meu plano?',
  ...fields,
});

function run(value: unknown, metatype: Type<unknown>, type: ArgumentMetadata['type'] = 'body') {
  return pipe.transform(value, { type, metatype });
}

/** The `details` of the 400 the pipe answers `value` with. */
async function refusal(value: unknown, metatype: Type<unknown>, type: ArgumentMetadata['type'] = 'body') {
  const error: unknown = await run(value, metatype, type).then(
    () => new Error('accepted'),
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof RequestValidationError)) throw error;
  return error.details;
}

describe('RequestValidationPipe', () => {
  it('hands the handler the DTO with every field as sent, metadata included', async () => {
    const metadata = { locale: 'pt-BR', a: { b: [1, [2, { c: null }]] }, n: 1.5 };
    const dto = await run(message({ metadata, user_id: 'cust 1' }), ChannelMessageDto);
    expect(dto).toBeInstanceOf(ChannelMessageDto);
    expect(dto).toEqual(message({ metadata, user_id: 'cust 1' }));
  });

  it('names a missing or mistyped field once, and every problem of a field of the right type', async () => {
    expect(await refusal({ tenant_id: 5, agent_id: 'a b', text: null }, ChannelMessageDto)).toEqual([
      { field: 'tenant_id', errors: ['tenant_id must be a string'] },
      { field: 'agent_id', errors: ['agent_id may contain only letters, digits, _ . -'] },
      { field: 'session_id', errors: ['session_id is required'] },
      { field: 'text', errors: ['text must be a string'] },
    ]);
    expect(await refusal(message({ session_id: `${'x'.repeat(128)} ` }), ChannelMessageDto)).toEqual([
      {
        field: 'session_id',
        errors: [
          'session_id must be at most 128 characters',
          'session_id may contain only letters, digits, _ . : @ -',
        ],
      },
    ]);
    expect(await refusal(message({ text: ' \n ' }), ChannelMessageDto)).toEqual([
      { field: 'text', errors: ['text must not be blank'] },
    ]);
  });

  it('refuses unknown fields, null for an optional field, and a body that is not an object', async () => {
    expect(await refusal(message({ extra: 1, message_id: null }), ChannelMessageDto)).toEqual([
      { field: 'extra', errors: ['property extra should not exist'] },
      { field: 'message_id', errors: ['message_id must be a string'] },
    ]);
    for (const body of [null, [], 'end', 5]) {
      expect(await refusal(body, NoFieldsBodyDto)).toEqual([
        { field: 'body', errors: ['body must be an object'] },
      ]);
    }
  });

  it('refuses the keys class-transformer would drop, wherever they are, instead of dropping them', async () => {
    expect(await refusal(message({ metadata: { a: [{ constructor: 1 }] } }), ChannelMessageDto)).toEqual([
      { field: 'metadata.a[0].constructor', errors: ['property constructor should not exist'] },
    ]);
    expect(await refusal({ ...message(), prototype: {} }, ChannelMessageDto)).toEqual([
      { field: 'prototype', errors: ['property prototype should not exist'] },
    ]);
  });

  it('takes a body of no fields left out or empty, and nothing in it', async () => {
    await expect(run(undefined, NoFieldsBodyDto)).resolves.toBeInstanceOf(NoFieldsBodyDto);
    await expect(run({}, NoFieldsBodyDto)).resolves.toBeInstanceOf(NoFieldsBodyDto);
    expect(await refusal({ reason: 'x' }, NoFieldsBodyDto)).toEqual([
      { field: 'reason', errors: ['property reason should not exist'] },
    ]);
  });

  it('reads query text as the type its field names and refuses what does not read', async () => {
    await expect(
      run({ limit: '5', updated_after: '2024-02-03T00:00:00.123+01:00' }, ListSessionsQueryDto, 'query'),
    ).resolves.toEqual({ limit: 5, updated_after: '2024-02-03T00:00:00.123+01:00' });
    await expect(run({ purge_memory: 'false' }, DeleteSessionQueryDto, 'query')).resolves.toEqual({
      purge_memory: false,
    });
    expect(
      await refusal(
        { limit: 'abc', status: 'gone', updated_after: '2024-01-01', updated_before: '2024-02-30T00:00:00Z' },
        ListSessionsQueryDto,
        'query',
      ),
    ).toEqual([
      { field: 'status', errors: ['status must be one of active, ended, handoff'] },
      { field: 'limit', errors: ['limit must be an integer'] },
      { field: 'updated_after', errors: ['updated_after must be an ISO-8601 date-time'] },
      { field: 'updated_before', errors: ['updated_before must be an ISO-8601 date-time'] },
    ]);
    expect(await refusal({ limit: '0', purge_memory: 'yes' }, DeleteSessionQueryDto, 'query')).toEqual([
      { field: 'limit', errors: ['property limit should not exist'] },
      { field: 'purge_memory', errors: ['purge_memory must be a boolean'] },
    ]);
  });

  it('answers at most 20 field errors', async () => {
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`extra${i}`, i]));
    expect(await refusal(message(many), ChannelMessageDto)).toHaveLength(20);
  });
});
