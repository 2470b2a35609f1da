import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';

/**
 * What the bundle runs for a workflow type it does not export (the SDK calls the module's
 * `default` export then). Without it a misspelt type started from the UI (`Synthesys`) fails
 * every workflow task and stays RUNNING forever; with it the run fails at once, non-retryably,
 * naming the kinds a user can start. The child types (SynthesisTask, GrpoGroup, StudySampling,
 * StudyCell) are exported by name and never reach this.
 */
export async function UnknownWorkflowType(): Promise<never> {
  // Loaded on use like the spec guard's schemas: building every zod schema costs each workflow
  // execution CPU, and only this rare path needs the kinds.
  const { SPEC_KINDS } = await import(/* webpackMode: "eager" */ '../schemas/specs.js');
  const requested = workflowInfo().workflowType;
  throw ApplicationFailure.create({
    type: 'UnknownWorkflowType',
    message:
      `mockworld has no workflow type '${requested}'; start one of ${SPEC_KINDS.join(', ')} ` +
      '(the spec kind) with the JSON spec as its only input',
    nonRetryable: true,
    details: [{ requested, kinds: SPEC_KINDS }],
  });
}
