/**
 * Every data file a spec names, with the field that names it: what `mockworld start` and the
 * workflows' start-up check before a run begins, so a missing or unreadable file is refused by
 * field name instead of failing a worker later.
 */
import type { AnySpec } from './specs.js';

/** One file a spec names: the field as errors name it (`personas.path`) and the path as written. */
export interface SpecFile {
  readonly field: string;
  readonly path: string;
}

interface TemplateChoice {
  readonly overrides: Readonly<Record<string, string | undefined>>;
}
interface Datasets {
  readonly datasets: ReadonlyArray<{ readonly path: string }>;
  readonly templates?: TemplateChoice;
}

function templateFiles(field: string, templates: TemplateChoice | undefined): SpecFile[] {
  return Object.entries(templates?.overrides ?? {}).flatMap(([stage, file]) =>
    file ? [{ field: `${field}.overrides.${stage}`, path: file }] : [],
  );
}

function benchmarkFiles(field: string, benchmarks: { math?: Datasets; search?: Datasets } | undefined) {
  return (['math', 'search'] as const).flatMap((family) => {
    const b = benchmarks?.[family];
    if (!b) return [];
    return [
      ...b.datasets.map((d, i) => ({ field: `${field}.${family}.datasets.${i}.path`, path: d.path })),
      ...templateFiles(`${field}.${family}.templates`, b.templates),
    ];
  });
}

/** The data files of a (validated) spec, in field order. */
export function specFiles(spec: AnySpec): SpecFile[] {
  switch (spec.kind) {
    case 'Synthesis':
      return [
        { field: 'personas.path', path: spec.personas.path },
        ...(spec.reasoning ? [{ field: 'reasoning.seeds.path', path: spec.reasoning.seeds.path }] : []),
        ...templateFiles('templates', spec.templates),
      ];
    case 'ScalingStudy':
      return [
        { field: 'questions.seedPool', path: spec.questions.seedPool },
        { field: 'questions.testSet', path: spec.questions.testSet },
        ...(spec.personas ? [{ field: 'personas', path: spec.personas }] : []),
      ];
    case 'GrpoTraining':
      return [
        ...templateFiles('templates', spec.templates),
        ...benchmarkFiles('benchmarks', spec.benchmarks),
      ];
    case 'Evaluation':
      return benchmarkFiles('benchmarks', spec.benchmarks);
    case 'Smoke':
    case 'JudgeAudit':
    case 'SftTraining':
      return [];
    default: {
      const unknown: never = spec;
      throw new Error(`no file rules for spec kind ${(unknown as AnySpec).kind}`);
    }
  }
}
