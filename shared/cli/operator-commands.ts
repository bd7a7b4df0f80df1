import path from 'node:path';
import { CatalogError, loadCatalog } from '../catalog/load-catalog';
import { resolveSecret } from '../runtime/secret';
import { DEFAULT_OPERATOR_TOKEN_TTL_SECONDS, signOperatorToken } from '../auth/operator-tokens';
import { integer, str, type Command } from './command';

/** The commands that need no database: operator tokens and the catalog check. */
export const OPERATOR_COMMANDS: Command[] = [
  {
    group: 'operator',
    action: 'token issue',
    usage: 'operator token issue [--ttl SECONDS]',
    summary: `issue an operator token: it opens the queue dashboard and nothing in the customer API (default lifetime ${DEFAULT_OPERATOR_TOKEN_TTL_SECONDS / 3600} hours)`,
    flags: ['ttl'],
    required: [],
    needsDb: false,
    prepare(v, ctx) {
      const ttl = integer(v, 'ttl', 1);
      return async () => {
        const token = signOperatorToken(resolveSecret(ctx.config), ttl);
        return { json: { token }, text: `operator token: ${token}` };
      };
    },
  },
  {
    group: 'catalog',
    action: 'check',
    usage: 'catalog check [--file F]',
    summary: 'validate the catalog file (default: $SWITCHYARD_CATALOG or config/catalog.json)',
    flags: ['file'],
    required: [],
    needsDb: false,
    prepare(v, ctx) {
      const given = str(v, 'file');
      const file = given ? path.resolve(given) : ctx.config.catalogPath;
      return async () => {
        let catalog;
        try {
          catalog = loadCatalog(file, ctx.env);
        } catch (e) {
          if (e instanceof CatalogError) throw new CatalogCheckError(file, e.problems);
          throw e;
        }
        const models = Object.keys(catalog.models).length;
        const providers = Object.keys(catalog.providers).length;
        return {
          json: { ok: true, models, providers },
          text: `catalog ${path.relative(process.cwd(), file) || file} is valid: ${models} model(s), ${providers} provider(s)`,
        };
      };
    },
  },
];

export class CatalogCheckError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`catalog ${file} refused`);
  }
}
