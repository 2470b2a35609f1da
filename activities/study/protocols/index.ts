/**
 * The pure building blocks of the synthetic-data scaling study (seed §4, §6, §7, App. 11.3):
 * answer extraction and the exact-match fast path, the judge and teacher prompts and the judge's
 * verdict, Evol-Instruct prompts and filters, embedding-based selection, trace repair and persona
 * prompting. No I/O in the `build*` functions: the caller passes a template it loaded with `loadTemplate`; the
 * async `teacherPrompt`, `judgePrompt`, `repairPrompt` and `evolInstructMessages` load it for them
 * (the shipped v1 unless a template choice is given; cached per process). The model outputs they
 * read (evolved question, repair answer, verdicts) are defined in schemas/.
 */
export {
  exactMatch,
  extractFinalAnswer,
  resolveOption,
  type AnswerSource,
  type ExtractedAnswer,
} from './answers.js';
export { ProtocolInputError } from '../errors.js';
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
  evolvedAsStudyQuestion,
  filterBySimilarity,
  type FormatCheck,
  type SimilarityCandidate,
  type SimilarityDecision,
} from './evolved-questions.js';
export { buildJudgePrompt, goldTarget, judgePrompt, type JudgePromptInput } from './judge-prompt.js';
export {
  compareNumeric,
  numericallyEqual,
  parseNumericAnswer,
  RELATIVE_TOLERANCE,
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
  repairPrompt,
  type RepairPromptInput,
} from './repair.js';
export { cosineDistance, selectDiverseResponses } from './selection.js';
export { requireStage, SHIPPED_TEMPLATES, type PromptMessage } from './stage-template.js';
export { buildTeacherPrompt, teacherPrompt } from './teacher-prompt.js';
export { jaccardDistance, jaccardSimilarity, tokenSet } from './text-similarity.js';
