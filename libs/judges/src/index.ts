export * from './judges.module';
export * from './judges.service';
export { JUDGE_NAMES, JUDGES_FILE, judgesFileSchema } from './judges.config';
export type { JudgeName, JudgesFile } from './judges.config';
export { judgeVerdict } from './judges/llm-judge';
