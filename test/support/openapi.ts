/**
 * Checks real HTTP answers against the service's OpenAPI document: the
 * status is described for the operation, the media type is one it lists,
 * a JSON body matches its schema (Ajv, JSON Schema 2020-12 as OpenAPI 3.1
 * uses it), a PDF body is a PDF, and every header the document requires is
 * there and matches its schema.
 */
import { request } from 'node:http';
import { Ajv2020 } from 'ajv/dist/2020.js';

type Json = Record<string, any>;

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Replaces every local `$ref` with what it points at (the document has no cycles). */
export function dereference(document: Json): Json {
  const resolve = (pointer: string): unknown =>
    pointer
      .replace(/^#\//, '')
      .split('/')
      .reduce<any>((node, part) => {
        if (node?.[part] === undefined) throw new Error(`unresolved $ref ${pointer}`);
        return node[part];
      }, document);
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node && typeof node === 'object') {
      const ref = (node as Json).$ref;
      if (typeof ref === 'string') return walk(resolve(ref));
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v)]));
    }
    return node;
  };
  return walk(document) as Json;
}

export class OpenApiChecker {
  readonly document: Json;
  private readonly ajv = new Ajv2020({ strict: true, allErrors: true, formats: { binary: true } });
  private readonly compiled = new Map<unknown, ReturnType<Ajv2020['compile']>>();

  constructor(raw: Json) {
    this.document = dereference(raw);
  }

  /** Every schema of the document, compiled: throws if one is not valid JSON Schema 2020-12. */
  compileAll(): number {
    let count = 0;
    for (const operation of this.operations()) {
      const body = operation.requestBody?.content?.['application/json']?.schema;
      if (body) {
        this.validator(body);
        count++;
      }
      for (const response of Object.values<Json>(operation.responses)) {
        const schemas = [
          ...Object.values<Json>(response.content ?? {}).flatMap((media) => (media.schema ? [media.schema] : [])),
          ...Object.values<Json>(response.headers ?? {}).map((header) => header.schema),
        ];
        for (const schema of schemas) this.validator(schema);
        count += schemas.length;
      }
    }
    return count;
  }

  operations(): Json[] {
    return Object.values<Json>(this.document.paths).flatMap((item) => Object.values<Json>(item));
  }

  operation(method: string, path: string): Json {
    const operation = this.document.paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${method} ${path} is not in the document`);
    return operation;
  }

  /** Problems of one answer; empty when it conforms. */
  problems(method: string, path: string, answer: Answer): string[] {
    const problems: string[] = [];
    const response = this.operation(method, path).responses[String(answer.status)] as Json | undefined;
    if (!response) return [`status ${answer.status} is not described for ${method} ${path}`];
    for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
      const value = answer.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`header ${name} is missing`);
        continue;
      }
      const type = header.schema?.type;
      const typed = type === 'integer' || type === 'number' ? (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value) : value;
      const validate = this.validator(header.schema);
      if (!validate(typed)) problems.push(`header ${name}: ${JSON.stringify(validate.errors)} (value ${JSON.stringify(value)})`);
    }
    const mediaType = (answer.headers['content-type'] ?? '').split(';')[0]!.trim();
    const media = response.content?.[mediaType] as Json | undefined;
    if (response.content && !media) {
      problems.push(`content type ${mediaType} is not one of ${Object.keys(response.content).join(', ')}`);
    } else if (mediaType === 'application/json') {
      let body: unknown;
      try {
        body = JSON.parse(answer.body.toString('utf8'));
      } catch {
        problems.push('body is not JSON');
      }
      const validate = this.validator(media!.schema);
      if (body !== undefined && !validate(body)) problems.push(`body: ${JSON.stringify(validate.errors)}`);
    } else if (mediaType === 'application/pdf') {
      if (answer.body.subarray(0, 5).toString('latin1') !== '%PDF-') problems.push('body is not a PDF');
    }
    return problems;
  }

  private validator(schema: unknown) {
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(schema as Json);
      this.compiled.set(schema, validate);
    }
    return validate;
  }
}

/**
 * One HTTP exchange with node:http. With `headersOnly`, the request head is
 * sent (its Content-Length may promise a body) and the body is never
 * written: for answers given before the body is read.
 */
export function exchange(
  url: string,
  options: { method?: string; headers?: Record<string, string | number>; body?: string | Buffer; headersOnly?: boolean },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({ status: res.statusCode!, headers, body: Buffer.concat(chunks) });
        if (options.headersOnly) req.destroy();
      });
    });
    req.on('error', reject);
    if (options.headersOnly) req.flushHeaders();
    else req.end(options.body);
  });
}
