/**
 * The pure building blocks of the synthetic-data scaling study (seed §4, §6, §7, App. 11.3):
 * answer extraction and the exact-match fast path, the judge and teacher prompts and the judge's
 * verdict, Evol-Instruct prompts and filters, embedding-based selection, trace repair and persona
 * prompting. No I/O in the `build*` functions: the caller passes a template it loaded with `loadTemplate`; the
 * async `teacherPrompt`, `judgePrompt`, `repairPrompt` and `evolInstructMessages` load it for them
 * (the shipped v1 unless a template choice is given; cached per process).
 */
export {
  exactMatch,
  extractFinalAnswer,
  resolveOption,
  type AnswerSource,
  type ExtractedAnswer,
} from './answers.js';
export { ProtocolInputError } from './errors.js';
export {
  buildEvolInstructMessages,
  evolInstructMessages,
  evolSeedPrompt,
  FREE_ANSWER_OPTION_COUNT,
  requestedOptionCount,
  type EvolSeed,
} from './evol-prompt.js';
export {
  checkEvolvedFormat,
  DEFAULT_SIMILARITY_THRESHOLD,
  EVOLVED_QUESTION_SCHEMA_NAME,
  EvolvedQuestionSchema,
  evolvedAsStudyQuestion,
  filterBySimilarity,
  FormatRejectionSchema,
  SimilarityRejectionSchema,
  type EvolvedQuestion,
  type FormatCheck,
  type FormatRejection,
  type SimilarityCandidate,
  type SimilarityDecision,
  type SimilarityRejection,
} from './evolved-questions.js';
export { buildJudgePrompt, goldTarget, judgePrompt, type JudgePromptInput } from './judge-prompt.js';
export {
  compareNumeric,
  FastVerdictSchema,
  numericallyEqual,
  parseNumericAnswer,
  RELATIVE_TOLERANCE,
  type FastVerdict,
  type NumericAnswer,
} from './numeric-answer.js';
export { choosePersona, choosePersonaIndex, personaMessages, personaSystemMessage } from './persona.js';
export {
  formatQuestion,
  letterIndex,
  MAX_OPTIONS,
  optionLetter,
  optionsOf,
  type StudyQuestion,
} from './question-format.js';
export {
  buildRepairPrompt,
  CHECK_OPENING,
  composeRepairTrace,
  FIX_OPENING,
  REPAIR_SCHEMA_NAME,
  RepairOutputSchema,
  repairPrompt,
  RepairVariantSchema,
  type RepairOutput,
  type RepairPromptInput,
  type RepairVariant,
} from './repair.js';
export { cosineDistance, selectDiverseResponses } from './selection.js';
export { requireStage, SHIPPED_TEMPLATES, type PromptMessage } from './stage-template.js';
export { buildTeacherPrompt, teacherPrompt } from './teacher-prompt.js';
export { jaccardDistance, jaccardSimilarity, tokenSet } from './text-similarity.js';
