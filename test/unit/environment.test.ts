import { describe, expect, it } from 'vitest';
import { loadEnvironment } from '../../schemas/environment.js';

describe('loadEnvironment', () => {
  it('takes an empty variable as unset, as compose files and manifests pass them', () => {
    const env = loadEnvironment({
      MOCKWORLD_PAYLOAD_KEY: '',
      MOCKWORLD_BUILD_ID: '',
      MOCKWORLD_MODEL_GATEWAY_AUTH: '',
      MOCKWORLD_CODEC_PORT: '',
    });
    expect(env.MOCKWORLD_PAYLOAD_KEY).toBeUndefined();
    expect(env.MOCKWORLD_BUILD_ID).toBeUndefined();
    expect(env.MOCKWORLD_MODEL_GATEWAY_AUTH).toBeUndefined();
    expect(env.MOCKWORLD_CODEC_PORT).toBe(8888);
    expect(env.MOCKWORLD_DEPLOYMENT_NAME).toBe('mockworld');
  });

  it('still refuses a bad value, naming the variable', () => {
    expect(() => loadEnvironment({ MOCKWORLD_METRICS_ADDRESS: 'nine-four-six-four' })).toThrow(
      /MOCKWORLD_METRICS_ADDRESS: must be host:port/,
    );
    expect(() => loadEnvironment({ MOCKWORLD_MODEL_GATEWAY_AUTH: 'short' })).toThrow(
      /MOCKWORLD_MODEL_GATEWAY_AUTH/,
    );
  });
});
