import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { z } from 'zod';
import { confirmationOutput, parameterValuesOutput } from '@agent/agents';
import { AppConfigModule, ConfigFilesService, EnvValidationError, parseEnvNamespace } from '@agent/config';
import { continuityOutput } from '@agent/continuity';
import { railVerdictSchema } from '@agent/guardrails';
import { judgeVerdict } from '@agent/judges';
import {
  LlmError,
  LlmHttpError,
  LlmModule,
  LlmService,
  ProfileStatus,
  StructuredOutput,
  structuredOutput,
} from '@agent/llm';
import { memoryFactsOutput } from '@agent/memory';
import { ObservabilityModule } from '@agent/observability';
import { routerOutput } from '@agent/routing';

/** Just the configuration and the model client: no database, no HTTP server. */
@Module({ imports: [AppConfigModule, ObservabilityModule, LlmModule] })
class CheckModule {}

/** A JSON-answering stage's contract, and an answer that satisfies it for the model to repeat. */
interface JsonCheck {
  output: StructuredOutput<unknown>;
  example: Record<string, unknown>;
}

interface CheckRow {
  profile: string;
  model: string;
  latency: string;
  /** Answered correctly, or was skipped because it is optional. */
  ok: boolean;
  /** Optional and not configured: the embedding profile (RAG then uses full-text search only). */
  skipped?: boolean;
  result: string;
}

/** The JSON-answering stages by the profile each is configured to use. */
function jsonChecks(files: ConfigFilesService): Map<string, JsonCheck> {
  const intent = files.routing.intents.find((i) => i.enabled)?.name ?? 'none';
  return new Map<string, JsonCheck>([
    [
      parseEnvNamespace('continuity').ROUTE_STICKINESS_LLM_PROFILE,
      { output: continuityOutput, example: { decision: 'CONTINUE', confidence: 0.9, reason: 'check' } },
    ],
    [
      files.routing.router.llm_profile,
      { output: routerOutput, example: { intent, confidence: 0.9, reason: 'check' } },
    ],
    ['judge', { output: judgeVerdict, example: { score: 1, passed: true, reason: 'check' } }],
    [
      'guardrail',
      {
        output: structuredOutput('guardrail_verdict_check', z.object({ CHECK: railVerdictSchema })),
        example: { CHECK: { verdict: 'allow', confidence: 1, reason: null } },
      },
    ],
    [
      'confirmation',
      { output: confirmationOutput(['value']), example: { decision: 'CONFIRM', confidence: 0.9 } },
    ],
    [
      parseEnvNamespace('memory').LONG_TERM_MEMORY_LLM_PROFILE,
      {
        output: memoryFactsOutput,
        example: { facts: [{ category: 'profile', key: 'check', value: 'ok', confidence: 0.9 }] },
      },
    ],
    [
      'parameter_extraction',
      { output: parameterValuesOutput(['value']), example: { values: { value: 'ok' } } },
    ],
  ]);
}

async function checkProfile(
  llm: LlmService,
  status: ProfileStatus,
  json: JsonCheck | undefined,
): Promise<CheckRow> {
  const row = { profile: status.name, model: status.model ?? '—' };
  if (!status.reachable) {
    const result = `not configured: ${status.missing ?? ''}`;
    if (status.tier === 'embedding') {
      return {
        ...row,
        latency: '—',
        ok: true,
        skipped: true,
        result: `${result}; RAG uses full-text search`,
      };
    }
    return { ...row, latency: '—', ok: false, result };
  }
  const started = performance.now();
  const latency = () => `${Math.round(performance.now() - started)} ms`;
  try {
    if (status.tier === 'embedding') {
      const { dimensions } = await llm.embed(status.name, ['connectivity check']);
      return { ...row, latency: latency(), ok: true, result: `ok (${dimensions} dimensions)` };
    }
    if (json) {
      const result = await llm.structured({
        profile: status.name,
        output: json.output,
        maxTokens: 200,
        messages: [
          {
            role: 'system',
            content:
              `This is a connectivity check of the ${status.name} profile. Answer with exactly this JSON ` +
              `object and nothing else: ${JSON.stringify(json.example)}`,
          },
          { role: 'user', content: 'check' },
        ],
      });
      if (result.ok) return { ...row, latency: latency(), ok: true, result: `ok (${json.output.name})` };
      const failure =
        result.status !== undefined
          ? `HTTP ${result.status}: ${result.body ?? ''}`
          : `${result.reason.replace('_', ' ')}: ${result.detail}`;
      return { ...row, latency: latency(), ok: false, result: failure };
    }
    const { content } = await llm.chat({
      profile: status.name,
      maxTokens: 20,
      messages: [
        { role: 'system', content: 'This is a connectivity check: answer with the single word OK.' },
        { role: 'user', content: 'check' },
      ],
    });
    const answered = (content ?? '').trim() !== '';
    return { ...row, latency: latency(), ok: answered, result: answered ? 'ok' : 'empty answer' };
  } catch (error) {
    const result =
      error instanceof LlmHttpError
        ? `HTTP ${error.status ?? ''}: ${error.body}`
        : error instanceof LlmError
          ? `${error.kind.replace('_', ' ')}: ${error.message}`
          : String(error);
    return { ...row, latency: latency(), ok: false, result };
  }
}

function table(rows: CheckRow[]): string {
  const cells = [
    ['profile', 'model', 'latency', 'result'],
    ...rows.map((r) => [r.profile, r.model, r.latency, r.result]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...cells.map((line) => line[column].length)));
  return cells
    .map((line) => line.map((cell, column) => (column < 3 ? cell.padEnd(widths[column]) : cell)).join('  '))
    .join('\n');
}

/**
 * npm run llm:check — calls every profile of llm_profiles.yaml once with a tiny prompt (an embedding for
 * embedding profiles), validates the JSON-answering ones against their stage's contract and prints a table.
 * Exit code 0 when every profile answered correctly (an unconfigured embedding profile is optional), 1 otherwise.
 */
async function main(): Promise<number> {
  const context = await NestFactory.createApplicationContext(CheckModule, { logger: ['error'] });
  try {
    const llm = context.get(LlmService);
    const files = context.get(ConfigFilesService);
    const { profiles, profiles_path } = llm.describe();
    const checks = jsonChecks(files);
    console.log(`llm:check — ${profiles.length} profiles from ${profiles_path}`);
    const rows: CheckRow[] = [];
    for (const status of profiles) rows.push(await checkProfile(llm, status, checks.get(status.name)));
    console.log(table(rows));
    const failed = rows.filter((r) => !r.ok).length;
    const skipped = rows.filter((r) => r.skipped).length;
    const answered =
      skipped === 0
        ? 'every profile answered'
        : `every configured profile answered (${skipped} optional skipped)`;
    console.log(failed === 0 ? answered : `${failed} of ${rows.length} profiles did not answer`);
    return failed === 0 ? 0 : 1;
  } finally {
    await context.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(
      `llm:check: ${error instanceof EnvValidationError || error instanceof Error ? error.message : String(error)}`,
    );
    process.exit(1);
  },
);
