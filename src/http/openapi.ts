/**
 * The OpenAPI 3.1 document of the API, served at GET /v1/openapi.json.
 * The request body schema (generate.ts) describes what the generate route
 * accepts; the route itself checks the body with its own byte-level checker
 * (src/bytes/json-check.ts), not with this schema. Statuses, messages and
 * headers follow http/errors.ts and the hooks.
 */
import type { FastifyInstance } from 'fastify';
import { SERVICE_VERSION } from '../version.js';
import { ENGINE_IDS, ENGINE_VERSIONS, type EngineId } from '../engines.js';
import { MESSAGES } from '../messages.js';
import { generateBodySchema, generateFormSchema } from './openapi-request.js';

type Json = Record<string, unknown>;

const ref = (kind: 'schemas' | 'headers' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** Headers every response carries (onSend hook in app.ts). */
const COMMON_HEADERS = {
  'X-Request-Id': ref('headers', 'RequestId'),
  'Cache-Control': ref('headers', 'CacheControl'),
  'X-Content-Type-Options': ref('headers', 'ContentTypeOptions'),
};

/** Headers of every response of a rate-limited operation, 401 and 429 included. */
const RATE_HEADERS = {
  'X-RateLimit-Limit': ref('headers', 'RateLimitLimit'),
  'X-RateLimit-Remaining': ref('headers', 'RateLimitRemaining'),
  'X-RateLimit-Reset': ref('headers', 'RateLimitReset'),
};

function errorResponse(description: string, extraHeaders: Json = {}): Json {
  return {
    description,
    headers: { ...COMMON_HEADERS, ...RATE_HEADERS, ...extraHeaders },
    content: { 'application/json': { schema: ref('schemas', 'Error') } },
  };
}

function errorExample(message: string): Json {
  return { error: message };
}

export interface OpenApiOptions {
  /** Whether GET /metrics is served on the API port. */
  metricsRoute: boolean;
  /** The engine of a request without a `typst` field (the operator's TYPST_VERSION). */
  defaultEngine: EngineId;
}

function openApiDocument(options: OpenApiOptions): Json {
  const retryAfter = { 'Retry-After': ref('headers', 'RetryAfter') };
  const protectedResponses = {
    '401': ref('responses', 'Unauthorized'),
    '429': ref('responses', 'RateLimited'),
    '503': ref('responses', 'Unavailable'),
  };

  const paths: Json = {
    '/v1/pdf/generate': {
      post: {
        operationId: 'generatePdf',
        summary: 'Render a PDF from JSON data and a Typst template',
        security: [{ bearerAuth: [] }],
        requestBody: {
          required: true,
          description:
            'At most 10 × 1024 × 1024 bytes: UTF-8 JSON, or a multipart form with the same fields, whose files travel as they are.',
          content: {
            'application/json': { schema: generateBodySchema },
            'multipart/form-data': { schema: generateFormSchema },
          },
        },
        responses: {
          '200': {
            description: 'The PDF.',
            headers: {
              ...COMMON_HEADERS,
              ...RATE_HEADERS,
              'Content-Disposition': {
                required: true,
                schema: { type: 'string', const: 'inline; filename="document.pdf"' },
              },
              'Content-Length': { required: true, schema: { type: 'integer', minimum: 1 } },
              'X-Typst-Version': ref('headers', 'TypstVersion'),
              'X-Typst-Warnings': {
                required: false,
                description:
                  'Warnings: the count, then `line N, column C: message` items separated by ` | `; characters outside printable ASCII, and the backslash, as `\\uXXXX` (UTF-16 code units).',
                schema: { type: 'string' },
              },
              'X-Einvoice-Warnings': {
                required: false,
                description:
                  "An e-invoice's business-rule warnings (EINVOICE_RULES): `ID: text` items separated by ` | `; characters outside printable ASCII as `?`.",
                schema: { type: 'string' },
              },
            },
            content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
          },
          '400': errorResponse(
            'The body is not a JSON object with `data` (object) and `template` (string), a `typst` or `pdf` field is not one the service takes, ' +
              'the template does not compile, the PDF export refuses it under the standard asked for, ' +
              "or an e-invoice's XML is missing, not well-formed, not valid against its profile's XSD or breaks a business rule. " +
              'or a signature is asked of a service without a signing identity. ' +
              'An answer of the compiler names the engine in `X-Typst-Version`.',
            {
              'X-Typst-Version': {
                required: false,
                description: 'The exact Typst version that compiled the template (absent when the body was refused before).',
                schema: { enum: ENGINE_IDS.map((id) => ENGINE_VERSIONS[id]) },
              },
            },
          ),
          '404': errorResponse('Any path that is not one of an operation here.'),
          '408': errorResponse('The request, or its body, was not received in time.'),
          '413': errorResponse('The body exceeds 10 × 1024 × 1024 bytes.'),
          '415': errorResponse(
            '`Content-Type` is neither `application/json` (UTF-8) nor `multipart/form-data`, or the body is compressed.',
          ),
          '422': errorResponse(
            'The compile exceeded the time or memory limit and was stopped, the PDF is over its limit, ' +
              'or the template or a string in `data` holds text the engines crash on (refused before the compile).',
            {
              'X-Typst-Version': {
                required: true,
                description: 'The exact Typst version of the engine the compile ran on.',
                schema: { enum: ENGINE_IDS.map((id) => ENGINE_VERSIONS[id]) },
              },
            },
          ),
          '431': errorResponse('The request headers exceed 16 KiB or 1,000 lines.'),
          '500': errorResponse('The compiler crashed.'),
          ...protectedResponses,
        },
      },
      ...Object.fromEntries(
        ['get', 'put', 'delete', 'patch', 'options', 'trace'].map((method) => [
          method,
          {
            operationId: `${method}GenerateNotAllowed`,
            summary: 'Not allowed: the route takes POST only',
            responses: {
              '405': errorResponse('The route takes POST only.', {
                Allow: { required: true, description: 'The one method the route takes.', schema: { const: 'POST' } },
              }),
            },
          },
        ]),
      ),
    },
    '/v1/fonts': {
      get: {
        operationId: 'listFonts',
        summary: 'Font families a template can name',
        security: [{ bearerAuth: [] }],
        responses: {
          '200': {
            description: 'The families the workers loaded.',
            headers: { ...COMMON_HEADERS, ...RATE_HEADERS },
            content: { 'application/json': { schema: ref('schemas', 'FontList') } },
          },
          ...protectedResponses,
        },
      },
    },
    '/v1/openapi.json': {
      get: {
        operationId: 'openApiDocument',
        summary: 'This document',
        security: [],
        responses: {
          '200': {
            description: 'OpenAPI 3.1 document.',
            headers: COMMON_HEADERS,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['openapi', 'info', 'paths'],
                  properties: { openapi: { const: '3.1.0' }, info: { type: 'object' }, paths: { type: 'object' } },
                },
              },
            },
          },
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'liveness',
        summary: 'Liveness: 200 while the process runs',
        security: [],
        responses: {
          '200': {
            description: 'Alive.',
            headers: COMMON_HEADERS,
            content: { 'application/json': { schema: ref('schemas', 'Health') } },
          },
        },
      },
    },
    '/readyz': {
      get: {
        operationId: 'readiness',
        summary: 'Readiness: workers up and room in the queue',
        security: [],
        responses: {
          '200': {
            description: 'Ready to take requests.',
            headers: COMMON_HEADERS,
            content: { 'application/json': { schema: ref('schemas', 'Readiness') } },
          },
          '503': {
            description: 'Not ready: no worker is ready, the queue is full, or the service is shutting down.',
            headers: COMMON_HEADERS,
            content: { 'application/json': { schema: ref('schemas', 'Readiness') } },
          },
        },
      },
    },
  };
  if (options.metricsRoute) {
    paths['/metrics'] = {
      get: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        security: [],
        responses: {
          '200': {
            description: 'Prometheus text exposition format.',
            headers: COMMON_HEADERS,
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
      },
    };
  }

  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Typst PDF service',
      version: SERVICE_VERSION,
      description: `Renders a PDF from a JSON \`data\` object and a Typst template, on Typst ${ENGINE_IDS.map((id) => ENGINE_VERSIONS[id]).join(' or ')} (default ${ENGINE_VERSIONS[options.defaultEngine]}). Nothing is stored.`,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer <API_KEY>`.' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          additionalProperties: false,
          properties: { error: { type: 'string', description: 'Human-readable message.' } },
        },
        Health: {
          type: 'object',
          required: ['status'],
          properties: { status: { const: 'ok' } },
        },
        Readiness: {
          type: 'object',
          required: ['status', 'size', 'ready', 'busy', 'queued', 'queueLimit'],
          properties: {
            status: { enum: ['ready', 'unavailable'] },
            reason: { type: 'string', description: 'Why the service is not ready (on 503).' },
            size: { type: 'integer', minimum: 0, description: 'Workers configured.' },
            ready: { type: 'integer', minimum: 0, description: 'Workers started and able to take a job.' },
            busy: { type: 'integer', minimum: 0, description: 'Workers compiling.' },
            queued: { type: 'integer', minimum: 0, description: 'Jobs waiting for a worker.' },
            queueLimit: { type: 'integer', minimum: 0, description: 'Jobs allowed to wait.' },
            signing: {
              type: 'boolean',
              description: 'Whether the service has a signing identity: `pdf.signature` is taken (else it is a 400).',
            },
          },
        },
        FontList: {
          type: 'object',
          required: ['families'],
          properties: {
            families: {
              type: 'array',
              items: {
                type: 'object',
                required: ['family', 'aliasOf', 'styles', 'source'],
                properties: {
                  family: { type: 'string', description: 'Name to use in `#set text(font: ...)`.' },
                  aliasOf: { type: ['string', 'null'], description: 'Family whose glyphs are used, or null.' },
                  styles: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['style', 'weight'],
                      properties: { style: { type: 'string' }, weight: { type: 'integer' } },
                    },
                  },
                  source: { type: 'string', description: 'npm package that ships the files, or `typst`.' },
                  typst: {
                    type: 'array',
                    items: { type: 'string' },
                    description:
                      'The engines (`0.11`, `0.14`) that have this family, when not both: a font built into one Typst version only.',
                  },
                },
              },
            },
          },
        },
      },
      headers: {
        RequestId: {
          required: true,
          description: 'The `X-Request-Id` the client sent (1-128 of `A-Za-z0-9_.:-`), or a new one.',
          schema: { type: 'string', pattern: '^[\\w.:-]{1,128}$' },
        },
        CacheControl: { required: true, schema: { type: 'string', const: 'no-store' } },
        TypstVersion: {
          required: true,
          description: 'The exact Typst version the document was compiled with.',
          schema: { enum: ENGINE_IDS.map((id) => ENGINE_VERSIONS[id]) },
        },
        ContentTypeOptions: { required: true, schema: { type: 'string', const: 'nosniff' } },
        RateLimitLimit: {
          required: true,
          description: 'Requests allowed in the one-minute window.',
          schema: { type: 'integer', minimum: 0 },
        },
        RateLimitRemaining: {
          required: true,
          description: 'Requests remaining in the current one-minute window.',
          schema: { type: 'integer', minimum: 0 },
        },
        RateLimitReset: {
          required: true,
          description: 'UNIX time, in seconds, at which the window resets.',
          schema: { type: 'integer', minimum: 0 },
        },
        RetryAfter: {
          required: true,
          description: 'Seconds to wait before retrying.',
          schema: { type: 'integer', minimum: 0 },
        },
      },
      responses: {
        Unauthorized: errorResponse('`Authorization` is missing, malformed or names an unknown key.', {
          'WWW-Authenticate': { required: true, schema: { type: 'string', const: 'Bearer' } },
        }),
        RateLimited: {
          ...errorResponse(
            'The key used up its requests for this minute, or (generate) its requests crashed the engine more than `CRASHES_PER_MINUTE` times in this window.',
            { 'Retry-After': ref('headers', 'RetryAfter') },
          ),
          content: {
            'application/json': { schema: ref('schemas', 'Error'), example: errorExample(MESSAGES.rateLimited) },
          },
        },
        // The limiter counts a request before a shutdown 503 is answered (see app.ts), so every 503 under /v1 carries its headers.
        Unavailable: {
          description:
            'All workers busy and the queue full, a job waited too long, answers held for slow readers at their bound, or shutting down.',
          headers: { ...COMMON_HEADERS, ...RATE_HEADERS, ...retryAfter },
          content: {
            'application/json': { schema: ref('schemas', 'Error'), example: errorExample(MESSAGES.unavailable) },
          },
        },
      },
    },
  };
}

export function openApiRoute(app: FastifyInstance, options: OpenApiOptions): void {
  const document = JSON.stringify(openApiDocument(options));
  app.get('/v1/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(document));
}
