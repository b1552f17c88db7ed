import { reportedCodes } from './reported-codes';

describe('reportedCodes', () => {
  it("keeps a rail's code when it judged the text, and names why when it could not", () => {
    const judged = { code: 'PINJ', metadata: { source: 'llm', verdict: 'block' } };
    const noVerdict = (code: string) => ({
      code,
      error: 'no guardrail verdict (http_error)',
      metadata: { source: 'llm', profile: 'guardrail', fail_closed: true },
    });
    const crashed = {
      code: 'INPUT_SIZE',
      error: 'rail INPUT_SIZE timed out',
      metadata: { fail_closed: true },
    };
    expect(reportedCodes([judged])).toEqual(['PINJ']);
    expect(reportedCodes([noVerdict('PINJ'), noVerdict('COER')])).toEqual(['GUARDRAIL_MODEL_UNAVAILABLE']);
    expect(reportedCodes([crashed, judged])).toEqual(['GUARDRAIL_FAILED', 'PINJ']);
  });
});
