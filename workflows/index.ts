// Every pipeline workflow, registered by name: the name is the spec kind and the UI's workflow type.
export { Smoke } from './smoke.js';
export { Synthesis } from './synthesis.js';
export { SynthesisTask } from './synthesis-task.js';
export { GrpoTraining } from './grpo-training.js';
export { GrpoGroup } from './grpo-group.js';
export { SftTraining } from './sft-training.js';
export { ScalingStudy } from './scaling-study.js';
export { StudySampling } from './study-sampling.js';
export { StudyCell } from './study-cell.js';
export { Evaluation } from './evaluation.js';
export { EvaluationGroup } from './evaluation-group.js';
export { JudgeAudit } from './judge-audit.js';
// Any other type: fails at once with the kinds above (a bundle that re-exports this module
// should re-export `default` too).
export { UnknownWorkflowType as default } from './unknown-type.js';
