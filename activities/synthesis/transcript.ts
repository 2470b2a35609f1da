import { BOUNDS } from '../../schemas/bounds.js';

/** Longest tool output or message kept per line when a transcript is shown to a grader. */
const MAX_PART_CHARS = 600;

interface TranscriptMessage {
  role: string;
  content?: unknown;
  tool_calls?: { function: { name: string; arguments: string } }[];
}

function clip(text: string): string {
  return text.length > MAX_PART_CHARS ? `${text.slice(0, MAX_PART_CHARS)}…` : text;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part as { text?: string }).text ?? '').join('');
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

/**
 * Renders an episode's messages as compact lines for graders (rubric extraction, judging):
 * the agent's words and tool calls, tool results and the user's answers, each clipped, and the
 * whole at most `maxChars` (the lines past it are counted, not shown), so a grader's prompt stays
 * bounded however many turns and calls the episode had.
 */
export function renderTranscript(
  messages: readonly TranscriptMessage[],
  maxChars: number = BOUNDS.gradedTranscriptChars,
): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === 'system') continue;
    const text = contentText(message.content).trim();
    if (message.role === 'assistant') {
      if (text) lines.push(`agent: ${clip(text)}`);
      for (const call of message.tool_calls ?? [])
        lines.push(`agent calls ${call.function.name}(${clip(call.function.arguments)})`);
    } else if (message.role === 'tool') lines.push(`result: ${clip(text)}`);
    else lines.push(`${message.role}: ${clip(text)}`);
  }
  let length = 0;
  const shown = lines.findIndex((line) => (length += line.length + 1) > maxChars);
  if (shown < 0) return lines.join('\n');
  return [...lines.slice(0, shown), `… (${lines.length - shown} more lines not shown)`].join('\n');
}
