/** The embedded model default: an OpenAI-compatible server over the pinned SmolLM2-135M-Instruct. */
export {
  startEmbeddedModelServer,
  type EmbeddedModelServer,
  type EmbeddedModelServerOptions,
} from './server.js';
export {
  EmbeddedModel,
  defaultThreads,
  defaultContexts,
  DEFAULT_SEQUENCES,
  type EmbeddedModelOptions,
  type ChatCompletion,
  type EmbeddingList,
} from './engine.js';
export { ApiError } from './errors.js';
export { toGbnfJsonSchema, withDefs, ANY_JSON } from './json-schema-grammar.js';
export {
  EMBEDDED_MODEL,
  EmbeddedModelFetchError,
  embeddedModelPath,
  ensureEmbeddedModel,
} from '../../deploy/embedded-model/fetch-model.js';
