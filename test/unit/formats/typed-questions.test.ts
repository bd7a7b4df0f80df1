import {
  answerFromProbabilities,
  answerScheme,
  labelProbabilities,
  logSumExp,
  questionRequest,
  readAnswer,
  scoreToken,
} from '../../../shared/formats/typed-questions.mapper';
import type { TokenLogprob } from '../../../shared/providers/provider.types';
import { MAX_QUESTIONS, parseTypedQuestionsBody } from '../../../shared/schemas/typed-questions.schema';
import { isAppError } from '../../../shared/errors/app-error';

/** One output position whose alternatives are `top` (best first, as providers send them). */
function position(top: Record<string, number>): TokenLogprob[] {
  const alts = Object.entries(top)
    .sort((a, b) => b[1] - a[1])
    .map(([token, logprob]) => ({ token, logprob }));
  return [{ token: alts[0].token, logprob: alts[0].logprob, top: alts }];
}

/** The softmax of `logs` (plain, for expectations). */
function softmax(logs: number[]): number[] {
  const z = logs.reduce((s, l) => s + Math.exp(l), 0);
  return logs.map((l) => Math.exp(l) / z);
}

const close = (actual: number, expected: number) => expect(Math.abs(actual - expected)).toBeLessThan(1e-9);

describe('answer tokens', () => {
  it('maps noul to Y/N, choice labels to letters in key order, score positions to digits then letters', () => {
    expect(answerScheme({ type: 'noul' })).toEqual({ type: 'noul', labels: ['yes', 'no'], tokens: ['Y', 'N'] });
    expect(answerScheme({ type: 'choice', criteria: { positive: 'p', negative: 'n', neutral: 'x' } })).toEqual({
      type: 'choice',
      labels: ['positive', 'negative', 'neutral'],
      tokens: ['A', 'B', 'C'],
    });
    const scale = Array.from({ length: 12 }, (_, i) => `level ${i}`);
    expect(answerScheme({ type: 'score', criteria: scale }).tokens).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', 'A', 'B', 'C']);
    expect(scoreToken(0)).toBe('1');
    expect(scoreToken(8)).toBe('9');
    expect(scoreToken(19)).toBe('K');
  });

  it('asks for one token at temperature 0 with 20 alternatives, naming the allowed tokens and the state', () => {
    const r = questionRequest({ text: 'I love it' }, { type: 'choice', instructions: 'What is the sentiment?', criteria: { positive: 'happy', negative: 'sad' } });
    expect(r).toMatchObject({ maxOutputTokens: 1, temperature: 0, logprobs: true, topLogprobs: 20, stream: false });
    expect(r.instructions).toContain('What is the sentiment?');
    expect(r.instructions).toContain('A: positive — happy');
    expect(r.instructions).toContain('B: negative — sad');
    expect(r.instructions).toContain('{"text":"I love it"}');
    expect(r.instructions).toContain('exactly one of A or B');
    expect(r.input).toHaveLength(1);
  });
});

describe('answer math', () => {
  it('noul: the probability of yes, normalised over Y and N only', () => {
    const lp = position({ Y: -0.2, N: -1.9, Maybe: -0.5, the: -3 });
    const [yes] = softmax([-0.2, -1.9]);
    const a = readAnswer(answerScheme({ type: 'noul' }), lp);
    expect(a?.type).toBe('noul');
    close((a as { noul: number }).noul, yes);
  });

  it('noul: yes/no spellings, case and leading spaces count for the same answer (their probabilities add up)', () => {
    const lp = position({ ' Yes': -1.1, y: -2.3, ' N': -0.7, no: -2.9 });
    const yes = Math.exp(-1.1) + Math.exp(-2.3);
    const no = Math.exp(-0.7) + Math.exp(-2.9);
    close((readAnswer(answerScheme({ type: 'noul' }), lp) as { noul: number }).noul, yes / (yes + no));
  });

  it('choice: probabilities over the labels sum to 1; choice is the argmax and confidence its probability', () => {
    const scheme = answerScheme({ type: 'choice', criteria: { red: '', green: '', blue: '' } });
    const lp = position({ A: -1.2, B: -0.4, ' C': -2.5, D: -0.1, x: -0.3 });
    const [pa, pb, pc] = softmax([-1.2, -0.4, -2.5]);
    const a = readAnswer(scheme, lp);
    if (a?.type !== 'choice') throw new Error('expected a choice answer');
    expect(a.choice).toBe('green');
    close(a.confidence, pb);
    close(a.probabilities.red, pa);
    close(a.probabilities.green, pb);
    close(a.probabilities.blue, pc);
    close(Object.values(a.probabilities).reduce((s, p) => s + p, 0), 1);
  });

  it('gives 0 to allowed tokens missing from the alternatives and normalises over the rest', () => {
    const scheme = answerScheme({ type: 'choice', criteria: { a: '', b: '', c: '', d: '' } });
    const ps = labelProbabilities(scheme, position({ B: -0.9, D: -1.6, Z: -0.01 }))!;
    const [pb, pd] = softmax([-0.9, -1.6]);
    expect(ps[0]).toBe(0);
    expect(ps[2]).toBe(0);
    close(ps[1], pb);
    close(ps[3], pd);
  });

  it('score: probabilities over the scale, label the argmax, score the expected position mapped to 0..1', () => {
    const scale = ['bad', 'poor', 'fair', 'good', 'great'];
    const scheme = answerScheme({ type: 'score', criteria: scale });
    const lp = position({ '1': -4, '2': -2.2, '3': -1.1, '4': -0.6, '5': -1.5, A: -0.2 });
    const ps = softmax([-4, -2.2, -1.1, -0.6, -1.5]);
    const a = readAnswer(scheme, lp);
    if (a?.type !== 'score') throw new Error('expected a score answer');
    expect(a.label).toBe('good');
    scale.forEach((l, i) => close(a.probabilities[l], ps[i]));
    close(a.score, ps.reduce((s, p, i) => s + (p * i) / 4, 0));
  });

  it('score: the first label is 0 and the last 1', () => {
    const scheme = answerScheme({ type: 'score', criteria: ['low', 'mid', 'high'] });
    expect(answerFromProbabilities(scheme, [1, 0, 0])).toMatchObject({ score: 0, label: 'low' });
    expect(answerFromProbabilities(scheme, [0, 0, 1])).toMatchObject({ score: 1, label: 'high' });
    close((answerFromProbabilities(scheme, [0.25, 0.5, 0.25]) as { score: number }).score, 0.5);
  });

  it('reads scales past nine positions through letters', () => {
    const scale = Array.from({ length: 11 }, (_, i) => `s${i}`);
    const a = readAnswer(answerScheme({ type: 'score', criteria: scale }), position({ B: -0.1, '9': -3 }));
    if (a?.type !== 'score') throw new Error('expected a score answer');
    expect(a.label).toBe('s10');
    const [p9, p11] = softmax([-3, -0.1]);
    close(a.probabilities.s8, p9);
    close(a.probabilities.s10, p11);
    close(a.score, (p9 * 8 + p11 * 10) / 10);
  });

  it('stays exact with very negative log-probabilities (log-sum-exp)', () => {
    const a = readAnswer(answerScheme({ type: 'noul' }), position({ Y: -800, N: -801 }));
    close((a as { noul: number }).noul, 1 / (1 + Math.exp(-1)));
    expect(logSumExp([])).toBe(-Infinity);
    close(logSumExp([-1000, -1000]), -1000 + Math.log(2));
  });

  it('has no answer when the reply has no log-probabilities or none of the allowed tokens', () => {
    const scheme = answerScheme({ type: 'noul' });
    expect(readAnswer(scheme, undefined)).toBeNull();
    expect(readAnswer(scheme, [])).toBeNull();
    expect(readAnswer(scheme, position({ Maybe: -0.1, the: -2 }))).toBeNull();
  });

  it('counts the chosen token even when a provider leaves it out of the alternatives', () => {
    const lp: TokenLogprob[] = [{ token: 'Y', logprob: -0.3, top: [{ token: 'N', logprob: -1.4 }] }];
    close((readAnswer(answerScheme({ type: 'noul' }), lp) as { noul: number }).noul, softmax([-0.3, -1.4])[0]);
  });
});

describe('request body', () => {
  const valid = () => ({
    state: { text: 'hello' },
    model: 'm',
    questions: {
      polite: { type: 'noul', instructions: 'Is it polite?' },
      topic: { type: 'choice', instructions: 'Topic?', criteria: { greeting: 'says hi', other: 'anything else' } },
      tone: { type: 'score', instructions: 'How warm?', criteria: ['cold', 'neutral', 'warm'] },
    },
    provider: { order: ['openai'] },
  });
  const paths = (body: unknown): string[] => {
    try {
      parseTypedQuestionsBody(body);
    } catch (e) {
      if (isAppError(e) && e.details) return e.details.errors.map((i) => i.path);
      throw e;
    }
    return [];
  };

  it('accepts every question type', () => {
    expect(paths(valid())).toEqual([]);
  });

  it('names the path of each violation', () => {
    expect(paths({ ...valid(), state: 'text' })).toContain('/state');
    expect(paths({ model: 'm', questions: valid().questions })).toContain('/state');
    expect(paths({ ...valid(), model: undefined })).toContain('/model');
    expect(paths({ ...valid(), questions: {} })).toContain('/questions');
    expect(paths({ ...valid(), provider: { data_residency: 'eu' } })).toContain('/provider/data_residency');
    expect(paths({ ...valid(), questions: { 'bad\nname': { type: 'noul', instructions: 'x' } } })).toEqual(['/questions/bad\nname']);
    expect(paths({ ...valid(), questions: { 'a/b~\t': { type: 'noul', instructions: 'x' } } })).toEqual(['/questions/a~1b~0\t']);
    expect(paths({ ...valid(), questions: { ['n'.repeat(129)]: { type: 'noul', instructions: 'x' } } })).toEqual([`/questions/${'n'.repeat(129)}`]);
    // The caller's names: any text without control characters, up to 128 characters.
    expect(paths({ ...valid(), questions: { 'Вежливо ли сообщение? (да/нет)': { type: 'noul', instructions: 'x' }, ['й'.repeat(128)]: { type: 'noul', instructions: 'x' } } })).toEqual([]);
    expect(paths({ ...valid(), questions: { q: { type: 'rank', instructions: 'x' } } })).toContain('/questions/q/type');
    expect(paths({ ...valid(), questions: { q: { type: 'noul' } } })).toContain('/questions/q/instructions');
    expect(paths({ ...valid(), questions: { q: { type: 'noul', instructions: 'x'.repeat(4001) } } })).toContain('/questions/q/instructions');
    expect(paths({ ...valid(), questions: { q: { type: 'noul', instructions: 'x', criteria: ['a', 'b'] } } })).toContain('/questions/q/criteria');
    expect(paths({ ...valid(), questions: { q: { type: 'choice', instructions: 'x' } } })).toContain('/questions/q/criteria');
    expect(paths({ ...valid(), questions: { q: { type: 'choice', instructions: 'x', criteria: { only: 'one' } } } })).toContain('/questions/q/criteria');
    expect(paths({ ...valid(), questions: { q: { type: 'choice', instructions: 'x', criteria: ['a', 'b'] } } })).toContain('/questions/q/criteria');
    expect(paths({ ...valid(), questions: { q: { type: 'score', instructions: 'x', criteria: ['a', 'a'] } } })).toContain('/questions/q/criteria');
    expect(paths({ ...valid(), questions: { q: { type: 'score', instructions: 'x', criteria: Array.from({ length: 21 }, (_, i) => `l${i}`) } } })).toContain('/questions/q/criteria');
    expect(paths({ ...valid(), questions: { q: { type: 'score', instructions: 'x', criteria: { a: 'b', c: 'd' } } } })).toContain('/questions/q/criteria');
    expect(paths({ ...valid(), extra: 1 })).toContain('/extra');
  });

  it(`allows ${MAX_QUESTIONS} questions and refuses more`, () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`q${i}`, { type: 'noul', instructions: 'x' }]));
    expect(paths({ ...valid(), questions: many(MAX_QUESTIONS) })).toEqual([]);
    expect(paths({ ...valid(), questions: many(MAX_QUESTIONS + 1) })).toEqual(['/questions']);
  });
});
