/**
 * Teacher demonstrations of the GRPO fixture's tasks (testkit/grpo-fixture.ts), stored as a
 * Synthesis run stores them: `demonstration` episodes with OpenAI chat messages (a tool call, its
 * answer, a final answer) and the task's coverage saying which of them were kept. What an
 * SftTraining run trains on, without running a synthesis.
 */
import { query } from './database.js';
import { fixtureTaskId, insertFixtureTasks } from './grpo-fixture.js';

/** The episode id of demonstration `sample` of fixture task `idx`, in the form synthesis gives it. */
export function fixtureDemonstrationId(synthesisRunId: string, idx: number, sample: number): string {
  return `${fixtureTaskId(synthesisRunId, idx)}/demo-${sample}`;
}

/** The teacher's transcript of task `idx`: look the record up, then say it is fixed. */
function demonstrationMessages(idx: number, sample: number) {
  const callId = `call-${idx}-${sample}`;
  return [
    { role: 'system', content: 'You are a support agent. Use the tools to sort out records.' },
    { role: 'user', content: `Please sort out record ${idx}.` },
    {
      role: 'assistant',
      content: 'Let me look the record up.',
      tool_calls: [
        {
          id: callId,
          type: 'function',
          function: { name: 'lookup_record', arguments: JSON.stringify({ id: `R-${idx}` }) },
        },
      ],
    },
    { role: 'tool', tool_call_id: callId, content: JSON.stringify({ id: `R-${idx}`, status: 'stale' }) },
    { role: 'assistant', content: `Record R-${idx} is fixed: I refreshed its stale status.` },
  ];
}

/**
 * Inserts `count` kept fixture tasks of `synthesisRunId`, each with `kept` kept demonstrations and
 * one more the coverage judge did not keep (it must never be trained on).
 */
export async function insertFixtureDemonstrations(
  url: string,
  demos: { synthesisRunId: string; count: number; kept: number },
): Promise<void> {
  await insertFixtureTasks(url, { synthesisRunId: demos.synthesisRunId, count: demos.count });
  for (let idx = 0; idx < demos.count; idx++) {
    const taskId = fixtureTaskId(demos.synthesisRunId, idx);
    const coverage = [];
    for (let sample = 0; sample <= demos.kept; sample++) {
      const episodeId = fixtureDemonstrationId(demos.synthesisRunId, idx, sample);
      await query(
        url,
        `INSERT INTO episodes (episode_id, task_id, purpose, sample_index, policy_version, messages, turns,
                               tool_calls, end_reason)
         VALUES ($1, $2, 'demonstration', $3, 'teacher', $4, 2, 1, 'final_answer')`,
        [episodeId, taskId, sample, JSON.stringify(demonstrationMessages(idx, sample))],
      );
      coverage.push({ episodeId, kept: sample < demos.kept, fraction: sample < demos.kept ? 1 : 0.2 });
    }
    await query(url, 'UPDATE tasks SET coverage = $2 WHERE task_id = $1', [taskId, JSON.stringify(coverage)]);
  }
}
