import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { z } from 'zod';
import { confirmationOutput, parameterValuesOutput } from '@agent/agents';
import {
  AppConfigModule,
  ConfigFilesService,
  EnvValidationError,
  loadYamlFile,
  parseEnvNamespace,
  RoutingFile,
} from '@agent/config';
import { continuityOutput } from '@agent/continuity';
import { GUARDRAILS_FILE, guardrailsFileSchema, railVerdictSchema } from '@agent/guardrails';
import { JUDGES_FILE, judgesFileSchema, judgeVerdict } from '@agent/judges';
import {
  LlmError,
  LlmHttpError,
  LlmModule,
  LlmService,
  LlmUnreachableError,
  NetworkFailure,
  ProfileStatus,
  StructuredOutput,
  structuredOutput,
} from '@agent/llm';
import { memoryFactsOutput } from '@agent/memory';
import { ObservabilityModule } from '@agent/observability';
import { EMBEDDING_PROFILE } from '@agent/rag';
import { routerOutput } from '@agent/routing';
import { startDemoModel } from '../quick-start/demo-model.start';

/** Just the configuration and the model client: no database, no HTTP server. */
@Module({ imports: [AppConfigModule, ObservabilityModule, LlmModule] })
class CheckModule {}

/** A JSON-answering stage's contract, and an answer that satisfies it for the model to repeat. */
interface JsonCheck {
  output: StructuredOutput<unknown>;
  example: Record<string, unknown>;
}

interface CheckRow {
  /** The profile's name; `name → default` for one a stage names that llm_profiles.yaml lacks. */
  profile: string;
  model: string;
  latency: string;
  /** Answered correctly, or was skipped because it is optional. */
  ok: boolean;
  /** Optional and not configured: the embedding profile (RAG then uses full-text search only). */
  skipped?: boolean;
  result: string;
  /** The agent_ids whose turns call it: `all`, a list, or `—` for a profile no stage names. */
  agents: string;
}

/** How a stage uses a profile: the JSON contract it must answer (none: plain text), by which agents' turns. */
interface ProfileUse {
  json?: JsonCheck;
  agents: Set<string>;
}

const JUDGE_CHECK: JsonCheck = {
  output: judgeVerdict,
  example: { score: 1, passed: true, reason: 'check' },
};
const GUARDRAIL_CHECK: JsonCheck = {
  output: structuredOutput('guardrail_verdict_check', z.object({ CHECK: railVerdictSchema })),
  example: { CHECK: { verdict: 'allow', confidence: 1, reason: null } },
};

function routerCheck(routing: RoutingFile): JsonCheck {
  const intent = routing.intents.find((i) => i.enabled)?.name ?? 'none';
  return { output: routerOutput, example: { intent, confidence: 0.9, reason: 'check' } };
}

/**
 * Every profile a stage names, with its contract and the agents whose turns call it: the runtime-wide stages for
 * every agent, and the router, guardrail and judge profiles of each agent's routing, guardrails and judges file
 * (its own, else the global one). `judge` and `guardrail` keep their contract when no file names them.
 */
function profileUses(files: ConfigFilesService): Map<string, ProfileUse> {
  const everyAgent = Object.keys(files.agents.agents);
  const uses = new Map<string, ProfileUse>();
  const use = (profile: string, agents: readonly string[], json?: JsonCheck) => {
    const entry = uses.get(profile) ?? { agents: new Set<string>() };
    entry.json ??= json;
    for (const agent of agents) entry.agents.add(agent);
    uses.set(profile, entry);
  };
  use(parseEnvNamespace('continuity').ROUTE_STICKINESS_LLM_PROFILE, everyAgent, {
    output: continuityOutput,
    example: { decision: 'CONTINUE', confidence: 0.9, reason: 'check' },
  });
  use(parseEnvNamespace('memory').LONG_TERM_MEMORY_LLM_PROFILE, everyAgent, {
    output: memoryFactsOutput,
    example: { facts: [{ category: 'profile', key: 'check', value: 'ok', confidence: 0.9 }] },
  });
  use('confirmation', everyAgent, {
    output: confirmationOutput(['value']),
    example: { decision: 'CONFIRM', confidence: 0.9 },
  });
  use('parameter_extraction', everyAgent, {
    output: parameterValuesOutput(['value']),
    example: { values: { value: 'ok' } },
  });
  for (const agent of Object.values(files.agents.graph_agents)) use(agent.llm_profile, everyAgent);
  use(EMBEDDING_PROFILE, everyAgent);
  use('judge', [], JUDGE_CHECK);
  use('guardrail', [], GUARDRAIL_CHECK);
  for (const { value, agents } of files.routings.users()) {
    use(value.router.llm_profile, agents, routerCheck(value));
  }
  const guardrails = files.perAgent('guardrails', files.load(GUARDRAILS_FILE, guardrailsFileSchema), (path) =>
    loadYamlFile(path, guardrailsFileSchema),
  );
  for (const { value, agents } of guardrails.users()) use(value.llm_profile, agents, GUARDRAIL_CHECK);
  const judges = files.perAgent('judges', files.load(JUDGES_FILE, judgesFileSchema), (path) =>
    loadYamlFile(path, judgesFileSchema),
  );
  for (const { value, agents } of judges.users()) {
    for (const profile of [value.profile, ...value.judges.flatMap((j) => (j.profile ? [j.profile] : []))]) {
      use(profile, agents, JUDGE_CHECK);
    }
  }
  return uses;
}

/** `all` when every agent of agents.yaml, else the agent_ids; `—` when none. */
function agentsCell(agents: ReadonlySet<string>, everyAgent: readonly string[]): string {
  if (agents.size === 0) return '—';
  if (everyAgent.every((agent) => agents.has(agent))) return 'all';
  return [...agents].join(', ');
}

async function checkProfile(
  llm: LlmService,
  status: ProfileStatus,
  json: JsonCheck | undefined,
  label: Pick<CheckRow, 'profile' | 'agents'>,
): Promise<CheckRow> {
  const row = { ...label, model: status.model ?? '—' };
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
      const failure = result.unreachable
        ? unreachableText(result.unreachable)
        : result.status !== undefined
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
      error instanceof LlmUnreachableError
        ? unreachableText(error)
        : error instanceof LlmHttpError
          ? `HTTP ${error.status ?? ''}: ${error.body}`
          : error instanceof LlmError
            ? `${error.kind.replace('_', ' ')}: ${error.message}`
            : String(error);
    return { ...row, latency: latency(), ok: false, result };
  }
}

/** The endpoint and what stopped the request reaching it: refused, DNS, TLS, timeout, reset, unreachable. */
function unreachableText({ url, network }: { url: string; network: NetworkFailure }): string {
  return `unreachable: ${url}: ${network.description} (${network.code})`;
}

function table(rows: CheckRow[]): string {
  const cells = [
    ['profile', 'model', 'latency', 'result', 'agents'],
    ...rows.map((r) => [r.profile, r.model, r.latency, r.result, r.agents]),
  ];
  const last = cells[0].length - 1;
  const widths = cells[0].map((_, column) => Math.max(...cells.map((line) => line[column].length)));
  return cells
    .map((line) =>
      line.map((cell, column) => (column < last ? cell.padEnd(widths[column]) : cell)).join('  '),
    )
    .join('\n');
}

/**
 * npm run llm:check — calls every profile of llm_profiles.yaml, and every other profile a stage or an agent's
 * routing, guardrails or judges file names (which falls back to `default`), once with a tiny prompt (an embedding
 * for embedding profiles), validates the JSON-answering ones against their stage's contract and prints a table
 * with the agents whose turns call each. Exit code 0 when every profile answered correctly (an unconfigured
 * embedding profile is optional), 1 otherwise.
 */
async function main(): Promise<number> {
  // What npm start would call: the demo model too, when it is asked for or nothing else is configured.
  const demoModel = await startDemoModel();
  const context = await NestFactory.createApplicationContext(CheckModule, { logger: ['error'] });
  try {
    const llm = context.get(LlmService);
    const files = context.get(ConfigFilesService);
    const { profiles, profiles_path } = llm.describe();
    const uses = profileUses(files);
    const everyAgent = Object.keys(files.agents.agents);
    const undeclared = [...uses.keys()].filter((name) => !profiles.some((p) => p.name === name));
    console.log(
      `llm:check — ${profiles.length} profiles from ${profiles_path}` +
        (undeclared.length > 0 ? `, ${undeclared.length} more named by the configuration` : ''),
    );
    const rows: CheckRow[] = [];
    for (const status of profiles) {
      const use = uses.get(status.name);
      const agents = agentsCell(use?.agents ?? new Set(), everyAgent);
      rows.push(await checkProfile(llm, status, use?.json, { profile: status.name, agents }));
    }
    for (const name of undeclared) {
      const use = uses.get(name);
      const agents = agentsCell(use?.agents ?? new Set(), everyAgent);
      // Called by its own name, with the settings of the profile it falls back to, as its stage calls it.
      const resolved = llm.resolveProfile(name);
      const status = profiles.find((p) => p.name === resolved?.name);
      if (!resolved || !status) {
        const result = 'not defined, and llm_profiles.yaml has no default';
        rows.push({ profile: name, model: '—', latency: '—', ok: false, result, agents });
        continue;
      }
      const label = { profile: `${name} → ${resolved.name}`, agents };
      rows.push(await checkProfile(llm, { ...status, name }, use?.json, label));
    }
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
    await demoModel?.stop();
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
