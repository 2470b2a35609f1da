// Every pipeline workflow, registered by name: the name is the spec kind and the UI's workflow type.
export { Smoke } from './smoke';
export { Synthesis } from './synthesis';
export { SynthesisTask } from './synthesis-task';
export { GrpoTraining } from './grpo-training';
export { GrpoGroup } from './grpo-group';
export { ScalingStudy } from './scaling-study';
export { StudySampling } from './study-sampling';
export { StudyCell } from './study-cell';
