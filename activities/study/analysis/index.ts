/**
 * The scaling study's pure analysis (seed 002): the fixed-source scaling-law fit and held-out
 * extrapolation, budget allocation (nested subsets, matched-budget buckets, the prefix rule),
 * intrinsic metrics of SFT pools, gaps to RS, and the rendered report. No I/O: safe to call from
 * activities and from workflow code.
 */
export {
  bucketCells,
  bucketOf,
  exampleCount,
  MATCHED_BUDGETS,
  matchedBudgetCells,
  nestedSubsets,
  POOL_QUARTERS,
  rankKey,
  RESPONSE_BUDGETS,
  subsetFor,
  subsetSize,
  trainingPrefix,
  type AcceptedResponses,
  type BudgetCell,
  type MatchedBudget,
  type NestedSubsets,
  type PoolQuarters,
  type TrainingPrefix,
} from './budgets.js';
export { AnalysisInputError } from '../errors.js';
export {
  carryForecast,
  DEFAULT_FORECAST,
  heldOutForecast,
  logLinForecast,
  pooledForecastMae,
  type Forecast,
  type ForecastOptions,
  type HeldOutForecast,
  type PooledForecastMae,
} from './extrapolate.js';
export {
  DEFAULT_ALPHA_GRID_SIZE,
  DEFAULT_ALPHA_SEARCH_MAX,
  FIT_BOUNDS,
  fitScalingLaw,
  predictScalingLaw,
  solveBoundedLinear,
  type FitOptions,
  type FittedPoint,
  type ScalingLawFit,
  type ScalingLawParams,
} from './fit.js';
export { aggregateGap, sweepMeanGap, type SweepGap } from './gap.js';
export {
  correctnessNoise,
  intrinsicMetrics,
  jaccardDistance,
  meanPairwiseJaccardDistance,
  questionJaccardDistance,
  rewriteShare,
  tokenSet,
  type CorrectnessNoise,
  type IntrinsicMetrics,
  type PoolDiversity,
  type RewriteShare,
} from './intrinsic.js';
export {
  analyzeStudy,
  renderStudyReport,
  type Outcome,
  type ProtocolAnalysis,
  type ReportFigure,
  type StudyReport,
} from './report.js';
export {
  mean,
  meanCurve,
  sampleStd,
  summarizeByBudget,
  type BudgetSummary,
  type CurvePoint,
} from './stats.js';
