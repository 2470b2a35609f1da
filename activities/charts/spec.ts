/** What a chart is: a Vega-Lite spec (no vega import here, so pure modules can build charts). */
import type { TopLevelSpec } from 'vega-lite';

/** A Vega-Lite specification (the chart modules build them; the viewer embeds them as JSON). */
export type ChartSpec = TopLevelSpec;

/** The Vega-Lite schema every chart names, for editors and vega-embed's version check. */
export const VEGA_LITE_SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
