import path from 'node:path';
import { indexCorpus } from '../../activities/search/index.js';
import { getPool } from '../../activities/store/db.js';
import { loadEnvironment } from '../../schemas/environment.js';
import { UsageError } from '../usage.js';
import type { Command } from './command.js';

/**
 * `mockworld search-index <corpus.jsonl> [--collection NAME]`: indexes documents for the offline
 * search tool.
 */
export const searchIndexCommand: Command = {
  name: 'search-index',
  async run({ values, args, print }) {
    const file = args[0];
    if (!file) throw new UsageError('mockworld search-index needs a corpus JSONL file');
    const collection = values.collection ?? path.basename(file, path.extname(file));
    const result = await indexCorpus(getPool(loadEnvironment().DATABASE_URL), collection, path.resolve(file));
    print(
      result.changed
        ? `${result.documents} documents indexed as collection ${collection}: search: { kind: offline, collection: ${collection} }`
        : `collection ${collection} already holds this file (${result.documents} documents); nothing written`,
      result,
    );
    return 0;
  },
};
