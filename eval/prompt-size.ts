/**
 * npm run eval:prompt-size — the continuity classifier's prompt for every turn of the labelled set, measured
 * without a model: the messages ContinuityService would send (system prompt and payload, built by the same
 * code from the shipped catalogue), per language, in characters and in estimated tokens (characters / 4, as the
 * scripted model server counts them).
 */
import { join } from 'node:path';
import { loadYamlFile, routingFileSchema } from '@agent/config';
import { classifierInput, CONTINUITY_SYSTEM_PROMPT } from '@agent/continuity';
import { REPO_ROOT } from '../test/support/repo-root';
import { loadDataset } from './continuity-dataset';
import { stateForTurn } from './continuity-runner';

const HISTORY_TURNS = 2;

function main(): void {
  const catalogue = loadYamlFile(join(REPO_ROOT, 'config', 'routing.yaml'), routingFileSchema);
  const dataset = loadDataset(join(REPO_ROOT, 'eval', 'dataset', 'continuity.yaml'), catalogue);
  const intents = catalogue.intents.filter((intent) => intent.enabled);
  const byLanguage = new Map<string, { turns: number; system: number; payload: number }>();
  for (const conversation of dataset.conversations) {
    conversation.turns.forEach((_turn, index) => {
      const state = stateForTurn(conversation, index, catalogue);
      const text = (state.sanitized_input ?? '').trim();
      const { payload } = classifierInput(state, intents, text, HISTORY_TURNS);
      const row = byLanguage.get(conversation.language) ?? { turns: 0, system: 0, payload: 0 };
      row.turns++;
      row.system += CONTINUITY_SYSTEM_PROMPT.length;
      row.payload += payload.length;
      byLanguage.set(conversation.language, row);
    });
  }
  console.log(
    '| language | turns | system prompt chars | payload chars per turn | prompt tokens per turn (chars/4) |',
  );
  console.log('|---|---|---|---|---|');
  for (const [language, row] of [...byLanguage].sort()) {
    const payload = row.payload / row.turns;
    const tokens = Math.ceil(CONTINUITY_SYSTEM_PROMPT.length / 4) + Math.ceil(payload / 4);
    console.log(
      `| ${language} | ${row.turns} | ${CONTINUITY_SYSTEM_PROMPT.length} | ${Math.round(payload)} | ${tokens} |`,
    );
  }
}

main();
