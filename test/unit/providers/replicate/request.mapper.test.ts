import { replicateAdapter } from '../../../../shared/providers/replicate';
import { buildCancelPrediction, buildCreatePrediction, buildGetPrediction, replicateInput } from '../../../../shared/providers/replicate/request.mapper';
import { isUpstreamError } from '../../../../shared/providers/upstream-error';

describe('Replicate request mapper', () => {
  it('creates a prediction on the model endpoint with {input} and a bearer token', () => {
    const spec = buildCreatePrediction({ model: 'google/veo-3', input: { prompt: 'A wave', duration: 4 } }, 'r8_key');
    expect(spec).toEqual({
      method: 'POST',
      path: '/models/google/veo-3/predictions',
      headers: { authorization: 'Bearer r8_key', 'content-type': 'application/json', accept: 'application/json' },
      body: { input: { prompt: 'A wave', duration: 4 } },
    });
  });

  it('uses POST /predictions with the version for owner/name:version', () => {
    const spec = buildCreatePrediction({ model: 'stability-ai/sdxl:39ed52f2a78e', input: { prompt: 'x' } }, 'k');
    expect(spec.path).toBe('/predictions');
    expect(spec.body).toEqual({ version: '39ed52f2a78e', input: { prompt: 'x' } });
  });

  it('refuses a model name it cannot address, without sending anything', () => {
    try {
      buildCreatePrediction({ model: 'just-a-name', input: {} }, 'k');
      throw new Error('expected a failure');
    } catch (e) {
      expect(isUpstreamError(e) && e.failure.reason).toBe('bad_request');
    }
  });

  it('reads and cancels a prediction by id', () => {
    expect(buildGetPrediction('abc', 'k')).toMatchObject({ method: 'GET', path: '/predictions/abc' });
    expect(buildCancelPrediction('abc', 'k')).toMatchObject({ method: 'POST', path: '/predictions/abc/cancel' });
  });

  it('translates our input names through the parameter table, passes unknown ones through and never sends callBackUrl', () => {
    expect(
      replicateInput({
        prompt: 'p',
        images: [{ type: 'url', data: 'https://x/a.png' }, { type: 'base64', data: 'AAAA' }],
        max_images: 2,
        isEnhance: true,
        guidance_scale: 3.5,
        strength: 0.4,
        enable_safety_checker: false,
        image_resolution: '2K',
        output_compression: 80,
        callBackUrl: 'https://hook',
        motion_bucket_id: 127,
        seed: undefined,
      }),
    ).toEqual({
      prompt: 'p',
      image: 'https://x/a.png',
      image_input: ['https://x/a.png', 'data:image/png;base64,AAAA'],
      num_outputs: 2,
      enhance_prompt: true,
      guidance: 3.5,
      prompt_strength: 0.4,
      disable_safety_checker: true,
      resolution: '2K',
      output_quality: 80,
      motion_bucket_id: 127,
    });
  });

  it('is declared in its manifest as a media adapter', () => {
    expect(replicateAdapter.kind).toBe('replicate');
    expect(replicateAdapter.supports.media).toBe(true);
    expect(replicateAdapter.media).toBeDefined();
    expect(replicateAdapter.text).toBeUndefined();
  });
});
