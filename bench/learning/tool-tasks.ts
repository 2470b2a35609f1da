/**
 * The mock-world task family of the tool-use learning benchmark (bench/learning-mock-world.ts):
 * a question about a city that one of four look-up tools answers, graded by two rule-checked
 * sub-goals (docs/rubric-rules.md): the right tool was called, and with the city asked about. No
 * judge model is needed, so the 135M embedded model can be trained on it.
 */
import type { FunctionTool } from '../../schemas/function-tool.js';
import type { ExportedTask } from '../../schemas/exported-task.js';
import { seededShuffle } from '../../activities/training/sampling.js';

const cityTool = (name: string, description: string): FunctionTool => ({
  type: 'function',
  function: {
    name,
    description,
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'The city, e.g. "Paris".' } },
      required: ['city'],
    },
  },
});

/** The four tools every task offers, each with the question it answers. */
export const LOOKUPS = [
  {
    tool: cityTool('get_weather', 'The current weather in a city.'),
    question: 'What is the weather like in {city} right now?',
  },
  {
    tool: cityTool('get_local_time', 'The local time in a city.'),
    question: 'What time is it in {city} at the moment?',
  },
  {
    tool: cityTool('get_population', 'How many people live in a city.'),
    question: 'How many people live in {city}?',
  },
  {
    tool: cityTool('find_hotels', 'Hotels with free rooms in a city.'),
    question: 'Can you find me a hotel in {city}?',
  },
] as const;

export const CITIES = [
  'Paris',
  'Tokyo',
  'Lima',
  'Oslo',
  'Cairo',
  'Berlin',
  'Madrid',
  'Sydney',
  'Toronto',
  'Nairobi',
  'Mumbai',
  'Seoul',
  'Dublin',
  'Prague',
  'Vienna',
  'Lisbon',
  'Quito',
  'Hanoi',
  'Dakar',
  'Perth',
] as const;

/** One task of the family, in the `tasks.jsonl` layout `mockworld import` reads. */
export function toolTask(lookup: (typeof LOOKUPS)[number], city: string): ExportedTask {
  const name = lookup.tool.function.name;
  return {
    task_id: `${name}-${city.toLowerCase()}`,
    prompt: [{ role: 'user', content: lookup.question.replace('{city}', city) }],
    tools: LOOKUPS.map((l) => l.tool),
    hidden_context: `The user is asking about ${city} and has nothing to add.`,
    rubric: {
      forbidden: [],
      subGoals: [`Called ${name}`, `Called ${name} for ${city}`],
      requiredInteractions: [],
      checks: {
        subGoals: [
          { kind: 'called', tool: name },
          { kind: 'called', tool: name, args: { city } },
        ],
      },
    },
  };
}

/** Every (tool, city) task, split by a seeded shuffle into held-out and training tasks. */
export function splitToolTasks(
  heldOut: number,
  seed: number,
): { heldOut: ExportedTask[]; train: ExportedTask[] } {
  const all = LOOKUPS.flatMap((lookup) => CITIES.map((city) => toolTask(lookup, city)));
  const shuffled = seededShuffle(all, seed);
  return { heldOut: shuffled.slice(0, heldOut), train: shuffled.slice(heldOut) };
}
