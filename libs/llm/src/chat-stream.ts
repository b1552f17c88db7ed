import type OpenAI from 'openai';
import type { RequestOptions } from 'openai/internal/request-options';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';

/** Hears each piece of an answer's text as the model writes it. */
export type TextListener = (delta: string) => void;

/**
 * The chat completion `params` asks for, requested as a stream (`stream: true`, usage in the final chunk) and
 * folded back into the completion a non-streamed call returns, so the caller reads one shape either way;
 * `onText` hears every content piece as it arrives. The SDK's own timeout stops at the response headers and
 * an aborted stream ends its iteration quietly: the profile's deadline here covers the whole body, and a
 * stream cut by it, by the caller's signal or before its finish reason throws instead of passing for complete.
 */
export async function streamedCompletion(
  client: OpenAI,
  params: ChatCompletionCreateParamsNonStreaming,
  options: RequestOptions,
  onText: TextListener,
): Promise<ChatCompletion> {
  const deadline = AbortSignal.timeout(options.timeout ?? Number.MAX_SAFE_INTEGER);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const stream = await client.chat.completions.create(
    { ...params, stream: true, stream_options: { include_usage: true } },
    { ...options, signal },
  );
  let id = '';
  let created = 0;
  let model = params.model;
  let content: string | null = null;
  let finishReason: ChatCompletion.Choice['finish_reason'] | null = null;
  let usage: ChatCompletion['usage'];
  const toolCalls: ChatCompletionMessageFunctionToolCall[] = [];
  for await (const chunk of stream) {
    id = chunk.id;
    created = chunk.created;
    model = chunk.model;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    const text = choice.delta.content;
    if (typeof text === 'string' && text !== '') {
      content = (content ?? '') + text;
      onText(text);
    }
    for (const call of choice.delta.tool_calls ?? []) {
      const known = toolCalls[call.index];
      if (known) {
        known.function.arguments += call.function?.arguments ?? '';
        continue;
      }
      toolCalls[call.index] = {
        id: call.id ?? `call_${call.index}`,
        type: 'function',
        function: { name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' },
      };
    }
  }
  if (signal.aborted) {
    // Named as the SDK's own deadline error is, so the caller maps both alike.
    const error = new Error(
      deadline.aborted
        ? `the model stream did not end within ${options.timeout} ms`
        : 'the model stream was cancelled',
    );
    error.name = deadline.aborted ? 'TimeoutError' : 'AbortError';
    throw error;
  }
  // The SDK ends its iteration quietly when the body ends: a stream cut before its last chunk (a proxy, a
  // provider that went away) has no finish reason, and its text is not the whole answer.
  if (finishReason === null) throw new Error('the model stream ended before its finish reason');
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        logprobs: null,
        finish_reason: finishReason,
        message: {
          role: 'assistant',
          content,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls.filter(Boolean) } : {}),
        },
      },
    ],
    ...(usage ? { usage } : {}),
  };
}
