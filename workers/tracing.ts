/**
 * OpenTelemetry traces, off by default: with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_ENDPOINT) set, a worker exports spans over OTLP/HTTP: Temporal's interceptors
 * (@temporalio/interceptors-opentelemetry) trace each workflow and activity, with the trace
 * context carried through Temporal's headers, and the model layer adds a span per paid model
 * call (activities/llm), so a run reads as workflow → activity → model call.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { loadEnvironment } from '../schemas/environment.js';

/** The worker's tracing: the Temporal plugin to add, and how to flush at shutdown. */
export interface WorkerTracing {
  readonly plugin: OpenTelemetryPlugin;
  shutdown(): Promise<void>;
}

let installed: WorkerTracing | null | undefined;

/**
 * The process's tracing, set up once from the standard OTEL_* variables (the exporter reads its
 * endpoint, headers and timeout itself); null when no endpoint is set.
 */
export function workerTracing(env: NodeJS.ProcessEnv = process.env): WorkerTracing | null {
  if (installed !== undefined) return installed;
  const settings = loadEnvironment(env); // checked there: the endpoints carry no credentials
  if (!settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT && !settings.OTEL_EXPORTER_OTLP_ENDPOINT)
    return (installed = null);
  const resource = new Resource({ 'service.name': settings.OTEL_SERVICE_NAME });
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: 1_000 });
  // Registered globally, so the model layer's spans (@opentelemetry/api) join the activity's trace.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  installed = {
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor }),
    shutdown: () => provider.shutdown(),
  };
  return installed;
}
