/**
 * The teacher's question prompt (seed §4.0.0.5, RS): the question with its options, asking for
 * step-by-step reasoning and a final `\boxed{}` answer, which {@link extractFinalAnswer} reads.
 * The same prompt is the user turn of the SFT example built from an accepted response, and the
 * student's prompt at evaluation.
 */
import {
  loadTemplate,
  renderTemplate,
  type Template,
  type TemplateChoice,
} from '../../templates/templates.js';
import { formatQuestion, type StudyQuestion } from './question-format.js';
import { requireStage, SHIPPED_TEMPLATES } from './stage-template.js';

/** Fills the `studyTeacher` template with the formatted question (pure). */
export function buildTeacherPrompt(template: Template, question: StudyQuestion): string {
  requireStage(template, 'studyTeacher', 'buildTeacherPrompt');
  return renderTemplate(template, { question: formatQuestion(question) }).trimEnd();
}

/** {@link buildTeacherPrompt} with the `studyTeacher` template of `templates` (loaded once per process). */
export async function teacherPrompt(
  question: StudyQuestion,
  templates: TemplateChoice = SHIPPED_TEMPLATES,
): Promise<string> {
  return buildTeacherPrompt(await loadTemplate('studyTeacher', templates), question);
}
