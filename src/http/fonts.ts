/**
 * GET /v1/fonts: every family a template can name, its styles and weights,
 * and which names are aliases of which font, as the workers loaded them;
 * a family built into one Typst version only names it (`typst`).
 */
import type { FastifyInstance } from 'fastify';
import type { FontFamilyInfo } from '../render/fonts/types.js';

export interface FontSource {
  fonts(): FontFamilyInfo[];
}

export function fontsRoute(app: FastifyInstance, source: FontSource): void {
  app.get('/v1/fonts', async () => ({
    families: source.fonts().map(({ family, aliasOf, styles, source: origin, typst }) => ({
      family,
      aliasOf,
      styles,
      source: origin,
      ...(typst ? { typst } : {}),
    })),
  }));
}
