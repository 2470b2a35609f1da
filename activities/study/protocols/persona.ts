/**
 * Persona prompting (seed §7.1, RQ3): a persona (PersonaHub) is prepended as a system message
 * before each teacher generation. The persona of an attempt is a deterministic function of the
 * question, the attempt and the run's seed, so a retried activity asks with the same persona
 * (and hits the model cache).
 */
import { createHash } from 'node:crypto';
import { ProtocolInputError } from '../errors.js';
import type { PromptMessage } from './stage-template.js';

/**
 * The index of the persona of one teacher generation, uniform over `count` personas and
 * deterministic: the first 48 bits of SHA-256(JSON [seed, questionId, attempt]) modulo `count`
 * (bias below 2^-30 for any realistic list).
 */
export function choosePersonaIndex(count: number, questionId: string, attempt: number, seed: number): number {
  if (!Number.isInteger(count) || count < 1) {
    throw new ProtocolInputError('choosePersona', `the persona list has ${count} entries, needs at least 1`);
  }
  if (!Number.isInteger(attempt) || attempt < 0) {
    throw new ProtocolInputError('choosePersona', `attempt ${attempt} is not a non-negative integer`);
  }
  if (!Number.isSafeInteger(seed))
    throw new ProtocolInputError('choosePersona', `seed ${seed} is not an integer`);
  const digest = createHash('sha256')
    .update(JSON.stringify([seed, questionId, attempt]))
    .digest();
  return digest.readUIntBE(0, 6) % count;
}

/**
 * The persona of one teacher generation: `personas[choosePersonaIndex(...)]`. The list's order
 * is part of the choice, so load it in a stable order. `personas` may hold strings or records
 * (`{ id, persona }`); the entry itself is returned.
 */
export function choosePersona<P>(
  personas: readonly P[],
  questionId: string,
  attempt: number,
  seed: number,
): P {
  return personas[choosePersonaIndex(personas.length, questionId, attempt, seed)]!;
}

/** The system message that sets a persona; the answer format stays the teacher prompt's. */
export function personaSystemMessage(persona: string): string {
  return `Adopt the following persona. Think, reason and write the way this person would.\n\nPersona: ${persona.trim()}`;
}

/** The teacher's messages with a persona: the persona system message, then the question prompt. */
export function personaMessages(persona: string, teacherPrompt: string): readonly PromptMessage[] {
  return [
    { role: 'system', content: personaSystemMessage(persona) },
    { role: 'user', content: teacherPrompt },
  ];
}
