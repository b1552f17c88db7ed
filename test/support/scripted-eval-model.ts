/**
 * The scripted model of the evaluation: an OpenAI-compatible server answering every stage of `npm run eval` from the
 * labels of eval/dataset, so the command's plumbing can be run and tested without a model. About one answer in
 * eight (chosen by a hash of the message, the same on every run) is wrong at a low confidence, so the report's
 * confusion, calibration and threshold sections have something to show. It proves the report is produced and
 * well-formed, never a model's accuracy. Run it alone to try the command:
 *
 *   node dist/test/support/scripted-eval-model.js            # prints the LLM_BASE_URL to use
 *   LLM_BASE_URL=<that> LLM_PROFILES_PATH=test/support/config/llm_profiles.yaml npm run eval
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { loadYamlFile, routingFileSchema, toolsFileSchema } from '@agent/config';
import { loadDataset } from '../../eval/continuity-dataset';
import {
  loadGuardrailCorpus,
  loadJudgeSet,
  loadMemorySet,
  loadParameterSet,
  loadRouterSet,
  loadTransactionSet,
} from '../../eval/datasets';
import { FakeChatRequest, FakeLlmServer, FakeReply, guardrailChecks, lastUserMessage } from './fake-llm';
import { REPO_ROOT } from './repo-root';

/** The scripted answer's quality for a message: wrong for about one in eight, and how confident. */
function draw(text: string): { wrong: boolean; confidence: number } {
  const hash = createHash('sha256').update(text).digest();
  const a = hash[0] / 256;
  const b = hash[1] / 256;
  return a < 0.125
    ? { wrong: true, confidence: Math.round((0.55 + 0.4 * b) * 100) / 100 }
    : { wrong: false, confidence: Math.round((0.75 + 0.25 * b) * 100) / 100 };
}

function payload(request: FakeChatRequest): Record<string, unknown> {
  try {
    return JSON.parse(lastUserMessage(request)) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** Another label of the list: the scripted model's mistake. */
function other<T>(labels: readonly T[], label: T): T {
  return labels[(labels.indexOf(label) + 1) % labels.length];
}

/**
 * Scripts `fake` to answer every stage from the labels (the test profiles name each profile's model after it).
 * The router's answer to `plantedInvalid` is prose: an invalid output, to exercise that path.
 */
export function scriptFromLabels(
  fake: FakeLlmServer,
  plantedInvalid: string | null = null,
  root = REPO_ROOT,
): void {
  const datasets = join(root, 'eval', 'dataset');
  const routing = loadYamlFile(join(root, 'config', 'routing.yaml'), routingFileSchema);
  const catalogue = { routing, tools: loadYamlFile(join(root, 'config', 'tools.yaml'), toolsFileSchema) };
  const intents = routing.intents.filter((i) => i.enabled).map((i) => i.name);
  const continuity = new Map<string, string>();
  for (const conversation of loadDataset(join(datasets, 'continuity.yaml'), routing).conversations) {
    for (const turn of conversation.turns) {
      if (!continuity.has(turn.user)) continuity.set(turn.user, turn.label);
    }
  }
  const router = loadRouterSet(join(datasets, 'router.yaml'), catalogue).cases;
  const corpus = loadGuardrailCorpus(join(datasets, 'guardrails')).cases;
  const transactions = loadTransactionSet(join(datasets, 'transactions.yaml'), catalogue).cases;
  const parameters = loadParameterSet(join(datasets, 'parameters.yaml'), catalogue).cases;
  const memory = loadMemorySet(join(datasets, 'memory.yaml')).cases;
  const judges = loadJudgeSet(join(datasets, 'judges.yaml'), catalogue).cases;

  fake.script({
    model: 'route_continuity',
    reply: (request): FakeReply => {
      const message = String(payload(request).current_message);
      const label = continuity.get(message) ?? 'ROUTE';
      const { wrong, confidence } = draw(message);
      const decision = wrong ? (label === 'CONTINUE' ? 'ROUTE' : 'CONTINUE') : label;
      return { json: { decision, confidence, reason: 'scripted label' } };
    },
  });
  fake.script({
    model: 'router',
    reply: (request): FakeReply => {
      const message = String(payload(request).message);
      if (message === plantedInvalid) return { content: 'It is about the bill, I think.' };
      const item = router.find((c) => c.text === message);
      const [first, ...more] = item?.intents ?? [];
      const { wrong, confidence } = draw(message);
      const intent = first === undefined ? 'none' : wrong ? other(intents, first) : first;
      return {
        json: {
          intent,
          confidence: first === undefined ? 0 : confidence,
          reason: 'scripted',
          ...(more.length > 0
            ? { more_intents: more.map((name) => ({ intent: name, confidence: 0.9 })) }
            : {}),
        },
      };
    },
  });
  fake.script({
    model: 'guardrail',
    reply: (request): FakeReply => {
      const text = lastUserMessage(request);
      const item = corpus.find((c) => text.includes(c.text));
      const { wrong, confidence } = draw(text);
      const attack = (item?.label === 'attack') !== wrong;
      return {
        json: Object.fromEntries(
          guardrailChecks(request).map((code) => [
            code,
            attack && code === 'PINJ'
              ? { verdict: 'block', confidence, reason: 'scripted attack' }
              : { verdict: 'allow', confidence },
          ]),
        ),
      };
    },
  });
  fake.script({
    model: 'confirmation',
    reply: (request): FakeReply => {
      const message = lastUserMessage(request);
      const item = transactions.find((c) => c.message === message);
      const { wrong, confidence } = draw(message);
      // The scripted mistake is the costly one: a reply read as a confirmation it is not (or the reverse).
      const decision = !wrong ? (item?.label ?? 'OTHER') : item?.label === 'CONFIRM' ? 'OTHER' : 'CONFIRM';
      return {
        json: {
          decision,
          confidence,
          operation: decision === 'REPLACE' ? (item?.operation ?? null) : null,
          values: decision === 'CORRECT' ? (item?.values ?? {}) : {},
        },
      };
    },
  });
  // parameter_extraction has no profile of its own in the test profiles: it falls back to `default`.
  fake.script({
    model: 'default',
    reply: (request): FakeReply => {
      const message = lastUserMessage(request);
      const { wrong, confidence } = draw(message);
      const control = transactions.find((c) => c.message === message);
      if (control) {
        const action = control.label === 'OTHER' ? 'ANSWER' : control.label;
        return {
          json: {
            action: wrong ? (action === 'ABANDON' ? 'ANSWER' : 'ABANDON') : action,
            confidence,
            operation: control.operation ?? null,
            values: {},
          },
        };
      }
      const item = parameters.find((c) => c.message === message);
      const values = Object.fromEntries(
        Object.entries(item?.expected ?? {}).map(([field, value]) => [
          field,
          wrong ? null : Array.isArray(value) ? value[0] : value,
        ]),
      );
      return { json: { action: 'ANSWER', confidence, operation: null, values } };
    },
  });
  fake.script({
    model: 'memory_extraction',
    reply: (request): FakeReply => {
      const message = String(payload(request).customer_message);
      const item = memory.find((c) => c.message === message);
      const { wrong, confidence } = draw(message);
      const facts = (item?.facts ?? []).map((fact, i) => ({
        category: fact.category,
        key: `fact_${i}`,
        value: fact.value[0],
        confidence,
      }));
      if (wrong) facts.push({ category: 'other', key: 'guess', value: message, confidence: 0.6 });
      return { json: { facts } };
    },
  });
  fake.script({
    model: 'judge',
    reply: (request): FakeReply => {
      const system = String(request.messages[0]?.content ?? '');
      const name = /the (\w+) judge/.exec(system)?.[1] ?? '';
      const text = lastUserMessage(request);
      const item = judges.find((c) => text.includes(c.answer));
      const expected = item ? (item.expected as Record<string, string>)[name] : 'pass';
      const { wrong } = draw(`${name}\n${text}`);
      const pass = (expected !== 'fail') !== wrong;
      return { json: { score: pass ? 0.9 : 0.2, passed: pass, reason: 'scripted' } };
    },
  });
}

if (require.main === module) {
  void FakeLlmServer.start(Number(process.env.PORT ?? 0)).then((fake) => {
    scriptFromLabels(fake);
    console.log(`Scripted evaluation model listening: LLM_BASE_URL=${fake.baseUrl}`);
    console.log(
      'LLM_PROFILES_PATH=test/support/config/llm_profiles.yaml (each profile calls a model of its name)',
    );
  });
}
